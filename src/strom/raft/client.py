"""The quorum's state machine (Kafka's ``KafkaRaftClient``), without I/O.

Inputs: :meth:`RaftClient.poll` (time passes: the ``Clock`` says how much), requests and
responses (``handle_request`` / ``handle_response``), appends and snapshots from the state
machine above. Outputs: requests and answers handed to the ``Channel``, writes to the
``RaftLog``, and calls to the registered ``RaftListener``s: committed batches, loaded snapshots,
leader changes. Nothing here blocks, sleeps or flushes: see NOTES.md for the shell's part.

The RPCs are Kafka's: Vote, BeginQuorumEpoch, EndQuorumEpoch (v0), Fetch (v12) and
FetchSnapshot (v0) on partition ``__cluster_metadata-0``, DescribeQuorum (answered as v2), and
KIP-853's AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter (``voter_changes``): the voter set
is the static one, or the latest Voters record in the log (``voters``).

``RaftClient`` is the facade: its state is ``node.QuorumNode``'s, and each part acting on it is
a module of its own (``transitions``, ``elections``, ``epochs``, ``leader``, ``follower``,
``membership``); here are the entry points, the poll's timers and the dispatch by API key.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

from kio.static.protocol import ResponsePayload

from strom.raft import (
    elections,
    epochs,
    follower,
    leader,
    membership,
    messages,
    transitions,
    voter_changes,
)
from strom.raft.batches import (
    data_batch,
)
from strom.raft.channel import InboundRequest, InboundResponse
from strom.raft.listeners import ListenerContext, RaftListener
from strom.raft.log import OffsetAndEpoch
from strom.raft.messages import LeaderAndEpoch
from strom.raft.node import QuorumNode
from strom.raft.quorum_state import Role, Trigger
from strom.raft.snapshot_transfer import serve_snapshot_chunk
from strom.raft.snapshots import SnapshotWriter

__all__ = ["NotLeaderError", "RaftClient"]

log = logging.getLogger(__name__)

_IDLE_POLL_MS: Final = 1000
_ELECTION_TIMER_ROLES: Final = frozenset({Role.UNATTACHED, Role.CANDIDATE, Role.RESIGNED})
"""The roles whose poll acts on the election deadline (a voter's): the only ones it wakes."""


class NotLeaderError(Exception):
    """An append or a snapshot asked of a node that does not lead that epoch."""


class RaftClient(QuorumNode):
    """One node of the quorum (see the module doc and NOTES.md): its state (``QuorumNode``) and
    the entry points of the shell and the state machine above."""

    def restore(self) -> None:
        super().restore()
        if self.voters == {self.node_id}:  # the only voter elects itself at once
            trigger = (
                Trigger.FETCH_TIMEOUT if self.role is Role.FOLLOWER else Trigger.ELECTION_TIMEOUT
            )
            transitions.become_candidate(self, self.clock.monotonic_ms(), trigger=trigger)

    # --- what the shell and the state machine see ---------------------------------------------

    @property
    def epoch_start_offset(self) -> int | None:
        """The offset of this leader's first record of its epoch (None unless leading)."""
        leader = self.leader_state
        return leader.epoch_start_offset if leader is not None else None

    def register(self, listener: RaftListener) -> None:
        self.listeners.append(ListenerContext(listener))

    def append(self, records: Sequence[bytes], *, epoch: int) -> int:
        """Append records as one batch of ``epoch``; the offset of the last one."""
        if self.role is not Role.LEADER or epoch != self.epoch or self.shutting_down:
            raise NotLeaderError(f"node {self.node_id} does not lead epoch {epoch}")
        if not records:
            raise ValueError("nothing to append")
        base = self.log.end_offset
        self.log.append(
            data_batch(records, base_offset=base, epoch=epoch, timestamp=self.clock.now_ms())
        )
        return base + len(records) - 1

    def create_snapshot(self, offset: int, epoch: int) -> SnapshotWriter | None:
        """A writer for the snapshot of the state below ``offset`` (committed, or None when it
        is not, or a snapshot there exists already)."""
        if self.high_watermark is None or offset > self.high_watermark:
            return None
        latest = self.log.latest_snapshot()
        if latest is not None and latest.offset >= offset:
            return None
        history = self.voter_history
        return SnapshotWriter(
            OffsetAndEpoch(offset, epoch),
            timestamp=self.clock.now_ms(),
            on_frozen=self._frozen,
            voters=history.at(offset) if history.dynamic else None,
        )

    def _frozen(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        self.log.store_snapshot(snapshot, data)
        self.log.delete_before_snapshot(snapshot)

    def resign(self, epoch: int) -> None:
        if self.role is Role.LEADER and epoch == self.epoch:
            transitions.resign(self)

    def begin_shutdown(self) -> None:
        """Stop leading (tell the others), accept no more appends."""
        self.shutting_down = True
        if self.role is Role.LEADER:
            transitions.resign(self)

    def connection_closed(self, node: int) -> None:
        """The connection to ``node`` closed (its process is gone, or it closed it): see
        ``elections.connection_closed``."""
        elections.connection_closed(self, node)

    # --- poll ----------------------------------------------------------------------------------

    def poll(self) -> int:
        """Act on what is due; the milliseconds until the next poll is due."""
        now = self.clock.monotonic_ms()
        for peer in self.requests.expire(now):
            follower.request_failed(self, peer, now)
        for _ in range(4):  # a new role acts in the same poll (a new candidate asks at once)
            state = (self.role, self.epoch)
            self._poll_role(now)
            if (self.role, self.epoch) == state:
                break
        self._deliver()
        return self._until_next(self.clock.monotonic_ms())

    def _poll_role(self, now: int) -> None:
        role = self.role
        if role is Role.LEADER:
            leader.poll_leader(self, now)
        elif role is Role.CANDIDATE:
            elections.poll_candidate(self, now)
        elif role is Role.FOLLOWER:
            follower.poll_follower(self, now)
        elif role is Role.RESIGNED:
            epochs.poll_resigned(self, now)
        else:
            elections.poll_unattached(self, now)

    def _until_next(self, now: int) -> int:
        deadlines = [self.fetch_deadline]
        if self.prospect is not None and now < self.prospect.start_ms:
            deadlines.append(self.prospect.start_ms)
        if self.is_voter and self.role in _ELECTION_TIMER_ROLES:
            # Only they act on it: a follower started with one (a restart) that has passed
            # must not keep the poll awake while it goes on following.
            deadlines.append(self.election_deadline)
        if self.backoff_deadline is not None:
            deadlines.append(self.backoff_deadline)
        if self.leader_state is not None and self.leader_state.check_quorum_due_ms is not None:
            deadlines.append(self.leader_state.check_quorum_due_ms)
        deadlines += [parked.deadline_ms for parked in self.parked]
        if self.pending_change is not None:
            deadlines.append(self.pending_change.deadline_ms)
        requests = self.requests.next_deadline_ms()
        if requests is not None:
            deadlines.append(requests)
        wait = min(deadlines) - now
        return max(0, min(wait, _IDLE_POLL_MS))

    # --- delivering commits --------------------------------------------------------------------

    def _deliver(self) -> None:
        current = self.leader_and_epoch
        if self.role is Role.RESIGNED:
            current = LeaderAndEpoch(None, self.epoch)
        for context in self.listeners:
            context.catch_up(self.log, self.high_watermark)
            context.notify(current, self.epoch_start_offset)

    # --- requests and responses, by API key -----------------------------------------------------

    def handle_request(self, request: InboundRequest) -> None:
        now = self.clock.monotonic_ms()
        body: Any = request.body
        api_key = int(body.__api_key__)
        answer: ResponsePayload | None
        if api_key in (52, 53, 54, 1) and body.cluster_id not in (None, self.cluster_id):
            answer = messages.wrong_cluster(api_key)
        elif api_key == 52 and messages.is_pre_vote(body):
            answer = elections.on_pre_vote(self, body, now)
        elif api_key == 52:
            answer = elections.on_vote(self, body, now)
        elif api_key == 53:
            answer = epochs.on_begin(self, body, now)
        elif api_key == 54:
            answer = epochs.on_end(self, body, now)
        elif api_key == 1:
            answer = leader.on_fetch(self, request, body, now)
        elif api_key == 59:
            answer = serve_snapshot_chunk(
                self.log,
                body,
                self.leader_and_epoch,
                leading=self.role is Role.LEADER,
                max_bytes=self.config.snapshot_chunk_bytes,
            )
        elif api_key == 55:
            answer = membership.describe_quorum(self)
        elif api_key in (
            voter_changes.ADD_VOTER,
            voter_changes.REMOVE_VOTER,
            voter_changes.UPDATE_VOTER,
        ):
            answer = membership.on_voter_change(self, request, api_key, body, now)
        else:
            raise ValueError(f"the quorum does not serve API key {api_key}")
        if answer is not None:
            self.channel.respond(request.ref, answer)

    def handle_response(self, response: InboundResponse) -> None:
        now = self.clock.monotonic_ms()
        failed = response.body is None or getattr(response.body, "error_code", 0) != 0
        if not self.requests.received(response.source, response.request, now, failed=failed):
            return
        if response.body is None:
            follower.request_failed(self, response.source, now)
            return
        body: Any = response.body
        if failed or not getattr(body, "topics", getattr(body, "responses", None)):
            return
        api_key = int(body.__api_key__)
        if api_key == 52 and messages.is_pre_vote(response.request):
            elections.on_pre_vote_answer(self, response.source, body, now)
        elif api_key == 52:
            elections.on_vote_answer(self, response.source, body, now)
        elif api_key == 53:
            epochs.on_begin_answer(self, response.source, body, now)
        elif api_key == 54:
            epochs.on_end_answer(self, response.source, body, now)
        elif api_key == 1:
            follower.on_fetch_answer(self, response.source, body, now)
        elif api_key == 59:
            follower.on_snapshot_answer(self, response.source, body, now)
