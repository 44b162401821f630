"""One quorum node's state: what every part of the client reads and changes.

:class:`QuorumNode` holds the role and election state, the timers (plain deadlines on the
``Clock``), the requests in flight, the voter set, a leader's state and parked fetches, and the
pieces handed in (log, channel, clock, randomness, the election state's store). The parts that
act on it are functions of their own modules: ``transitions`` (the roles), ``elections`` (Vote
and pre-vote), ``epochs`` (BeginQuorumEpoch, EndQuorumEpoch), ``leader`` and ``follower`` (the
two sides of Fetch), ``membership`` (voter changes, DescribeQuorum). ``client.RaftClient`` is
this state with the entry points of the shell and the state machine above."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, Final

from kio.schema.errors import ErrorCode
from kio.static.protocol import RequestPayload, ResponsePayload

from strom.common import Clock
from strom.common.randomness import RandomSource
from strom.raft import messages, voter_changes
from strom.raft.batches import ControlType, RaftBatch, control_batch
from strom.raft.channel import Channel, InboundRequest, OutboundRequest
from strom.raft.config import RaftConfig
from strom.raft.leader_state import LeaderState
from strom.raft.listeners import ListenerContext
from strom.raft.log import OffsetAndEpoch, RaftLog
from strom.raft.messages import LeaderAndEpoch
from strom.raft.pre_vote import Prospect
from strom.raft.quorum_state import ElectionState, QuorumStateStore, Role
from strom.raft.requests import RequestManager
from strom.raft.snapshot_transfer import SnapshotDownload
from strom.raft.snapshots import SnapshotReader
from strom.raft.voter_changes import PendingChange
from strom.raft.voters import VoterSet, VoterSetHistory, read_voters_record

__all__ = ["NO_TIMEOUT", "ParkedFetch", "QuorumNode"]

log = logging.getLogger(__name__)

NO_TIMEOUT: Final = 2**62
"""A deadline that never comes."""


@dataclass(slots=True)
class ParkedFetch:
    """A leader's fetch with nothing to read yet, waiting for records, a new high watermark or
    its deadline."""

    request: InboundRequest
    replica_id: int
    fetch_offset: int
    max_bytes: int
    deadline_ms: int
    high_watermark: int | None


class QuorumNode:
    """The state of one node of the quorum (see the module doc)."""

    role: Role
    election: ElectionState
    """The role and the election state, as ``restore`` finds them (``transitions`` moves them)."""

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
        self.node_id = node_id
        self.directory_id = directory_id
        self.voter_history = VoterSetHistory(VoterSet.of_ids(voters))
        self.voters: frozenset[int] = frozenset()
        self.bootstrap = frozenset(bootstrap)
        self.cluster_id = cluster_id
        self.log = log
        self.store = state_store
        self.channel = channel
        self.clock = clock
        self.random = random
        self.config = config
        self.requests = RequestManager(
            request_timeout_ms=config.request_timeout_ms,
            retry_backoff_ms=config.retry_backoff_ms,
        )
        self.parked: list[ParkedFetch] = []
        self.sent_high_watermark: dict[int, int | None] = {}
        """Replica id -> the high watermark of the last records answer to its fetch: a fetch
        parks until the high watermark differs from that one, so that a fetcher answered
        before the high watermark moved hears of it at once, not at its fetch's deadline."""
        self.high_watermark: int | None = None
        self.leader_state: LeaderState | None = None
        self.election_deadline = NO_TIMEOUT
        self.fetch_deadline = NO_TIMEOUT
        self.backoff_deadline: int | None = None
        self.votes: dict[int, bool] = {}
        self.acknowledged: set[int] = set()
        self.successors: list[int] = []
        self.snapshot_fetch: SnapshotDownload | None = None
        self.prospect: Prospect | None = None
        """Set while following a leader whose connection closed (``pre_vote``)."""
        self.failed_elections = 0
        self.shutting_down = False
        self.pending_change: PendingChange | None = None
        self.listeners: list[ListenerContext] = []
        self.load_voters()
        self.restore()

    def restore(self) -> None:
        """Take up the stored election state (a node that led restarts resigned)."""
        stored = self.store.read()
        log_epoch = self.log.last_epoch
        now = self.clock.monotonic_ms()
        if stored is None or stored.epoch < log_epoch:
            self.role = Role.UNATTACHED
            self.election = ElectionState(max(log_epoch, stored.epoch if stored else 0))
            self.store.write(self.election, self.voters)
        elif stored.leader_id == self.node_id:
            self.role, self.election = Role.RESIGNED, stored
            self.successors = sorted(self.voters - {self.node_id})
        elif stored.leader_id is not None:
            self.role, self.election = Role.FOLLOWER, stored
            self.fetch_deadline = now + self.config.fetch_timeout_ms
        else:
            self.role, self.election = Role.UNATTACHED, stored
        self.election_deadline = now + self.election_timeout()
        log.info(
            "node %d starts %s in epoch %d (%s)",
            self.node_id,
            self.role.value,
            self.epoch,
            "voter" if self.is_voter else "observer",
        )

    @property
    def epoch(self) -> int:
        return self.election.epoch

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self.election.leader_id, self.election.epoch)

    @property
    def is_voter(self) -> bool:
        """This node takes part in elections: a voter of the latest set, or one that a change
        not yet committed removes (it may still be needed to elect the leader that commits it,
        as Raft's single-server changes say; it does not count its own vote then)."""
        if self.node_id in self.voters:
            return True
        last = self.voter_history.last_change_offset
        return (
            last is not None
            and (self.high_watermark is None or self.high_watermark <= last)
            and self.node_id in self.voter_ids(self.voter_history.at(last))
        )

    def load_voters(self) -> None:
        """The voter set of the latest snapshot, then of every Voters record in the log."""
        snapshot = self.log.latest_snapshot()
        data = self.log.read_snapshot(snapshot) if snapshot is not None else None
        if snapshot is not None and data is not None:
            self.voter_history.reset(SnapshotReader(snapshot, data).voters)
        start = snapshot.offset if snapshot is not None else self.log.start_offset
        for batch in self.log.batches(start, self.log.end_offset):
            self.note_batch(batch)
        self.refresh_voters()

    def note_batch(self, batch: RaftBatch) -> None:
        if batch.control == ControlType.KRAFT_VOTERS:
            self.voter_history.add(batch.base_offset, read_voters_record(batch.records[0]))

    def voter_ids(self, voters: VoterSet) -> frozenset[int]:
        own = voters.get(self.node_id)
        if (
            own is not None
            and None not in (own.directory_id, self.directory_id)
            and own.directory_id != self.directory_id
        ):
            return voters.ids - {self.node_id}  # another directory of this node id votes
        return voters.ids

    def refresh_voters(self) -> None:
        """Act on the latest voter set (a Voters record appended, truncated or loaded)."""
        voters = self.voter_ids(self.voter_history.latest())
        if voters != self.voters:
            log.info("node %d: the voters are now %s", self.node_id, sorted(voters))
            self.voters = voters

    def append_voters(self, voters: VoterSet, now: int) -> int:
        """The leader appends a new voter set; it takes effect at once."""
        offset = self.log.end_offset
        self.log.append(
            control_batch(
                ControlType.KRAFT_VOTERS,
                voters.encode(),
                base_offset=offset,
                epoch=self.epoch,
                timestamp=self.clock.now_ms(),
            )
        )
        self.voter_history.add(offset, voters)
        self.refresh_voters()
        return offset

    def election_timeout(self) -> int:
        base = self.config.election_timeout_ms
        return base + self.random.randrange(max(base, 1))

    def send(self, destination: int, body: RequestPayload, now: int) -> None:
        self.requests.sent(destination, body, now)
        self.channel.send(OutboundRequest(destination, body))

    def send_to_each(self, voters: Iterable[int], body: RequestPayload, now: int) -> None:
        """Send ``body`` to each of ``voters`` with no request in flight and no backoff."""
        for voter in sorted(voters):
            if self.requests.ready(voter, now):
                self.send(voter, body, now)

    def complete_parked(self, now: int, *, high_watermark_moved: bool = False) -> None:
        keep: list[ParkedFetch] = []
        for parked in self.parked:
            if self.role is not Role.LEADER:
                answer = self.fetch_answer(ErrorCode.not_leader_or_follower)
            elif (
                self.log.end_offset > parked.fetch_offset
                or high_watermark_moved
                or parked.high_watermark != self.high_watermark
                or now >= parked.deadline_ms
            ):
                self.sent_high_watermark[parked.replica_id] = self.high_watermark
                answer = self.fetch_answer(
                    records=self.log.read(parked.fetch_offset, parked.max_bytes)
                )
            else:
                keep.append(parked)
                continue
            self.channel.respond(parked.request.ref, answer)
        self.parked = keep

    def answer_change(self, error: ErrorCode, message: str | None) -> None:
        pending, self.pending_change = self.pending_change, None
        if pending is not None:
            answer = voter_changes.answer(pending.api_key, error, message, self.leader_and_epoch)
            self.channel.respond(pending.ref, answer)

    def log_end(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.log.end_offset, self.log.last_epoch)

    def fetch_request(self) -> RequestPayload:
        position = messages.FetchPosition(
            fetch_offset=self.log.end_offset,
            last_fetched_epoch=self.log.last_epoch if self.log.end_offset > 0 else -1,
            log_start_offset=self.log.start_offset,
        )
        return messages.fetch(
            self.cluster_id,
            self.node_id,
            self.epoch,
            position,
            max_bytes=self.config.fetch_max_bytes,
            max_wait_ms=self.config.fetch_max_wait_ms,
        )

    def fetch_answer(self, error: ErrorCode = ErrorCode.none, **found: Any) -> ResponsePayload:
        state = messages.FetchAnswer(
            self.leader_and_epoch, self.high_watermark, self.log.start_offset
        )
        return messages.fetch_answer(state, error, **found)
