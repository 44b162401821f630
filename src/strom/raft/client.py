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

This class is the facade: the state lives in ``node.QuorumNode``, and each part acting on it in
a module of its own (``transitions``, ``elections``, ``epochs``, ``leader``, ``follower``,
``membership``); here are the entry points, the poll's timers and the dispatch by API key.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection, Sequence
from typing import Any, Final

from kio.static.protocol import ResponsePayload

from strom.common import Clock
from strom.common.randomness import RandomSource
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
from strom.raft.channel import Channel, InboundRequest, InboundResponse
from strom.raft.config import RaftConfig
from strom.raft.listeners import ListenerContext, RaftListener
from strom.raft.log import OffsetAndEpoch, RaftLog
from strom.raft.messages import LeaderAndEpoch
from strom.raft.node import QuorumNode
from strom.raft.quorum_state import QuorumStateStore, Role
from strom.raft.snapshot_transfer import serve_snapshot_chunk
from strom.raft.snapshots import SnapshotWriter
from strom.raft.voters import VoterSetHistory

__all__ = ["NotLeaderError", "RaftClient"]

log = logging.getLogger(__name__)

_IDLE_POLL_MS: Final = 1000
_ELECTION_TIMER_ROLES: Final = frozenset({Role.UNATTACHED, Role.CANDIDATE, Role.RESIGNED})
"""The roles whose poll acts on the election deadline (a voter's): the only ones it wakes."""


class NotLeaderError(Exception):
    """An append or a snapshot asked of a node that does not lead that epoch."""


