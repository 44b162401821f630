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
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kio.schema.errors import ErrorCode
from kio.static.protocol import RequestPayload, ResponsePayload

from strom.common import Clock
from strom.common.randomness import RandomSource
from strom.raft import messages, voter_changes
from strom.raft.batches import (
    ControlType,
    RaftBatch,
    control_batch,
    data_batch,
    iter_batches,
    leader_change,
)
from strom.raft.channel import Channel, InboundRequest, InboundResponse, OutboundRequest
from strom.raft.config import RaftConfig
from strom.raft.leader_state import LeaderState
from strom.raft.listeners import ListenerContext, RaftListener
from strom.raft.log import OffsetAndEpoch, RaftLog
from strom.raft.messages import METADATA_TOPIC, LeaderAndEpoch
from strom.raft.pre_vote import Prospect
from strom.raft.quorum_state import ElectionState, QuorumStateStore, Role, Trigger, next_role
from strom.raft.requests import RequestManager
from strom.raft.snapshot_transfer import SnapshotDownload, serve_snapshot_chunk
from strom.raft.snapshots import SnapshotReader, SnapshotWriter
from strom.raft.voter_changes import PendingChange, VoterChangeError
from strom.raft.voters import VoterSet, VoterSetHistory, kraft_version_record, read_voters_record

__all__ = ["NotLeaderError", "RaftClient"]

log = logging.getLogger(__name__)

_NO_TIMEOUT: Final = 2**62
_IDLE_POLL_MS: Final = 1000
_ELECTION_TIMER_ROLES: Final = frozenset({Role.UNATTACHED, Role.CANDIDATE, Role.RESIGNED})
"""The roles whose poll acts on the election deadline (a voter's): the only ones it wakes."""


class NotLeaderError(Exception):
    """An append or a snapshot asked of a node that does not lead that epoch."""


