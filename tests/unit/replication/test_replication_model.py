"""One partition on three replicas, as a hypothesis state machine: acks=all produces, follower
fetches (with Fetch's diverging-epoch check and KIP-279 truncation), ISR changes through a
controller whose AlterPartition answers arrive, arrive late, are lost (the leader sends the
change again) or are overtaken by the metadata, crashes (some losing a follower's unflushed
tail), restarts, clean leader elections, and a leader cut off from the cluster that goes on
taking writes while another is elected, on the pure cores of
``strom.replication.partition_replication`` and ``strom.storage.leader_epoch_cache``.

Invariants (Kafka's replication contract, KIP-101):
- an acknowledged record (acks=all, ``min.insync.replicas`` 2, and 1 in a second machine) is in
  the leader's log, at its offset, for as long as the partition has a leader;
- no offset below a replica's high watermark holds a record the leader does not have there;
- each replica's leader epoch cache says which epoch wrote each part of its log.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from strom.common import ErrorCode
from strom.replication.partition_replication import IsrChange, PartitionReplication
from strom.storage.leader_epoch_cache import EpochEntry, LeaderEpochCache, truncation_offset

BROKERS = (1, 2, 3)
MIN_ISR = 2
LAG_MS = 10_000
DELIVERIES = ("answered", "late", "lost")
WALK_SEEDS = 300
WALK_STEPS = 150
Record = tuple[int, int]
"""(leader epoch, value)."""


@dataclass
class Replica:
    broker_id: int
    log: list[Record] = field(default_factory=list)
    epochs: LeaderEpochCache = field(default_factory=LeaderEpochCache)
    high_watermark: int = 0
    alive: bool = True
    broker_epoch: int = 0
    """The epoch its broker is registered in: one more at each restart."""

    @property
    def log_end_offset(self) -> int:
        return len(self.log)

    def append(self, records: list[Record]) -> None:
        for epoch, value in records:
            if epoch != self.epochs.latest_epoch:
                self.epochs.assign(epoch, self.log_end_offset)
            self.log.append((epoch, value))

    def truncate_to(self, offset: int) -> None:
        del self.log[offset:]
        self.epochs.truncate_from_end(offset)
        self.high_watermark = min(self.high_watermark, offset)


@dataclass
class Pending:
    required_offset: int
    records: dict[int, Record]


@dataclass
class Leader:
    """A broker that leads the partition as far as it knows, and its waiting produces."""

    broker_id: int
    state: PartitionReplication
    pending: list[Pending] = field(default_factory=list)


@dataclass
class Answer:
    """An AlterPartition answer on its way to the leader that sent the change."""

    to: PartitionReplication
    change: IsrChange
    isr: tuple[int, ...] | None
    partition_epoch: int = -1
    error: ErrorCode = ErrorCode.none


class ReplicationMachine(RuleBasedStateMachine):
    brokers: tuple[int, ...] = BROKERS
    initial_isr: tuple[int, ...] = BROKERS
    min_isr = MIN_ISR

    def __init__(self) -> None:
        super().__init__()
        self.replicas = {b: Replica(b) for b in self.brokers}
        self.now_ms = 0
        self.leader_epoch = 0
        self.partition_epoch = 0
        self.isr: tuple[int, ...] = self.initial_isr
        self.leader: int | None = None
        self.state: PartitionReplication | None = None
        self.pending: list[Pending] = []
        self.acked: dict[int, Record] = {}
        self.values = 0
        self.in_flight: IsrChange | None = None
        """The AlterPartition the leader sent, not yet handled by the controller."""
        self.answers: list[Answer] = []
        """Answers handled by the controller, still on their way."""
        self.cut_off: Leader | None = None
        """A former leader cut off from the cluster, which still thinks it leads."""
        self._become_leader(1)

    # --- the controller --------------------------------------------------------------------

    def _become_leader(self, broker_id: int) -> None:
        replica = self.replicas[broker_id]
        self.leader = broker_id
        replica.epochs.assign(self.leader_epoch, replica.log_end_offset)
        self.state = PartitionReplication(
            leader_id=broker_id,
            replicas=self.brokers,
            isr=self.isr,
            leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch,
            leader_epoch_start_offset=replica.log_end_offset,
            max_lag_ms=LAG_MS,
            started_ms=self.now_ms,
        )
        self.pending.clear()  # a former leader's waiting produces fail: not acknowledged
        self.in_flight = None

    def _commit_isr(self, isr: tuple[int, ...]) -> None:
        """The controller changes the ISR itself (a fenced follower); the metadata reaches the
        leader at once."""
        self.isr = isr
        self.partition_epoch += 1
        if self.state is not None:
            self.state.isr_committed(isr, self.partition_epoch)
            self.in_flight = None
            self._advance()

    def _elect(self, leaving: int) -> bool:
        """Elect a leader from the ISR without ``leaving``; False when none is alive."""
        candidates = [b for b in self.isr if b != leaving and self.replicas[b].alive]
        if not candidates:
            return False
        self.isr = tuple(b for b in self.isr if b != leaving)
        self.leader_epoch += 1
        self.partition_epoch += 1
        self._become_leader(candidates[0])
        return True

    # --- leaders ---------------------------------------------------------------------------

    def _leader_replica(self) -> Replica | None:
        return None if self.leader is None else self.replicas[self.leader]

    def _advance(self) -> None:
        """Move the high watermark and complete the acks=all produces it covers."""
        leader = self._leader_replica()
        assert leader is not None and self.state is not None
        self.pending = self._advance_leader(leader, self.state, self.pending)

    def _advance_leader(
        self, leader: Replica, state: PartitionReplication, pending: list[Pending]
    ) -> list[Pending]:
        candidate = state.high_watermark_candidate(
            leader.log_end_offset, now_ms=self.now_ms, min_isr=self.min_isr
        )
        if candidate is not None:  # None below min ISR: the high watermark stays
            leader.high_watermark = max(leader.high_watermark, candidate)  # never back
        waiting = []
        for produce in pending:
            ack = state.ack_state(
                produce.required_offset,
                high_watermark=leader.high_watermark,
                min_insync_replicas=self.min_isr,
            )
            if not ack.done:
                waiting.append(produce)
            elif ack.error is ErrorCode.none:
                self.acked.update(produce.records)
        return waiting

    def _append(
        self, leader: Replica, state: PartitionReplication, pending: list[Pending], count: int
    ) -> bool:
        if state.under_min_isr(self.min_isr):
            return False  # NOT_ENOUGH_REPLICAS: nothing appended
        start = leader.log_end_offset
        records = []
        for _ in range(count):
            self.values += 1
            records.append((state.leader_epoch, self.values))
        leader.append(records)
        pending.append(Pending(leader.log_end_offset, dict(enumerate(records, start))))
        return True

    # --- rules -----------------------------------------------------------------------------

    @rule(count=st.integers(1, 3))
    def produce(self, count: int) -> None:
        leader = self._leader_replica()
        if leader is None or self.state is None:
            return
        if self._append(leader, self.state, self.pending, count):
            self._advance()

    @rule(broker_id=st.sampled_from(BROKERS))
    def fetch(self, broker_id: int) -> None:
        if broker_id not in self.replicas:
            return
        leader, follower = self._leader_replica(), self.replicas[broker_id]
        if leader is None or self.state is None or broker_id == self.leader or not follower.alive:
            return
        if self.cut_off is not None and self.cut_off.broker_id == broker_id:
            return  # it reaches nobody
        fetch_offset = follower.log_end_offset
        last_epoch = follower.epochs.latest_epoch
        if follower.log:
            end = leader.epochs.end_offset_for(last_epoch, leader.log_end_offset)
            if end.epoch < last_epoch or end.end_offset < fetch_offset:  # DivergingEpoch
                state = truncation_offset(
                    end,
                    follower.epochs,
                    log_end_offset=fetch_offset,
                    high_watermark=follower.high_watermark,
                )
                follower.truncate_to(state.offset)
                return
        self.state.record_fetch(
            broker_id,
            fetch_offset=fetch_offset,
            leader_log_end_offset=leader.log_end_offset,
            now_ms=self.now_ms,
            broker_epoch=follower.broker_epoch,
        )
        self._advance()
        follower.append(leader.log[fetch_offset:])
        follower.high_watermark = min(leader.high_watermark, follower.log_end_offset)

    @rule(ms=st.integers(0, 2 * LAG_MS))
    def tick(self, ms: int) -> None:
        self.now_ms += ms
        if self.cut_off is not None:
            cut = self.cut_off
            cut.pending = self._advance_leader(self.replicas[cut.broker_id], cut.state, cut.pending)

    @precondition(lambda self: self.state is not None and self.in_flight is None)
    @rule()
    def propose_isr_change(self) -> None:
        """The leader's ISR check: a change it sends (one at a time)."""
        leader = self._leader_replica()
        if leader is None or self.state is None or self.in_flight is not None:
            return
        alive = {b: r.broker_epoch for b, r in self.replicas.items() if r.alive}
        self.in_flight = self.state.isr_change(
            leader.log_end_offset,
            high_watermark=leader.high_watermark,
            now_ms=self.now_ms,
            eligible=alive,
        )

    @precondition(lambda self: self.in_flight is not None)
    @rule(delivery=st.sampled_from(DELIVERIES))
    def controller_handles_isr_change(self, delivery: str) -> None:
        """The controller validates the change in flight and commits it, or refuses it; its
        answer reaches the leader now, later, or never (the leader then sends it again)."""
        change, state = self.in_flight, self.state
        if change is None or state is None:
            return
        if change.partition_epoch != self.partition_epoch:
            answer = Answer(state, change, None, error=ErrorCode.invalid_update_version)
        elif not all(
            self.replicas[b].alive and epoch in (-1, self.replicas[b].broker_epoch)
            for b, epoch in zip(change.isr, change.broker_epochs, strict=True)
            if b != state.leader_id
        ):  # KIP-903: each member alive, in the broker epoch it fetched in
            answer = Answer(state, change, None, error=ErrorCode.ineligible_replica)
        else:
            self.isr = change.isr
            self.partition_epoch += 1
            answer = Answer(state, change, change.isr, self.partition_epoch)
        if delivery == "lost":
            if not state.isr_change_failed(change, None):
                self.in_flight = None
            return
        self.in_flight = None
        self.answers.append(answer)
        if delivery == "answered":
            self.deliver_answer()

    @precondition(lambda self: bool(self.answers))
    @rule()
    def deliver_answer(self) -> None:
        """The oldest answer on its way reaches the leader that sent the change (which may
        have been cut off, or have stopped leading, meanwhile)."""
        if not self.answers:
            return
        answer = self.answers.pop(0)
        if answer.isr is None:
            if answer.to.isr_change_failed(answer.change, answer.error) and answer.to is self.state:
                self.in_flight = answer.change  # sent again
            return
        if answer.partition_epoch >= answer.to.partition_epoch:
            answer.to.isr_committed(answer.isr, answer.partition_epoch)
        if answer.to is self.state:
            self._advance()

    @precondition(
        lambda self: self.state is not None and self.partition_epoch > self.state.partition_epoch
    )
    @rule()
    def metadata_reaches_leader(self) -> None:
        """The committed ISR reaches the leader through the metadata, before or after the
        answer: a change still pending (or sent again) is settled by it."""
        if self.state is None or self.partition_epoch <= self.state.partition_epoch:
            return
        self.state.isr_committed(self.isr, self.partition_epoch)
        self.in_flight = None
        self._advance()

    @rule()
    def cut_off_leader(self) -> None:
        """The leader loses the network: the controller fences it and elects another from the
        ISR, while it goes on taking writes as the leader it thinks it still is."""
        if self.leader is None or self.state is None or self.cut_off is not None:
            return
        cut = Leader(self.leader, self.state, list(self.pending))
        self.answers = [a for a in self.answers if a.to is not cut.state]  # it hears nothing
        if self._elect(cut.broker_id):
            self.cut_off = cut

    @precondition(lambda self: self.cut_off is not None)
    @rule(count=st.integers(1, 3))
    def produce_to_cut_off_leader(self, count: int) -> None:
        cut = self.cut_off
        if cut is None:
            return
        replica = self.replicas[cut.broker_id]
        if self._append(replica, cut.state, cut.pending, count):
            cut.pending = self._advance_leader(replica, cut.state, cut.pending)

    @precondition(lambda self: self.cut_off is not None)
    @rule()
    def cut_off_leader_returns(self) -> None:
        """It is back: it learns it no longer leads (its waiting produces fail) and follows."""
        if self.cut_off is not None:
            self.cut_off = None

    @rule(broker_id=st.sampled_from(BROKERS))
    def crash(self, broker_id: int) -> None:
        """The broker dies (its log, fsynced, survives); the controller fences it."""
        if broker_id not in self.replicas:
            return
        replica = self.replicas[broker_id]
        if not replica.alive or (self.cut_off is not None and self.cut_off.broker_id == broker_id):
            return
        replica.alive = False
        if broker_id != self.leader:
            if broker_id in self.isr:
                self._commit_isr(tuple(b for b in self.isr if b != broker_id))
            return
        self.leader, self.state = None, None
        self.pending.clear()
        self.in_flight = None
        self._elect(broker_id)  # else offline until an ISR member returns (no unclean election)

    @rule(broker_id=st.sampled_from(BROKERS), lost=st.integers(1, 30))
    def crash_losing_unflushed(self, broker_id: int, lost: int) -> None:
        """A follower's machine loses power: the tail it had not fsynced is gone too."""
        if broker_id not in self.replicas:
            return
        replica = self.replicas[broker_id]
        if broker_id == self.leader or not replica.alive:
            return
        if self.cut_off is not None and self.cut_off.broker_id == broker_id:
            return
        self.crash(broker_id)
        replica.truncate_to(max(replica.log_end_offset - lost, 0))

    @rule(broker_id=st.sampled_from(BROKERS))
    def restart(self, broker_id: int) -> None:
        """The broker registers anew: its leader forgets what its earlier fetches said."""
        if broker_id not in self.replicas:
            return
        replica = self.replicas[broker_id]
        if replica.alive:
            return
        replica.alive = True
        replica.broker_epoch += 1
        if self.state is not None:
            self.state.forget_follower(broker_id)
        if self.leader is None and broker_id in self.isr:
            self.leader_epoch += 1
            self.partition_epoch += 1
            self._become_leader(broker_id)

    # --- invariants ------------------------------------------------------------------------

    @invariant()
    def acknowledged_records_are_kept(self) -> None:
        leader = self._leader_replica()
        if leader is None:
            return
        for offset, record in self.acked.items():
            assert offset < leader.log_end_offset and leader.log[offset] == record, (
                f"acknowledged record {record} at offset {offset} is gone from leader "
                f"{self.leader}'s log"
            )

    @invariant()
    def replicas_agree_below_their_high_watermark(self) -> None:
        leader = self._leader_replica()
        if leader is None:
            return
        for replica in self.replicas.values():
            below = min(replica.high_watermark, replica.log_end_offset)
            assert replica.log[:below] == leader.log[:below], (
                f"replica {replica.broker_id} disagrees with leader {self.leader} below its "
                f"high watermark {replica.high_watermark}"
            )

    @invariant()
    def epoch_caches_describe_the_logs(self) -> None:
        for replica in self.replicas.values():
            runs = [
                EpochEntry(epoch, offset)
                for offset, (epoch, _) in enumerate(replica.log)
                if offset == 0 or replica.log[offset - 1][0] != epoch
            ]
            entries = list(replica.epochs.entries)
            if len(entries) > len(runs):  # an epoch a new leader started at its log end
                assert entries[-1].start_offset == replica.log_end_offset
                entries.pop()
            assert entries == runs, (replica.broker_id, entries, runs)