class RaftClient:
    """One node of the quorum (see the module doc and NOTES.md)."""

    def __init__(
        self,
        *,
        node_id: int,
        voters: Collection[int],
        cluster_id: str,
        log: RaftLog,
        state_store: QuorumStateStore,
        channel: Channel,
        clock: Clock,
        random: RandomSource,
        config: RaftConfig,
        directory_id: uuid.UUID | None = None,
        bootstrap: Collection[int] = (),
    ) -> None:
        """``voters``: the static voters (``kraft.version`` 0; a Voters record in the log or its
        snapshot overrides them); ``bootstrap``: whom to ask who leads while this node knows of
        no voter (``controller.quorum.bootstrap.servers``)."""
        self.state = QuorumNode(
            node_id=node_id,
            voters=voters,
            cluster_id=cluster_id,
            log=log,
            state_store=state_store,
            channel=channel,
            clock=clock,
            random=random,
            config=config,
            directory_id=directory_id,
            bootstrap=bootstrap,
        )
        self._listeners: list[ListenerContext] = []
        transitions.initialize(self.state)

    # --- what the shell and the state machine see ---------------------------------------------

    @property
    def node_id(self) -> int:
        return self.state.node_id

    @property
    def cluster_id(self) -> str:
        return self.state.cluster_id

    @property
    def log(self) -> RaftLog:
        return self.state.log

    @property
    def config(self) -> RaftConfig:
        return self.state.config

    @config.setter
    def config(self, config: RaftConfig) -> None:
        self.state.config = config

    @property
    def voters(self) -> frozenset[int]:
        return self.state.voters

    @property
    def voter_history(self) -> VoterSetHistory:
        return self.state.voter_history

    @property
    def role(self) -> Role:
        return self.state.role

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return self.state.leader_and_epoch

    @property
    def high_watermark(self) -> int | None:
        return self.state.high_watermark

    @property
    def is_voter(self) -> bool:
        return self.state.is_voter

    @property
    def epoch_start_offset(self) -> int | None:
        """The offset of this leader's first record of its epoch (None unless leading)."""
        leader = self.state.leader_state
        return leader.epoch_start_offset if leader is not None else None

    def register(self, listener: RaftListener) -> None:
        self._listeners.append(ListenerContext(listener))

    def append(self, records: Sequence[bytes], *, epoch: int) -> int:
        """Append records as one batch of ``epoch``; the offset of the last one."""
        node = self.state
        if node.role is not Role.LEADER or epoch != node.epoch or node.shutting_down:
            raise NotLeaderError(f"node {node.node_id} does not lead epoch {epoch}")
        if not records:
            raise ValueError("nothing to append")
        base = node.log.end_offset
        node.log.append(
            data_batch(records, base_offset=base, epoch=epoch, timestamp=node.clock.now_ms())
        )
        return base + len(records) - 1

    def create_snapshot(self, offset: int, epoch: int) -> SnapshotWriter | None:
        """A writer for the snapshot of the state below ``offset`` (committed, or None when it
        is not, or a snapshot there exists already)."""
        node = self.state
        if node.high_watermark is None or offset > node.high_watermark:
            return None
        latest = node.log.latest_snapshot()
        if latest is not None and latest.offset >= offset:
            return None
        history = node.voter_history
        return SnapshotWriter(
            OffsetAndEpoch(offset, epoch),
            timestamp=node.clock.now_ms(),
            on_frozen=self._frozen,
            voters=history.at(offset) if history.dynamic else None,
        )

    def _frozen(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        self.state.log.store_snapshot(snapshot, data)
        self.state.log.delete_before_snapshot(snapshot)

    def resign(self, epoch: int) -> None:
        if self.state.role is Role.LEADER and epoch == self.state.epoch:
            transitions.resign(self.state)

    def begin_shutdown(self) -> None:
        """Stop leading (tell the others), accept no more appends."""
        self.state.shutting_down = True
        if self.state.role is Role.LEADER:
            transitions.resign(self.state)

    def connection_closed(self, node: int) -> None:
        """The connection to ``node`` closed (its process is gone, or it closed it): see
        ``elections.connection_closed``."""
        elections.connection_closed(self.state, node)

    # --- poll ----------------------------------------------------------------------------------

    def poll(self) -> int:
        """Act on what is due; the milliseconds until the next poll is due."""
        node = self.state
        now = node.clock.monotonic_ms()
        for peer in node.requests.expire(now):
            follower.request_failed(node, peer, now)
        for _ in range(4):  # a new role acts in the same poll (a new candidate asks at once)
            state = (node.role, node.epoch)
            self._poll_role(now)
            if (node.role, node.epoch) == state:
                break
        self._deliver()
        return self._until_next(node.clock.monotonic_ms())

    def _poll_role(self, now: int) -> None:
        node = self.state
        role = node.role
        if role is Role.LEADER:
            leader.poll_leader(node, now)
        elif role is Role.CANDIDATE:
            elections.poll_candidate(node, now)
        elif role is Role.FOLLOWER:
            follower.poll_follower(node, now)
        elif role is Role.RESIGNED:
            epochs.poll_resigned(node, now)
        else:
            elections.poll_unattached(node, now)

    def _until_next(self, now: int) -> int:
        node = self.state
        deadlines = [node.fetch_deadline]
        if node.prospect is not None and now < node.prospect.start_ms:
            deadlines.append(node.prospect.start_ms)
        if node.is_voter and node.role in _ELECTION_TIMER_ROLES:
            # Only they act on it: a follower started with one (a restart) that has passed
            # must not keep the poll awake while it goes on following.
            deadlines.append(node.election_deadline)
        if node.backoff_deadline is not None:
            deadlines.append(node.backoff_deadline)
        if node.leader_state is not None and node.leader_state.check_quorum_due_ms is not None:
            deadlines.append(node.leader_state.check_quorum_due_ms)
        deadlines += [parked.deadline_ms for parked in node.parked]
        if node.pending_change is not None:
            deadlines.append(node.pending_change.deadline_ms)
        requests = node.requests.next_deadline_ms()
        if requests is not None:
            deadlines.append(requests)
        wait = min(deadlines) - now
        return max(0, min(wait, _IDLE_POLL_MS))

    # --- delivering commits --------------------------------------------------------------------

    def _deliver(self) -> None:
        node = self.state
        current = node.leader_and_epoch
        if node.role is Role.RESIGNED:
            current = LeaderAndEpoch(None, node.epoch)
        for context in self._listeners:
            context.catch_up(node.log, node.high_watermark)
            context.notify(current, self.epoch_start_offset)

    # --- requests and responses, by API key -----------------------------------------------------

    def handle_request(self, request: InboundRequest) -> None:
        node = self.state
        now = node.clock.monotonic_ms()
        body: Any = request.body
        api_key = int(body.__api_key__)
        answer: ResponsePayload | None
        if api_key in (52, 53, 54, 1) and body.cluster_id not in (None, node.cluster_id):
            answer = messages.wrong_cluster(api_key)
        elif api_key == 52 and messages.is_pre_vote(body):
            answer = elections.on_pre_vote(node, body, now)
        elif api_key == 52:
            answer = elections.on_vote(node, body, now)
        elif api_key == 53:
            answer = epochs.on_begin(node, body, now)
        elif api_key == 54:
            answer = epochs.on_end(node, body, now)
        elif api_key == 1:
            answer = leader.on_fetch(node, request, body, now)
        elif api_key == 59:
            answer = serve_snapshot_chunk(
                node.log,
                body,
                node.leader_and_epoch,
                leading=node.role is Role.LEADER,
                max_bytes=node.config.snapshot_chunk_bytes,
            )
        elif api_key == 55:
            answer = membership.describe_quorum(node)
        elif api_key in (
            voter_changes.ADD_VOTER,
            voter_changes.REMOVE_VOTER,
            voter_changes.UPDATE_VOTER,
        ):
            answer = membership.on_voter_change(node, request, api_key, body, now)
        else:
            raise ValueError(f"the quorum does not serve API key {api_key}")
        if answer is not None:
            node.channel.respond(request.ref, answer)

    def handle_response(self, response: InboundResponse) -> None:
        node = self.state
        now = node.clock.monotonic_ms()
        failed = response.body is None or getattr(response.body, "error_code", 0) != 0
        if not node.requests.received(response.source, response.request, now, failed=failed):
            return
        if response.body is None:
            follower.request_failed(node, response.source, now)
            return
        body: Any = response.body
        if failed or not getattr(body, "topics", getattr(body, "responses", None)):
            return
        api_key = int(body.__api_key__)
        if api_key == 52 and messages.is_pre_vote(response.request):
            elections.on_pre_vote_answer(node, response.source, body, now)
        elif api_key == 52:
            elections.on_vote_answer(node, response.source, body, now)
        elif api_key == 53:
            epochs.on_begin_answer(node, response.source, body, now)
        elif api_key == 54:
            epochs.on_end_answer(node, response.source, body, now)
        elif api_key == 1:
            follower.on_fetch_answer(node, response.source, body, now)
        elif api_key == 59:
            follower.on_snapshot_answer(node, response.source, body, now)