@dataclass(slots=True)
class _ParkedFetch:
    request: InboundRequest
    replica_id: int
    fetch_offset: int
    max_bytes: int
    deadline_ms: int
    high_watermark: int | None


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
        self.node_id = node_id
        self.directory_id = directory_id
        self.voter_history = VoterSetHistory(VoterSet.of_ids(voters))
        self.voters: frozenset[int] = frozenset()
        self._bootstrap = frozenset(bootstrap)
        self.cluster_id = cluster_id
        self.log = log
        self._store = state_store
        self._channel = channel
        self._clock = clock
        self._random = random
        self.config = config
        self._requests = RequestManager(
            request_timeout_ms=config.request_timeout_ms,
            retry_backoff_ms=config.retry_backoff_ms,
        )
        self._listeners: list[ListenerContext] = []
        self._parked: list[_ParkedFetch] = []
        self._sent_high_watermark: dict[int, int | None] = {}
        """Replica id -> the high watermark of the last records answer to its fetch: a fetch
        parks until the high watermark differs from that one, so that a fetcher answered
        before the high watermark moved hears of it at once, not at its fetch's deadline."""
        self._high_watermark: int | None = None
        self._leader: LeaderState | None = None
        self._election_deadline = _NO_TIMEOUT
        self._fetch_deadline = _NO_TIMEOUT
        self._backoff_deadline: int | None = None
        self._votes: dict[int, bool] = {}
        self._acknowledged: set[int] = set()
        self._successors: list[int] = []
        self._snapshot_fetch: SnapshotDownload | None = None
        self._prospect: Prospect | None = None
        """Set while following a leader whose connection closed (``pre_vote``)."""
        self._failed_elections = 0
        self._shutting_down = False
        self._pending_change: PendingChange | None = None
        self._load_voters()
        self._initialize()

    # --- what the shell and the state machine see ---------------------------------------------

    @property
    def role(self) -> Role:
        return self._role

    @property
    def epoch(self) -> int:
        return self._election.epoch

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self._election.leader_id, self._election.epoch)

    @property
    def high_watermark(self) -> int | None:
        return self._high_watermark

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
            and (self._high_watermark is None or self._high_watermark <= last)
            and self.node_id in self._voter_ids(self.voter_history.at(last))
        )

    @property
    def epoch_start_offset(self) -> int | None:
        """The offset of this leader's first record of its epoch (None unless leading)."""
        return self._leader.epoch_start_offset if self._leader is not None else None

    def register(self, listener: RaftListener) -> None:
        self._listeners.append(ListenerContext(listener))

    def append(self, records: Sequence[bytes], *, epoch: int) -> int:
        """Append records as one batch of ``epoch``; the offset of the last one."""
        if self._role is not Role.LEADER or epoch != self.epoch or self._shutting_down:
            raise NotLeaderError(f"node {self.node_id} does not lead epoch {epoch}")
        if not records:
            raise ValueError("nothing to append")
        base = self.log.end_offset
        self.log.append(
            data_batch(records, base_offset=base, epoch=epoch, timestamp=self._clock.now_ms())
        )
        return base + len(records) - 1

    def create_snapshot(self, offset: int, epoch: int) -> SnapshotWriter | None:
        """A writer for the snapshot of the state below ``offset`` (committed, or None when it
        is not, or a snapshot there exists already)."""
        if self._high_watermark is None or offset > self._high_watermark:
            return None
        latest = self.log.latest_snapshot()
        if latest is not None and latest.offset >= offset:
            return None
        history = self.voter_history
        return SnapshotWriter(
            OffsetAndEpoch(offset, epoch),
            timestamp=self._clock.now_ms(),
            on_frozen=self._frozen,
            voters=history.at(offset) if history.dynamic else None,
        )

    def _frozen(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        self.log.store_snapshot(snapshot, data)
        self.log.delete_before_snapshot(snapshot)

    def resign(self, epoch: int) -> None:
        if self._role is Role.LEADER and epoch == self.epoch:
            self._resign()

    def begin_shutdown(self) -> None:
        """Stop leading (tell the others), accept no more appends."""
        self._shutting_down = True
        if self._role is Role.LEADER:
            self._resign()

    # --- the voter set (KIP-853) ---------------------------------------------------------------

    def _load_voters(self) -> None:
        """The voter set of the latest snapshot, then of every Voters record in the log."""
        snapshot = self.log.latest_snapshot()
        data = self.log.read_snapshot(snapshot) if snapshot is not None else None
        if snapshot is not None and data is not None:
            self.voter_history.reset(SnapshotReader(snapshot, data).voters)
        start = snapshot.offset if snapshot is not None else self.log.start_offset
        for batch in self.log.batches(start, self.log.end_offset):
            self._note_batch(batch)
        self._refresh_voters()

    def _note_batch(self, batch: RaftBatch) -> None:
        if batch.control == ControlType.KRAFT_VOTERS:
            self.voter_history.add(batch.base_offset, read_voters_record(batch.records[0]))

    def _voter_ids(self, voters: VoterSet) -> frozenset[int]:
        own = voters.get(self.node_id)
        if (
            own is not None
            and None not in (own.directory_id, self.directory_id)
            and own.directory_id != self.directory_id
        ):
            return voters.ids - {self.node_id}  # another directory of this node id votes
        return voters.ids

    def _refresh_voters(self) -> None:
        """Act on the latest voter set (a Voters record appended, truncated or loaded)."""
        voters = self._voter_ids(self.voter_history.latest())
        if voters != self.voters:
            log.info("node %d: the voters are now %s", self.node_id, sorted(voters))
            self.voters = voters

    def _leader_voters(self, leader: LeaderState, now: int) -> None:
        """The leader counts the voter set of its flushed log towards the high watermark (as
        Kafka's leader does: a set whose record could still be lost in a crash decides
        nothing)."""
        voters = self._voter_ids(self.voter_history.at(self.log.flushed_end_offset))
        if voters != leader.voters.keys() and leader.set_voters(voters, now):
            self._high_watermark = leader.high_watermark

    def _append_voters(self, voters: VoterSet, now: int) -> int:
        """The leader appends a new voter set; it takes effect at once."""
        offset = self.log.end_offset
        self.log.append(
            control_batch(
                ControlType.KRAFT_VOTERS,
                voters.encode(),
                base_offset=offset,
                epoch=self.epoch,
                timestamp=self._clock.now_ms(),
            )
        )
        self.voter_history.add(offset, voters)
        self._refresh_voters()
        return offset

    # --- start ---------------------------------------------------------------------------------

    def _initialize(self) -> None:
        stored = self._store.read()
        log_epoch = self.log.last_epoch
        now = self._clock.monotonic_ms()
        if stored is None or stored.epoch < log_epoch:
            self._role = Role.UNATTACHED
            self._election = ElectionState(max(log_epoch, stored.epoch if stored else 0))
            self._store.write(self._election, self.voters)
        elif stored.leader_id == self.node_id:
            self._role, self._election = Role.RESIGNED, stored
            self._successors = sorted(self.voters - {self.node_id})
        elif stored.leader_id is not None:
            self._role, self._election = Role.FOLLOWER, stored
            self._fetch_deadline = now + self.config.fetch_timeout_ms
        else:
            self._role, self._election = Role.UNATTACHED, stored
        self._election_deadline = now + self._election_timeout()
        log.info(
            "node %d starts %s in epoch %d (%s)",
            self.node_id,
            self._role.value,
            self.epoch,
            "voter" if self.is_voter else "observer",
        )
        if self.voters == {self.node_id}:  # the only voter elects itself at once
            trigger = (
                Trigger.FETCH_TIMEOUT if self._role is Role.FOLLOWER else Trigger.ELECTION_TIMEOUT
            )
            self._become_candidate(now, trigger=trigger)

    # --- transitions ---------------------------------------------------------------------------

    def _transition(self, trigger: Trigger, election: ElectionState) -> None:
        role = next_role(self._role, trigger)
        if election != self._election:
            self._store.write(election, self.voters)
        previous = self._role
        self._role, self._election = role, election
        self._requests.reset()
        self._leader = None
        self._votes = {}
        self._acknowledged = set()
        self._snapshot_fetch = None
        self._prospect = None
        self._backoff_deadline = None
        self._fetch_deadline = _NO_TIMEOUT
        self._election_deadline = _NO_TIMEOUT
        if self._pending_change is not None and role is not Role.LEADER:
            self._answer_change(ErrorCode.not_leader_or_follower, "the leader changed")
        if self._parked and role is not Role.LEADER:
            # A leader's parked fetches are answered when it stops leading (not the leader, and
            # who is), as Kafka's purgatory completes them: left parked, their fetchers would
            # wait out their timeouts, and their passed deadlines would keep the poll awake.
            self._complete_parked(self._clock.monotonic_ms())
        log.debug(
            "node %d: %s -> %s (%s), epoch %d, leader %s",
            self.node_id,
            previous.value,
            role.value,
            trigger.name,
            election.epoch,
            election.leader_id,
        )

    def _become_unattached(self, epoch: int, now: int) -> None:
        # As Raft says, only a granted vote or a live leader resets the election timer: seeing a
        # newer epoch does not, so a candidate whose log is behind cannot keep the others from
        # ever standing by bumping the epoch over and over.
        running = min(self._election_deadline, self._backoff_deadline or _NO_TIMEOUT)
        self._transition(Trigger.HIGHER_EPOCH, ElectionState(epoch))
        fresh = now + self._election_timeout()
        self._election_deadline = running if running != _NO_TIMEOUT else fresh

    def _become_follower(self, epoch: int, leader_id: int, now: int) -> None:
        voted = self._election.voted_id if epoch == self.epoch else None
        self._transition(Trigger.LEADER_KNOWN, ElectionState(epoch, leader_id, voted))
        self._fetch_deadline = now + self.config.fetch_timeout_ms
        self._failed_elections = 0
        log.info("node %d follows leader %d in epoch %d", self.node_id, leader_id, epoch)

    def _become_candidate(self, now: int, *, trigger: Trigger) -> None:
        if not self.is_voter:
            return
        self._transition(trigger, ElectionState(self.epoch + 1, None, self.node_id))
        self._votes = {self.node_id: True} if self.node_id in self.voters else {}
        self._election_deadline = now + self._election_timeout()
        log.info("node %d stands for election in epoch %d", self.node_id, self.epoch)
        self._maybe_won(now)

    def _maybe_won(self, now: int) -> None:
        granted = sum(1 for node, vote in self._votes.items() if vote and node in self.voters)
        if granted >= len(self.voters) // 2 + 1:
            self._become_leader(now)

    def _become_leader(self, now: int) -> None:
        granting = sorted(node for node, vote in self._votes.items() if vote)
        self._transition(
            Trigger.WON_ELECTION, ElectionState(self.epoch, self.node_id, self.node_id)
        )
        self._failed_elections = 0
        start = self.log.end_offset
        self.log.append(
            control_batch(
                ControlType.LEADER_CHANGE,
                leader_change(self.node_id, sorted(self.voters), granting),
                base_offset=start,
                epoch=self.epoch,
                timestamp=self._clock.now_ms(),
            )
        )
        self._leader = LeaderState(
            node_id=self.node_id,
            epoch=self.epoch,
            epoch_start_offset=start,
            voters=self._voter_ids(self.voter_history.at(self.log.flushed_end_offset)),
            high_watermark=self._high_watermark,
            now_ms=now,
            check_quorum_ms=self.config.fetch_timeout_ms * 3 // 2,
        )
        history = self.voter_history
        if history.dynamic and history.last_change_offset is None and self.log.start_offset == 0:
            # The voters come from the bootstrap snapshot only: put them in the log, where
            # observers replicating from the start find them (Kafka does the same).
            self.log.append(
                control_batch(
                    ControlType.KRAFT_VERSION,
                    kraft_version_record(1),
                    base_offset=self.log.end_offset,
                    epoch=self.epoch,
                    timestamp=self._clock.now_ms(),
                )
            )
            self._append_voters(history.latest(), now)
        log.info("node %d leads epoch %d from offset %d", self.node_id, self.epoch, start)

    def _resign(self) -> None:
        successors = self._leader.successors() if self._leader is not None else []
        self._transition(Trigger.RESIGN, self._election)
        self._successors = successors
        self._acknowledged = {self.node_id}
        self._election_deadline = self._clock.monotonic_ms() + self._election_timeout()
        log.info("node %d resigns as leader of epoch %d", self.node_id, self.epoch)

    def _on_epoch(self, epoch: int, leader_id: int | None, now: int) -> bool:
        """Catch up with what a message says of the epoch and its leader; True when the node
        moved (its requests are forgotten then)."""
        if leader_id is not None and leader_id < 0:
            leader_id = None
        if epoch > self.epoch:
            if leader_id is not None and leader_id != self.node_id:
                self._become_follower(epoch, leader_id, now)
            else:
                self._become_unattached(epoch, now)
            return True
        if (
            epoch == self.epoch
            and leader_id is not None
            and leader_id != self.node_id
            and self._role in (Role.UNATTACHED, Role.CANDIDATE)
        ):
            self._become_follower(epoch, leader_id, now)
            return True
        return False

    def _election_timeout(self) -> int:
        base = self.config.election_timeout_ms
        return base + self._random.randrange(max(base, 1))

    # --- poll ----------------------------------------------------------------------------------

    def poll(self) -> int:
        """Act on what is due; the milliseconds until the next poll is due."""
        now = self._clock.monotonic_ms()
        for node in self._requests.expire(now):
            self._on_request_failed(node, now)
        for _ in range(4):  # a new role acts in the same poll (a new candidate asks at once)
            state = (self._role, self.epoch)
            self._poll_role(now)
            if (self._role, self.epoch) == state:
                break
        self._deliver()
        return self._until_next(self._clock.monotonic_ms())

    def _poll_role(self, now: int) -> None:
        role = self._role
        if role is Role.LEADER:
            self._poll_leader(now)
        elif role is Role.CANDIDATE:
            self._poll_candidate(now)
        elif role is Role.FOLLOWER:
            self._poll_follower(now)
        elif role is Role.RESIGNED:
            self._poll_resigned(now)
        else:
            self._poll_unattached(now)

    def _until_next(self, now: int) -> int:
        deadlines = [self._fetch_deadline]
        if self._prospect is not None and now < self._prospect.start_ms:
            deadlines.append(self._prospect.start_ms)
        if self.is_voter and self._role in _ELECTION_TIMER_ROLES:
            # Only they act on it: a follower started with one (a restart) that has passed
            # must not keep the poll awake while it goes on following.
            deadlines.append(self._election_deadline)
        if self._backoff_deadline is not None:
            deadlines.append(self._backoff_deadline)
        if self._leader is not None and self._leader.check_quorum_due_ms is not None:
            deadlines.append(self._leader.check_quorum_due_ms)
        deadlines += [parked.deadline_ms for parked in self._parked]
        if self._pending_change is not None:
            deadlines.append(self._pending_change.deadline_ms)
        requests = self._requests.next_deadline_ms()
        if requests is not None:
            deadlines.append(requests)
        wait = min(deadlines) - now
        return max(0, min(wait, _IDLE_POLL_MS))

    def _send(self, destination: int, body: RequestPayload, now: int) -> None:
        self._requests.sent(destination, body, now)
        self._channel.send(OutboundRequest(destination, body))

    def _on_request_failed(self, node: int, now: int) -> None:
        if self._role is Role.FOLLOWER and not self.is_voter and node == self._election.leader_id:
            # An observer that cannot reach the leader looks for the current one again.
            self._fetch_deadline = min(self._fetch_deadline, now)

    def _poll_unattached(self, now: int) -> None:
        if self.is_voter:
            if now >= self._election_deadline:
                self._become_candidate(now, trigger=Trigger.ELECTION_TIMEOUT)
            return
        # An observer asks a voter to find out who leads (a fetch answered with the leader).
        targets = self.voters or self._bootstrap
        candidates = sorted(v for v in targets if self._requests.ready(v, now))
        if candidates and not any(not self._requests.ready(v, now) for v in targets):
            target = candidates[self._random.randrange(len(candidates))]
            self._send(target, self._fetch_request(), now)

    def _poll_candidate(self, now: int) -> None:
        if self._backoff_deadline is not None:
            if now >= self._backoff_deadline:
                self._become_candidate(now, trigger=Trigger.ELECTION_TIMEOUT)
            return
        if now >= self._election_deadline:
            self._lost_election(now)
            return
        for voter in sorted(self.voters - self._votes.keys()):
            if self._requests.ready(voter, now):
                self._send(
                    voter,
                    messages.vote(self.cluster_id, self.node_id, self.epoch, self._log_end()),
                    now,
                )

    def _lost_election(self, now: int) -> None:
        self._failed_elections += 1
        cap = min(
            self.config.election_backoff_max_ms,
            self.config.retry_backoff_ms * 2 ** min(self._failed_elections, 16),
        )
        self._backoff_deadline = now + self._random.randrange(max(cap, 1))
        self._requests.reset()

    def _poll_leader(self, now: int) -> None:
        leader = self._leader
        assert leader is not None
        if self._shutting_down:
            self._resign()
            return
        if leader.check_quorum_failed(now):
            log.warning(
                "node %d: no majority fetched in %d ms; resigning as leader of epoch %d",
                self.node_id,
                self.config.fetch_timeout_ms * 3 // 2,
                self.epoch,
            )
            self._resign()
            return
        self._leader_voters(leader, now)
        if leader.update_local(self.log.flushed_end_offset, self._clock.now_ms()):
            self._high_watermark = leader.high_watermark
        self._poll_voter_change(now)
        if self._role is not Role.LEADER:
            return
        for voter in sorted(self.voters - leader.acknowledged):
            if self._requests.ready(voter, now):
                self._send(
                    voter,
                    messages.begin_quorum_epoch(self.cluster_id, self.node_id, self.epoch),
                    now,
                )
        self._complete_parked(now)

    def connection_closed(self, node: int) -> None:
        """The connection to ``node`` closed (its process is gone, or it closed it). A voter
        following ``node`` runs a pre-vote round after a short random delay (``pre_vote``); a
        candidate counts ``node`` against its election (losing early is safe: it backs off and
        stands again)."""
        if self._role is Role.CANDIDATE and node in self.voters and node not in self._votes:
            self._votes[node] = False
            rejected = sum(1 for voter, vote in self._votes.items() if not vote)
            if rejected > len(self.voters) - (len(self.voters) // 2 + 1):
                self._lost_election(self._clock.monotonic_ms())
            return
        if (
            self._role is Role.FOLLOWER
            and self.is_voter
            and node == self._election.leader_id
            and self._prospect is None
        ):
            delay = self._random.randrange(max(self.config.closed_leader_delay_max_ms, 1))
            self._prospect = Prospect(node, self._clock.monotonic_ms() + delay)

    def _poll_prospect(self, prospect: Prospect, now: int) -> None:
        """Ask for pre-votes once the round starts; stand for election on a majority."""
        if prospect.lost or now < prospect.start_ms:
            return
        prospect.grants[self.node_id] = True
        outcome = prospect.outcome(self.voters)
        if outcome:
            log.info(
                "node %d: the connection to leader %d closed and a majority granted pre-votes; "
                "standing for election",
                self.node_id,
                prospect.leader_id,
            )
            self._become_candidate(now, trigger=Trigger.FETCH_TIMEOUT)
            return
        if outcome is False:
            prospect.lost = True
            return
        request = messages.pre_vote(self.cluster_id, self.node_id, self.epoch + 1, self._log_end())
        for voter in sorted(self.voters - prospect.grants.keys() - {prospect.leader_id}):
            if self._requests.ready(voter, now):
                self._send(voter, request, now)

    def _poll_follower(self, now: int) -> None:
        leader_id = self._election.leader_id
        assert leader_id is not None
        if self._prospect is not None:
            self._poll_prospect(self._prospect, now)
            if self._role is not Role.FOLLOWER:
                return
        if now >= self._fetch_deadline:
            if self.is_voter:
                log.info(
                    "node %d: leader %d silent; standing for election", self.node_id, leader_id
                )
                self._become_candidate(now, trigger=Trigger.FETCH_TIMEOUT)
            else:
                self._transition(Trigger.ELECTION_TIMEOUT, ElectionState(self.epoch))
            return
        if not self._requests.ready(leader_id, now):
            return
        if self._snapshot_fetch is not None:
            fetching = self._snapshot_fetch
            request = messages.fetch_snapshot(
                self.cluster_id,
                self.node_id,
                self.epoch,
                fetching.snapshot,
                position=len(fetching.data),
                max_bytes=self.config.snapshot_chunk_bytes,
            )
            self._send(leader_id, request, now)
        elif self.log.flushed_end_offset >= self.log.end_offset:
            self._send(leader_id, self._fetch_request(), now)

    def _poll_resigned(self, now: int) -> None:
        if now >= self._election_deadline and not self._shutting_down:
            if self.is_voter:
                self._become_candidate(now, trigger=Trigger.ELECTION_TIMEOUT)
            else:  # removed from the voters: an observer now, which looks for the leader
                self._transition(Trigger.LEFT_VOTERS, ElectionState(self.epoch))
            return
        for voter in sorted(self.voters - self._acknowledged):
            if self._requests.ready(voter, now):
                self._send(
                    voter,
                    messages.end_quorum_epoch(
                        self.cluster_id, self.node_id, self.epoch, self._successors
                    ),
                    now,
                )

    # --- delivering commits --------------------------------------------------------------------

    def _deliver(self) -> None:
        current = self.leader_and_epoch
        if self._role is Role.RESIGNED:
            current = LeaderAndEpoch(None, self.epoch)
        for context in self._listeners:
            context.catch_up(self.log, self._high_watermark)
            context.notify(current, self.epoch_start_offset)

    # --- requests ------------------------------------------------------------------------------

    def handle_request(self, request: InboundRequest) -> None:
        now = self._clock.monotonic_ms()
        body: Any = request.body
        api_key = int(body.__api_key__)
        answer: ResponsePayload | None
        if api_key in (52, 53, 54, 1) and body.cluster_id not in (None, self.cluster_id):
            answer = messages.wrong_cluster(api_key)
        elif api_key == 52 and messages.is_pre_vote(body):
            answer = self._on_pre_vote(body, now)
        elif api_key == 52:
            answer = self._on_vote(body, now)
        elif api_key == 53:
            answer = self._on_begin(body, now)
        elif api_key == 54:
            answer = self._on_end(body, now)
        elif api_key == 1:
            answer = self._on_fetch(request, body, now)
        elif api_key == 59:
            answer = serve_snapshot_chunk(
                self.log,
                body,
                self.leader_and_epoch,
                leading=self._role is Role.LEADER,
                max_bytes=self.config.snapshot_chunk_bytes,
            )
        elif api_key == 55:
            answer = self._describe_quorum()
        elif api_key in (
            voter_changes.ADD_VOTER,
            voter_changes.REMOVE_VOTER,
            voter_changes.UPDATE_VOTER,
        ):
            answer = self._on_voter_change(request, api_key, body, now)
        else:
            raise ValueError(f"the quorum does not serve API key {api_key}")
        if answer is not None:
            self._channel.respond(request.ref, answer)

    def _on_vote(self, body: Any, now: int) -> ResponsePayload:
        part = body.topics[0].partitions[0]
        candidate, epoch = int(part.replica_id), int(part.replica_epoch)
        if candidate not in self.voters and not self.voter_history.dynamic:
            # With dynamic voters (KIP-853) any candidate is heard: this node's set may lag
            # behind the candidate's, or the candidate is a removed voter whose removal is not
            # committed yet and that may be needed to commit it; the log check below decides.
            return messages.vote_answer(
                ErrorCode.inconsistent_voter_set, self.leader_and_epoch, granted=False
            )
        if epoch < self.epoch:
            return messages.vote_answer(
                ErrorCode.fenced_leader_epoch, self.leader_and_epoch, granted=False
            )
        if epoch > self.epoch:
            self._become_unattached(epoch, now)
        granted = False
        # A node that is not a voter by its own log grants votes too (KIP-853): the candidate
        # may hold the record that makes it the voter whose vote elects the next leader.
        if self._role is Role.UNATTACHED:
            voted = self._election.voted_id
            ours = OffsetAndEpoch(self.log.end_offset, self.log.last_epoch)
            theirs = OffsetAndEpoch(int(part.last_offset), int(part.last_offset_epoch))
            up_to_date = (theirs.epoch, theirs.offset) >= (ours.epoch, ours.offset)
            if (voted is None or voted == candidate) and up_to_date:
                granted = True
                if voted is None:
                    self._transition(Trigger.GRANT_VOTE, ElectionState(self.epoch, None, candidate))
                self._election_deadline = now + self._election_timeout()
        return messages.vote_answer(ErrorCode.none, self.leader_and_epoch, granted=granted)

    def _on_pre_vote(self, body: Any, now: int) -> ResponsePayload:
        """Grant a pre-vote to a voter whose log is up to date for an epoch newer than this
        node's, unless this node leads or has heard from its leader within the fetch timeout
        (and not seen its connection close). Changes nothing here."""
        part = body.topics[0].partitions[0]
        epoch = int(part.replica_epoch)
        ours = (self.log.last_epoch, self.log.end_offset)
        theirs = (int(part.last_offset_epoch), int(part.last_offset))
        if self._role is Role.LEADER:
            leader_alive = True
        elif self._role is Role.FOLLOWER:
            leader_alive = self._prospect is None and now < self._fetch_deadline
        else:
            leader_alive = False
        granted = (
            int(part.replica_id) in self.voters
            and epoch > self.epoch
            and theirs >= ours
            and not leader_alive
        )
        return messages.vote_answer(ErrorCode.none, self.leader_and_epoch, granted=granted)

    def _on_begin(self, body: Any, now: int) -> ResponsePayload:
        part = body.topics[0].partitions[0]
        leader_id, epoch = int(part.leader_id), int(part.leader_epoch)
        error = ErrorCode.none
        if epoch < self.epoch:
            error = ErrorCode.fenced_leader_epoch
        elif leader_id == self.node_id or (
            leader_id not in self.voters and not self.voter_history.dynamic
        ):
            # With dynamic voters this node may not have the record that added the leader yet.
            error = ErrorCode.inconsistent_voter_set
        elif not (self._role is Role.FOLLOWER and self._election.leader_id == leader_id):
            if epoch == self.epoch and self._role in (Role.LEADER, Role.RESIGNED):
                error = ErrorCode.inconsistent_voter_set  # two leaders of one epoch: never
            else:
                self._become_follower(epoch, leader_id, now)
        return messages.begin_answer(error, self.leader_and_epoch)

    def _on_end(self, body: Any, now: int) -> ResponsePayload:
        part = body.topics[0].partitions[0]
        leader_id, epoch = int(part.leader_id), int(part.leader_epoch)
        error = ErrorCode.none
        if epoch < self.epoch:
            error = ErrorCode.fenced_leader_epoch
        elif epoch > self.epoch:
            self._become_unattached(epoch, now)
        elif self._role is Role.FOLLOWER and self._election.leader_id == leader_id:
            # The leader resigns: its preferred successors stand first, the others a bit later.
            successors = [int(s) for s in part.preferred_successors]
            position = successors.index(self.node_id) if self.node_id in successors else None
            if position == 0:
                backoff = 0
            else:
                backoff = self._random.randrange(max(self.config.election_backoff_max_ms, 1))
            self._fetch_deadline = min(self._fetch_deadline, now + backoff)
        return messages.end_answer(error, self.leader_and_epoch)

    # --- Fetch, leader side --------------------------------------------------------------------

    def _on_fetch(self, request: InboundRequest, body: Any, now: int) -> ResponsePayload | None:
        topic = body.topics[0] if body.topics else None
        if (
            topic is None
            or topic.topic != METADATA_TOPIC
            or len(topic.partitions) != 1
            or int(topic.partitions[0].partition) != 0
        ):
            return self._fetch_answer(ErrorCode.unknown_topic_or_partition)
        part = topic.partitions[0]
        replica_id = int(body.replica_id)
        requested_epoch = int(part.current_leader_epoch)
        if requested_epoch > self.epoch:
            return self._fetch_answer(ErrorCode.unknown_leader_epoch)
        if requested_epoch >= 0 and requested_epoch < self.epoch:
            return self._fetch_answer(ErrorCode.fenced_leader_epoch)
        leader = self._leader
        if self._role is not Role.LEADER or leader is None:
            return self._fetch_answer(ErrorCode.not_leader_or_follower)
        fetch_offset = int(part.fetch_offset)
        last_fetched_epoch = int(part.last_fetched_epoch)
        snapshot = self.log.latest_snapshot()
        if fetch_offset < self.log.start_offset and snapshot is not None:
            return self._fetch_answer(snapshot_id=snapshot)
        if fetch_offset > 0 or last_fetched_epoch >= 0:
            end = self.log.end_offset_for_epoch(last_fetched_epoch)
            if (
                end.epoch != last_fetched_epoch
                or end.offset < fetch_offset
                or fetch_offset > self.log.end_offset
            ):
                if end.offset < self.log.start_offset and snapshot is not None:
                    return self._fetch_answer(snapshot_id=snapshot)
                if end.epoch < 0:  # older than everything here: start over from the start
                    end = OffsetAndEpoch(self.log.start_offset, 0)
                return self._fetch_answer(diverging=end)
        if replica_id >= 0 and leader.update_replica(
            replica_id,
            fetch_offset,
            leader_end_offset=self.log.end_offset,
            wall_ms=self._clock.now_ms(),
            now_ms=now,
        ):
            self._high_watermark = leader.high_watermark
            self._complete_parked(now, high_watermark_moved=True)
        max_bytes = min(int(part.partition_max_bytes), self.config.fetch_max_bytes)
        max_wait = int(body.max_wait.total_seconds() * 1000)
        if fetch_offset >= self.log.end_offset and max_wait > 0:
            self._parked.append(
                _ParkedFetch(
                    request=request,
                    replica_id=replica_id,
                    fetch_offset=fetch_offset,
                    max_bytes=max_bytes,
                    deadline_ms=now + min(max_wait, self.config.fetch_max_wait_ms),
                    high_watermark=self._sent_high_watermark.get(replica_id, self._high_watermark),
                )
            )
            return None
        self._sent_high_watermark[replica_id] = self._high_watermark
        return self._fetch_answer(records=self.log.read(fetch_offset, max_bytes))

    def _complete_parked(self, now: int, *, high_watermark_moved: bool = False) -> None:
        keep: list[_ParkedFetch] = []
        for parked in self._parked:
            if self._role is not Role.LEADER:
                answer = self._fetch_answer(ErrorCode.not_leader_or_follower)
            elif (
                self.log.end_offset > parked.fetch_offset
                or high_watermark_moved
                or parked.high_watermark != self._high_watermark
                or now >= parked.deadline_ms
            ):
                self._sent_high_watermark[parked.replica_id] = self._high_watermark
                answer = self._fetch_answer(
                    records=self.log.read(parked.fetch_offset, parked.max_bytes)
                )
            else:
                keep.append(parked)
                continue
            self._channel.respond(parked.request.ref, answer)
        self._parked = keep

    # --- voter changes, leader side (KIP-853) -------------------------------------------------

    def _on_voter_change(
        self, request: InboundRequest, api_key: int, body: Any, now: int
    ) -> ResponsePayload | None:
        if body.cluster_id not in (None, self.cluster_id):
            return voter_changes.answer(
                api_key, ErrorCode.inconsistent_cluster_id, None, self.leader_and_epoch
            )
        leader = self._leader
        if self._role is not Role.LEADER or leader is None or self._shutting_down:
            return voter_changes.answer(
                api_key,
                ErrorCode.not_leader_or_follower,
                f"node {self.node_id} does not lead the quorum",
                self.leader_and_epoch,
            )
        history = self.voter_history
        context = voter_changes.ChangeContext(
            leader=leader,
            voters=history.latest(),
            dynamic=history.dynamic,
            high_watermark=self._high_watermark,
            last_change_offset=history.last_change_offset,
            change_pending=self._pending_change is not None,
            wall_ms=self._clock.now_ms(),
            caught_up_ms=self.config.fetch_timeout_ms,
        )
        try:
            voters = voter_changes.plan_change(api_key, body, context)
        except VoterChangeError as error:
            return voter_changes.answer(api_key, error.code, str(error), self.leader_and_epoch)
        timeout = getattr(body, "timeout", None)
        wait_ms = int(timeout.total_seconds() * 1000) if timeout is not None else 0
        offset = self._append_voters(voters, now)
        log.info("node %d: voters %s from offset %d", self.node_id, sorted(voters.ids), offset)
        self._pending_change = PendingChange(
            ref=request.ref,
            api_key=api_key,
            offset=offset,
            deadline_ms=now + (wait_ms if wait_ms > 0 else self.config.request_timeout_ms),
        )
        return None

    def _poll_voter_change(self, now: int) -> None:
        """Answer a committed (or timed-out) change; a leader whose removal is committed
        resigns."""
        committed = self._high_watermark if self._high_watermark is not None else 0
        pending = self._pending_change
        if pending is not None and committed > pending.offset:
            self._answer_change(ErrorCode.none, None)
        elif pending is not None and now >= pending.deadline_ms:
            self._answer_change(
                ErrorCode.request_timed_out, "the voter change was not committed in time"
            )
        last_change = self.voter_history.last_change_offset
        removed = self.node_id not in self.voters
        if removed and last_change is not None and committed > last_change:
            log.info("node %d: its removal from the voters is committed", self.node_id)
            self._resign()

    def _answer_change(self, error: ErrorCode, message: str | None) -> None:
        pending, self._pending_change = self._pending_change, None
        if pending is not None:
            answer = voter_changes.answer(pending.api_key, error, message, self.leader_and_epoch)
            self._channel.respond(pending.ref, answer)

    def _describe_quorum(self) -> ResponsePayload:
        leader = self._leader
        if self._role is not Role.LEADER or leader is None:
            return messages.describe_quorum_answer(
                self.leader_and_epoch,
                high_watermark=None,
                error_message=f"node {self.node_id} does not lead the quorum",
            )
        leader.update_local(self.log.flushed_end_offset, self._clock.now_ms())
        return messages.describe_quorum_answer(
            self.leader_and_epoch,
            high_watermark=self._high_watermark,
            voters=leader.voters.values(),
            observers=leader.observers.values(),
            voter_set=self.voter_history.latest(),
        )

    # --- responses -----------------------------------------------------------------------------

    def handle_response(self, response: InboundResponse) -> None:
        now = self._clock.monotonic_ms()
        failed = response.body is None or getattr(response.body, "error_code", 0) != 0
        if not self._requests.received(response.source, response.request, now, failed=failed):
            return
        if response.body is None:
            self._on_request_failed(response.source, now)
            return
        body: Any = response.body
        if failed or not getattr(body, "topics", getattr(body, "responses", None)):
            return
        api_key = int(body.__api_key__)
        if api_key == 52 and messages.is_pre_vote(response.request):
            self._on_pre_vote_answer(response.source, body, now)
        elif api_key == 52:
            self._on_vote_answer(response.source, body, now)
        elif api_key == 53:
            self._on_begin_answer(response.source, body, now)
        elif api_key == 54:
            self._on_end_answer(response.source, body, now)
        elif api_key == 1:
            self._on_fetch_answer(response.source, body, now)
        elif api_key == 59:
            self._on_snapshot_answer(response.source, body, now)

    def _on_vote_answer(self, source: int, body: Any, now: int) -> None:
        part = body.topics[0].partitions[0]
        if self._on_epoch(int(part.leader_epoch), int(part.leader_id), now):
            return
        if self._role is not Role.CANDIDATE or int(part.leader_epoch) != self.epoch:
            return
        if part.error_code != ErrorCode.none:
            self._requests.back_off(source, now)
            return
        self._votes[source] = bool(part.vote_granted)
        rejected = sum(1 for node, vote in self._votes.items() if not vote and node in self.voters)
        if rejected > len(self.voters) - (len(self.voters) // 2 + 1):
            self._lost_election(now)
        else:
            self._maybe_won(now)

    def _on_pre_vote_answer(self, source: int, body: Any, now: int) -> None:
        part = body.topics[0].partitions[0]
        if self._on_epoch(int(part.leader_epoch), int(part.leader_id), now):
            return
        if self._prospect is not None and part.error_code == ErrorCode.none:
            self._prospect.grants[source] = bool(part.vote_granted)

    def _on_begin_answer(self, source: int, body: Any, now: int) -> None:
        part = body.topics[0].partitions[0]
        if self._on_epoch(int(part.leader_epoch), int(part.leader_id), now):
            return
        if self._leader is not None and part.error_code == ErrorCode.none:
            self._leader.acknowledged.add(source)

    def _on_end_answer(self, source: int, body: Any, now: int) -> None:
        part = body.topics[0].partitions[0]
        if self._on_epoch(int(part.leader_epoch), int(part.leader_id), now):
            return
        if self._role is Role.RESIGNED:
            self._acknowledged.add(source)

    def _on_fetch_answer(self, source: int, body: Any, now: int) -> None:
        part = body.responses[0].partitions[0]
        leader_id = int(part.current_leader.leader_id)
        leader_epoch = int(part.current_leader.leader_epoch)
        error = ErrorCode(part.error_code)
        if error is not ErrorCode.none:
            self._on_epoch(leader_epoch, leader_id, now)
            self._requests.back_off(source, now)
            return
        # A fetch answered without error comes from the leader of ``leader_epoch`` (a bootstrap
        # server, which has a negative id here, is the leader its answer names).
        self._on_epoch(leader_epoch, source if source >= 0 else leader_id, now)
        if (
            self._role is not Role.FOLLOWER
            or self._election.leader_id != source
            or leader_epoch != self.epoch
        ):
            return
        self._fetch_deadline = now + self.config.fetch_timeout_ms
        self._prospect = None  # the leader answers: its connection only flapped
        if int(part.snapshot_id.end_offset) >= 0:
            snapshot = OffsetAndEpoch(int(part.snapshot_id.end_offset), int(part.snapshot_id.epoch))
            self._snapshot_fetch = SnapshotDownload(snapshot)
            return
        if int(part.diverging_epoch.end_offset) >= 0:
            self._truncate(
                OffsetAndEpoch(
                    int(part.diverging_epoch.end_offset), int(part.diverging_epoch.epoch)
                )
            )
            return
        records = part.records
        if records:
            self._append_fetched(bytes(records))
        high_watermark = int(part.high_watermark)
        if high_watermark >= 0 and (
            self._high_watermark is None or high_watermark > self._high_watermark
        ):
            self._high_watermark = high_watermark

    def _truncate(self, diverging: OffsetAndEpoch) -> None:
        local = self.log.end_offset_for_epoch(diverging.epoch)
        offset = min(diverging.offset, local.offset) if local.epoch >= 0 else diverging.offset
        offset = max(offset, self.log.start_offset)
        log.info(
            "node %d truncates its log to offset %d (diverged at epoch %d)",
            self.node_id,
            offset,
            diverging.epoch,
        )
        self.log.truncate_to(offset)
        self.voter_history.truncate_to(self.log.end_offset)
        self._refresh_voters()

    def _append_fetched(self, data: bytes) -> None:
        view = memoryview(data)
        position = 0
        for batch in iter_batches(view):
            end = position + batch.size
            if batch.base_offset == self.log.end_offset:
                self._note_batch(self.log.append(bytes(view[position:end])))
            elif batch.base_offset > self.log.end_offset:
                break  # a gap: a stale answer; the next fetch asks from the log end again
            position = end
        self._refresh_voters()

    def _on_snapshot_answer(self, source: int, body: Any, now: int) -> None:
        part = body.topics[0].partitions[0]
        fetching = self._snapshot_fetch
        self._on_epoch(
            int(part.current_leader.leader_epoch), int(part.current_leader.leader_id), now
        )
        if fetching is None or self._snapshot_fetch is not fetching:
            return
        if part.error_code != ErrorCode.none:
            log.warning(
                "node %d: snapshot fetch refused: %s", self.node_id, ErrorCode(part.error_code).name
            )
            self._snapshot_fetch = None
            self._requests.back_off(source, now)
            return
        self._fetch_deadline = now + self.config.fetch_timeout_ms
        if not fetching.add(part):
            return
        snapshot = fetching.snapshot
        self._snapshot_fetch = None
        reader = SnapshotReader(snapshot, bytes(fetching.data))  # refuses an incomplete one
        self.log.store_snapshot(snapshot, bytes(fetching.data))
        self.log.reset_to_snapshot(snapshot)
        self.voter_history.reset(reader.voters)
        self._refresh_voters()
        if self._high_watermark is None or self._high_watermark < snapshot.offset:
            self._high_watermark = snapshot.offset
        log.info(
            "node %d loaded snapshot %d-%d from the leader",
            self.node_id,
            snapshot.offset,
            snapshot.epoch,
        )

    # --- what this node sends ------------------------------------------------------------------

    def _log_end(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.log.end_offset, self.log.last_epoch)

    def _fetch_request(self) -> RequestPayload:
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

    def _fetch_answer(self, error: ErrorCode = ErrorCode.none, **found: Any) -> ResponsePayload:
        state = messages.FetchAnswer(
            self.leader_and_epoch, self._high_watermark, self.log.start_offset
        )
        return messages.fetch_answer(state, error, **found)