class MinIsrOneMachine(ReplicationMachine):
    """Two replicas, the follower not in the ISR yet (a new replica), and Kafka's default
    ``min.insync.replicas``: an ISR of the leader alone takes acks=all writes, so only the
    maximal ISR keeps a leader cut off from the cluster from acknowledging writes the next
    leader does not have."""

    brokers = (1, 2)
    initial_isr = (1,)
    min_isr = 1


MODEL_SETTINGS = settings(
    max_examples=300,
    stateful_step_count=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
ReplicationMachine.TestCase.settings = MODEL_SETTINGS
MinIsrOneMachine.TestCase.settings = MODEL_SETTINGS
TestReplicationModel = ReplicationMachine.TestCase
TestReplicationModelMinIsrOne = MinIsrOneMachine.TestCase


def test_a_follower_back_from_a_power_cut_does_not_rejoin_on_its_old_fetches() -> None:
    """The sequence the machine rarely draws: a follower loses its whole unflushed log, comes
    back, and the ISR check runs before it fetches; were it re-added on the log end offset its
    previous session reported, the next election could pick it and lose acknowledged records."""
    machine = ReplicationMachine()
    for _ in range(3):
        machine.produce(3)
        for _ in range(2):
            machine.fetch(2)
            machine.fetch(3)
    assert len(machine.acked) == 9
    machine.crash_losing_unflushed(2, 30)
    machine.restart(2)
    machine.propose_isr_change()
    machine.controller_handles_isr_change("answered")
    assert 2 not in machine.isr
    machine.crash(1)
    assert machine.leader == 3
    machine.acknowledged_records_are_kept()


def walk(machine: ReplicationMachine, rng: random.Random, steps: int) -> None:
    """Random steps, weighted towards those that build up state, with the invariants checked
    after each: hypothesis's search seldom draws the long chains that reach a cut-off leader
    with a change in flight (with the lost-answer bug of issue 25 back, 8 of 300 seeds of the
    second machine fail here, and hypothesis found it in none of 2,000 examples)."""
    brokers = machine.brokers
    rules: list[tuple[int, Callable[[], None]]] = [  # (weight, step)
        (6, lambda: machine.produce(rng.randint(1, 3))),
        (8, lambda: machine.fetch(rng.choice(brokers))),
        (3, lambda: machine.tick(rng.choice((0, LAG_MS // 2, 2 * LAG_MS)))),
        (4, machine.propose_isr_change),
        (4, lambda: machine.controller_handles_isr_change(rng.choice(DELIVERIES))),
        (2, machine.deliver_answer),
        (2, machine.metadata_reaches_leader),
        (2, machine.cut_off_leader),
        (4, lambda: machine.produce_to_cut_off_leader(rng.randint(1, 3))),
        (1, machine.cut_off_leader_returns),
        (1, lambda: machine.crash(rng.choice(brokers))),
        (1, lambda: machine.crash_losing_unflushed(rng.choice(brokers), rng.randint(1, 30))),
        (2, lambda: machine.restart(rng.choice(brokers))),
    ]
    weights = [weight for weight, _ in rules]
    moves = [step for _, step in rules]
    for _ in range(steps):
        rng.choices(moves, weights)[0]()
        machine.acknowledged_records_are_kept()
        machine.replicas_agree_below_their_high_watermark()
        machine.epoch_caches_describe_the_logs()


@pytest.mark.parametrize("machine_type", [ReplicationMachine, MinIsrOneMachine])
def test_seeded_walks(machine_type: type[ReplicationMachine]) -> None:
    for seed in range(WALK_SEEDS):
        try:
            walk(machine_type(), random.Random(seed), WALK_STEPS)
        except AssertionError as failure:
            raise AssertionError(f"{machine_type.__name__} seed {seed}: {failure}") from None


def test_a_leader_cut_off_after_a_lost_answer_acknowledges_nothing_the_next_lacks() -> None:
    """Issue 25's reproduction: the expansion to {1, 2} is committed but its answer lost, and
    leader 1 is cut off while 2 is elected; 1 must not acknowledge writes 2 does not have."""
    machine = MinIsrOneMachine()
    machine.fetch(2)
    machine.propose_isr_change()
    machine.controller_handles_isr_change("lost")
    assert machine.isr == (1, 2) and machine.in_flight is not None  # sent again
    machine.cut_off_leader()
    assert machine.leader == 2
    machine.produce_to_cut_off_leader(3)
    machine.tick(2 * LAG_MS)
    assert machine.acked == {}
    machine.acknowledged_records_are_kept()
