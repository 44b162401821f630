"""Voter changes on the leader (KIP-853: AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter,
planned by ``voter_changes``), the voter set it counts, and DescribeQuorum."""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from strom.raft import messages, transitions, voter_changes
from strom.raft.channel import InboundRequest
from strom.raft.leader_state import LeaderState
from strom.raft.node import QuorumNode
from strom.raft.quorum_state import Role
from strom.raft.voter_changes import PendingChange, VoterChangeError

log = logging.getLogger(__name__)


def leader_voters(node: QuorumNode, leader: LeaderState, now: int) -> None:
    """The leader counts the voter set of its flushed log towards the high watermark (as
    Kafka's leader does: a set whose record could still be lost in a crash decides
    nothing)."""
    voters = node.voter_ids(node.voter_history.at(node.log.flushed_end_offset))
    if voters != leader.voters.keys() and leader.set_voters(voters, now):
        node.high_watermark = leader.high_watermark


def on_voter_change(
    node: QuorumNode, request: InboundRequest, api_key: int, body: Any, now: int
) -> ResponsePayload | None:
    if body.cluster_id not in (None, node.cluster_id):
        return voter_changes.answer(
            api_key, ErrorCode.inconsistent_cluster_id, None, node.leader_and_epoch
        )
    leader = node.leader_state
    if node.role is not Role.LEADER or leader is None or node.shutting_down:
        return voter_changes.answer(
            api_key,
            ErrorCode.not_leader_or_follower,
            f"node {node.node_id} does not lead the quorum",
            node.leader_and_epoch,
        )
    history = node.voter_history
    context = voter_changes.ChangeContext(
        leader=leader,
        voters=history.latest(),
        dynamic=history.dynamic,
        high_watermark=node.high_watermark,
        last_change_offset=history.last_change_offset,
        change_pending=node.pending_change is not None,
        wall_ms=node.clock.now_ms(),
        caught_up_ms=node.config.fetch_timeout_ms,
    )
    try:
        voters = voter_changes.plan_change(api_key, body, context)
    except VoterChangeError as error:
        return voter_changes.answer(api_key, error.code, str(error), node.leader_and_epoch)
    timeout = getattr(body, "timeout", None)
    wait_ms = int(timeout.total_seconds() * 1000) if timeout is not None else 0
    offset = node.append_voters(voters, now)
    log.info("node %d: voters %s from offset %d", node.node_id, sorted(voters.ids), offset)
    node.pending_change = PendingChange(
        ref=request.ref,
        api_key=api_key,
        offset=offset,
        deadline_ms=now + (wait_ms if wait_ms > 0 else node.config.request_timeout_ms),
    )
    return None


def poll_voter_change(node: QuorumNode, now: int) -> None:
    """Answer a committed (or timed-out) change; a leader whose removal is committed
    resigns."""
    committed = node.high_watermark if node.high_watermark is not None else 0
    pending = node.pending_change
    if pending is not None and committed > pending.offset:
        node.answer_change(ErrorCode.none, None)
    elif pending is not None and now >= pending.deadline_ms:
        node.answer_change(
            ErrorCode.request_timed_out, "the voter change was not committed in time"
        )
    last_change = node.voter_history.last_change_offset
    removed = node.node_id not in node.voters
    if removed and last_change is not None and committed > last_change:
        log.info("node %d: its removal from the voters is committed", node.node_id)
        transitions.resign(node)


def describe_quorum(node: QuorumNode) -> ResponsePayload:
    leader = node.leader_state
    if node.role is not Role.LEADER or leader is None:
        return messages.describe_quorum_answer(
            node.leader_and_epoch,
            high_watermark=None,
            error_message=f"node {node.node_id} does not lead the quorum",
        )
    leader.update_local(node.log.flushed_end_offset, node.clock.now_ms())
    return messages.describe_quorum_answer(
        node.leader_and_epoch,
        high_watermark=node.high_watermark,
        voters=leader.voters.values(),
        observers=leader.observers.values(),
        voter_set=node.voter_history.latest(),
    )
