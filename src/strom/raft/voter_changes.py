"""AddRaftVoter (API 80), RemoveRaftVoter (81) and UpdateRaftVoter (82) on the leader (KIP-853,
Kafka's ``AddVoterHandler``, ``RemoveVoterHandler`` and ``UpdateVoterHandler``).

The leader changes the voter set one voter at a time: it takes a change only once it has
committed a record of its own epoch and the previous change is committed, and appends the new
set as a Voters control record, which takes effect at once (on every replica, as soon as the
record is in its log). The request is answered when the record is committed, or with an error
when the leader loses its epoch or the request's time runs out first.

A voter is added only when it already replicates the log as an observer and has caught up with
the leader's log end within the fetch timeout; a voter may remove itself, the leader included
(it leads until the removal is committed, then resigns).
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i32Timedelta
from kio.static.protocol import ResponsePayload

from strom.raft.leader_state import LeaderState
from strom.raft.messages import LeaderAndEpoch
from strom.raft.voters import Endpoint, VoterNode, VoterSet

__all__ = [
    "ADD_VOTER",
    "REMOVE_VOTER",
    "UPDATE_VOTER",
    "ChangeContext",
    "PendingChange",
    "VoterChangeError",
    "answer",
    "plan_change",
]

ADD_VOTER = 80
REMOVE_VOTER = 81
UPDATE_VOTER = 82
_ZERO = i32Timedelta.parse(datetime.timedelta(0))


class VoterChangeError(Exception):
    """A change the leader refuses: the error code and a one-line message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeContext:
    """What the leader knows when a change arrives."""

    leader: LeaderState
    voters: VoterSet
    dynamic: bool
    high_watermark: int | None
    last_change_offset: int | None
    change_pending: bool
    wall_ms: int
    caught_up_ms: int
    """How recently an observer must have reached the leader's log end to become a voter."""


@dataclass(slots=True)
class PendingChange:
    """An appended change whose answer waits for the record to be committed."""

    ref: object
    api_key: int
    offset: int
    deadline_ms: int


def _endpoints(listeners: Any) -> tuple[Endpoint, ...]:
    return tuple(Endpoint(str(e.name), str(e.host), int(e.port)) for e in listeners)


def _voter(voters: VoterSet, node_id: int, directory_id: uuid.UUID | None) -> VoterNode:
    node = voters.get(node_id)
    if node is None or (
        directory_id is not None
        and node.directory_id is not None
        and node.directory_id != directory_id
    ):
        raise VoterChangeError(
            ErrorCode.voter_not_found,
            f"voter {node_id} (directory {directory_id}) is not in the voter set",
        )
    return node


def plan_change(api_key: int, body: Any, context: ChangeContext) -> VoterSet:
    """The voter set the request asks for, or :class:`VoterChangeError` (Kafka's checks in
    Kafka's order: the request itself, a change in flight, ``kraft.version``, the voter)."""
    voter_id = int(body.voter_id)
    directory_id = body.voter_directory_id
    if api_key != REMOVE_VOTER:
        if directory_id is None or directory_id.int == 0:
            raise VoterChangeError(
                ErrorCode.invalid_request, f"voter {voter_id} needs its directory id"
            )
        if not body.listeners:
            raise VoterChangeError(ErrorCode.invalid_request, f"voter {voter_id} has no listeners")
    leader = context.leader
    if (
        context.change_pending
        or context.high_watermark is None
        or context.high_watermark <= leader.epoch_start_offset
        or (
            context.last_change_offset is not None
            and context.last_change_offset >= context.high_watermark
        )
    ):
        raise VoterChangeError(
            ErrorCode.request_timed_out,
            "the previous voter change (or the leader's first commit) is not committed yet",
        )
    if not context.dynamic:
        raise VoterChangeError(
            ErrorCode.unsupported_version,
            "the voters are static (controller.quorum.voters, kraft.version 0); format the "
            "controllers with --standalone or --initial-controllers to change them",
        )
    voters = context.voters
    if api_key == REMOVE_VOTER:
        _voter(voters, voter_id, directory_id)
        if len(voters.nodes) == 1:
            raise VoterChangeError(
                ErrorCode.invalid_request, f"voter {voter_id} is the only voter left"
            )
        return voters.without(voter_id)
    endpoints = _endpoints(body.listeners)
    if api_key == UPDATE_VOTER:
        _voter(voters, voter_id, directory_id)
        return voters.with_endpoints(voter_id, endpoints)
    if voter_id in voters.ids:
        raise VoterChangeError(ErrorCode.duplicate_voter, f"{voter_id} is already a voter")
    observer = leader.observers.get(voter_id)
    if observer is None or observer.last_caught_up_ms < context.wall_ms - context.caught_up_ms:
        raise VoterChangeError(
            ErrorCode.request_timed_out,
            f"node {voter_id} has not caught up with the leader's log as an observer",
        )
    return voters.with_voter(VoterNode(voter_id, directory_id, endpoints))


def answer(
    api_key: int, error: ErrorCode, message: str | None, leader: LeaderAndEpoch
) -> ResponsePayload:
    """The response to a change request (UpdateRaftVoter's names the current leader); each
    schema is imported on its first answer."""
    if api_key == ADD_VOTER:
        from kio.schema.add_raft_voter.v0.response import AddRaftVoterResponse  # noqa: PLC0415

        return AddRaftVoterResponse(throttle_time=_ZERO, error_code=error, error_message=message)
    if api_key == REMOVE_VOTER:
        from kio.schema.remove_raft_voter.v0 import response as remove  # noqa: PLC0415

        return remove.RemoveRaftVoterResponse(
            throttle_time=_ZERO, error_code=error, error_message=message
        )
    from kio.schema.update_raft_voter.v0 import response as update_response  # noqa: PLC0415

    return update_response.UpdateRaftVoterResponse(
        throttle_time=_ZERO,
        error_code=error,
        current_leader=update_response.CurrentLeader(
            leader_id=leader.leader, leader_epoch=i32(leader.epoch), host="", port=i32(-1)
        ),
    )
