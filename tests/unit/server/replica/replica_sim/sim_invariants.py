"""The replica simulation's invariants, checked as it runs:

- no acknowledged acks=all write is lost: the controller's leader holds each at its offset;
- replicas agree below their high watermarks, and what a leader held below its high watermark
  (committed) stays in every later leader's log;
- every live member of the controller's ISR holds what its leader holds below its high
  watermark, and every acknowledged write (a new leader's high watermark may lag what its
  predecessor acknowledged: a replica joins the ISR only from the start of its epoch);
- at most one leader acknowledges writes in each leader epoch;
- a leader's high watermark never goes back within its leadership;
- an acks=all produce parked at a broker is answered once the broker stops leading;
- committed offsets never go backwards: the group coordinator loaded at the offsets
  partition's current leader epoch holds at least the last acknowledged OffsetCommit (one is
  only ever superseded by a later commit, never lost or regressed by a failover);
- transactions are atomic: below the high watermark of each data partition's leader, a
  transaction whose EndTxn was answered COMMIT is never aborted and one answered (or asked
  to) ABORT never committed, and none is committed on one partition and aborted on another;
  at the end, with the network quiet, each committed transaction is visible (COMMIT marker
  after its records) on every partition it wrote to and no transaction is left open.

A failure raises :class:`InvariantViolated` naming the seed that replays it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim_broker import SimBroker, batch_map
from sim_clients import GROUP
from sim_controller import DATA, OFFSETS_TP, TP

from strom.common import ErrorCode, TopicPartition
from strom.protocol.batch import HEADER_SIZE, BatchHeader
from strom.protocol.records import ControlRecordType, iter_records, read_control_record

if TYPE_CHECKING:
    from replica_simulation import Simulation

Batch = tuple[int, int, int]
"""(base offset, last offset, CRC) of one batch in a log."""


class InvariantViolated(AssertionError):
    """A replication invariant broke; the message names the seed that replays it."""


@dataclass
class Ack:
    broker: int
    leader_epoch: int
    batch: Batch


class Invariants:
    """What the run acknowledged and committed so far, and the checks over it."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.acked: dict[int, Ack] = {}
        self.committed: dict[int, Batch] = {}
        """Batches a leader held below its high watermark, by base offset."""
        self.acking: dict[int, int] = {}
        """Leader epoch -> the broker that acknowledged a write in it."""
        self.high_watermarks: dict[tuple[int, int, int], int] = {}
        """(broker, life, leader epoch) -> the highest high watermark it had as leader."""
        self.changed = False
        """The controller changed ``orders-0``'s ISR or leader since the last :meth:`check`."""
        self.offset_acked = 0
        """The largest offset of group ``g`` an OffsetCommit was acknowledged for."""
        self.txn_asked: dict[int, bool] = {}
        """Transaction number -> whether its producer sent EndTxn to commit it (or abort)."""
        self.txn_ended: dict[int, bool] = {}
        """Transaction number -> the outcome of its acknowledged EndTxn (True: commit)."""

    def violated(self, what: str) -> None:
        sim = self.sim
        raise InvariantViolated(
            f"seed {sim.seed}, step {sim.step}, {sim.clock.monotonic_ms()} ms: {what} "
            f"(faults {sim.faults})"
        )

    def acknowledged(self, broker: SimBroker, batch: Batch) -> None:
        """``broker`` answered an acks=all write of ``batch`` with success."""
        epoch = broker.leads()
        if epoch is None:
            self.violated(f"broker {broker.node_id} acknowledged {batch} without leading")
            return
        other = self.acking.setdefault(epoch, broker.node_id)
        if other != broker.node_id:
            self.violated(
                f"brokers {other} and {broker.node_id} both acknowledged in epoch {epoch}"
            )
        earlier = self.acked.get(batch[0])
        if earlier is not None and earlier.batch != batch:
            self.violated(f"{batch} acknowledged at the offset of acknowledged {earlier}")
        self.acked[batch[0]] = Ack(broker.node_id, epoch, batch)

    def offset_committed(self, broker: SimBroker, offset: int) -> None:
        """``broker``'s group coordinator acknowledged an OffsetCommit of ``offset``."""
        self.offset_acked = max(self.offset_acked, offset)

    def transaction_ending(self, number: int, *, commit: bool) -> None:
        self.txn_asked[number] = commit

    def transaction_ended(self, number: int, *, commit: bool) -> None:
        self.txn_ended[number] = commit

    def check_offsets(self) -> bool:
        """The group coordinator of the offsets partition's current leader epoch, once loaded,
        has the last acknowledged commit or a later one; whether there is one to ask."""
        registration = self.sim.controller.registration_of(OFFSETS_TP)
        broker = self.sim.brokers.get(registration.leader)
        if (
            broker is None
            or not broker.alive
            or broker.leads(OFFSETS_TP) != registration.leader_epoch
            or broker.groups.coordinator.group_error(GROUP) is not ErrorCode.none
        ):
            return False
        group = broker.groups.coordinator.groups.get(GROUP)
        found = None if group is None else group.offsets.get((TP.topic, TP.partition))
        committed = 0 if found is None else found.offset
        if committed < self.offset_acked:
            self.violated(
                f"group coordinator {broker.node_id} (leader epoch {registration.leader_epoch}) "
                f"has offset {committed}, below the acknowledged commit of {self.offset_acked}"
            )
        return True

    def check_transactions(self, *, final: bool = False) -> None:
        """What the data partitions' leaders hold below their high watermarks: no transaction
        half-visible or against its acknowledged end; ``final``: each committed one visible
        everywhere, none left open."""
        decided: dict[int, dict[TopicPartition, bool]] = {}
        for tp in DATA:
            found = self._transactions_in(tp)
            if found is None:
                if final:
                    self.violated(f"no leader of {tp} at the end")
                continue
            in_tp, still_open = found
            for number, commit in in_tp.items():
                decided.setdefault(number, {})[tp] = commit
            if final and still_open:
                self.violated(f"transaction(s) {still_open} left open in {tp} at the end")
        for number, outcomes in decided.items():
            seen = set(outcomes.values())
            ended = self.txn_ended.get(number)
            if len(seen) > 1:
                self.violated(f"transaction {number} half-visible: {outcomes}")
            if True in seen and (ended is False or self.txn_asked.get(number) is False):
                self.violated(
                    f"transaction {number} committed in {outcomes}, but its producer ended it "
                    f"with ABORT (answered: {ended is False})"
                )
            if ended is True and False in seen:
                self.violated(f"transaction {number} acknowledged COMMIT, aborted: {outcomes}")
            if final and (True in seen or ended is True) and set(outcomes) != set(DATA):
                self.violated(f"committed transaction {number} is visible only in {outcomes}")
        if final:
            for number, ended in self.txn_ended.items():
                if ended and number not in decided:
                    self.violated(f"acknowledged COMMIT of transaction {number} is visible nowhere")

    def transactions_settled(self) -> bool:
        """Whether each data partition has a leader at its current epoch whose high watermark
        is at its log end, and no transaction is open below it."""
        for tp in DATA:
            found = self._transactions_in(tp)
            if found is None or found[1]:
                return False
            leader = self.sim.brokers[self.sim.controller.registration_of(tp).leader]
            log = leader.log_of(tp)
            if log.high_watermark < log.log_end_offset:
                return False
        return True

    def _transactions_in(self, tp: TopicPartition) -> tuple[dict[int, bool], list[int]] | None:
        """Below the high watermark of ``tp``'s current leader: each transaction's outcome
        (True: a COMMIT marker of its producer follows its batch), and those still open;
        None without a live leader at the current epoch."""
        registration = self.sim.controller.registration_of(tp)
        broker = self.sim.brokers.get(registration.leader)
        if broker is None or not broker.alive or broker.leads(tp) != registration.leader_epoch:
            return None
        log = broker.log_of(tp)
        end = min(log.high_watermark, log.log_end_offset)
        data = log.read_bytes(log.log_start_offset, max_bytes=1 << 26)
        outcomes: dict[int, bool] = {}
        open_by_producer: dict[int, list[int]] = {}
        position = 0
        while position + HEADER_SIZE <= len(data):
            header = BatchHeader.read(data, position)
            batch = data[position : position + header.size]
            position += header.size
            if header.base_offset + header.last_offset_delta >= end:
                break
            if not header.is_transactional:
                continue
            [record, *_] = iter_records(batch)
            if header.is_control:
                kind, _ = read_control_record(record)
                for number in open_by_producer.pop(header.producer_id, []):
                    outcomes[number] = kind is ControlRecordType.COMMIT
            else:
                assert record.value is not None
                number = int(record.value.removeprefix(b"txn"))
                open_by_producer.setdefault(header.producer_id, []).append(number)
        return outcomes, sorted(n for numbers in open_by_producer.values() for n in numbers)

    def check(self) -> None:
        """After every event: parked produces and leaders' high watermarks; the logs too
        after the controller changed the partition's ISR or leader (a replica taken into the
        ISR or elected must hold what was committed when it is, not only some steps later,
        when it may have fetched what it lacked)."""
        if self.changed:
            self.changed = False
            self.check_logs()
        for broker in self.sim.brokers.values():
            if not broker.alive:
                continue
            epoch = broker.leads()
            if epoch is None:
                if broker.manager.produce_purgatory.watched(TP):
                    self.violated(
                        f"broker {broker.node_id} stopped leading {TP} but an acks=all produce "
                        "still waits in its purgatory"
                    )
                continue
            key = (broker.node_id, broker.life, epoch)
            high_watermark = broker.log.high_watermark
            if high_watermark < self.high_watermarks.get(key, 0):
                self.violated(
                    f"leader {broker.node_id}'s high watermark went back from "
                    f"{self.high_watermarks[key]} to {high_watermark} in epoch {epoch}"
                )
            self.high_watermarks[key] = high_watermark

    def check_logs(self) -> None:
        """Now and then: acknowledged and committed batches, and replicas' agreement."""
        brokers = self.sim.brokers
        leader = brokers.get(self.sim.controller.registration.leader)
        logs = {
            b.node_id: (batch_map(b.log), min(b.log.high_watermark, b.log.log_end_offset))
            for b in brokers.values()
            if b.alive
        }
        for broker_id, (found, high_watermark) in logs.items():
            if brokers[broker_id].leads() is None:
                continue
            for base, batch in found.items():
                if batch[1] >= high_watermark:
                    break
                if self.committed.setdefault(base, batch) != batch:
                    self.violated(
                        f"leader {broker_id} has {batch} below its high watermark "
                        f"{high_watermark}, where {self.committed[base]} was committed"
                    )
        if leader is not None and leader.alive:
            held, high_watermark = logs[leader.node_id]
            if leader.leads() == self.sim.controller.registration.leader_epoch:
                self._check_isr(leader.node_id, logs)
            for base, batch in self.committed.items():
                if held.get(base) != batch:
                    self.violated(
                        f"committed {batch} is not in leader {leader.node_id}'s log: "
                        f"{held.get(base)}"
                    )
            for base, ack in self.acked.items():
                if held.get(base) != ack.batch:
                    self.violated(
                        f"acknowledged {ack.batch} (by {ack.broker} in epoch {ack.leader_epoch}) "
                        f"is not in leader {leader.node_id}'s log: {held.get(base)}"
                    )
        for a, (a_batches, a_hw) in logs.items():
            for b, (b_batches, b_hw) in logs.items():
                if a >= b:
                    continue
                below = min(a_hw, b_hw)
                mine = [x for x in a_batches.values() if x[1] < below]
                theirs = [x for x in b_batches.values() if x[1] < below]
                if mine != theirs:
                    self.violated(f"brokers {a} and {b} disagree below offset {below}")

    def _check_isr(self, leader: int, logs: dict[int, tuple[dict[int, Batch], int]]) -> None:
        """Every live member of the controller's ISR holds what ``leader`` holds below its
        high watermark (each reported that much, and may be elected)."""
        held, high_watermark = logs[leader]
        for member in self.sim.controller.registration.isr:
            if member not in logs:
                continue
            kept, _ = logs[member]
            for base, batch in held.items():
                if batch[1] < high_watermark and kept.get(base) != batch:
                    self.violated(
                        f"ISR member {member} lacks {batch}, below leader {leader}'s high "
                        f"watermark {high_watermark}: {kept.get(base)}"
                    )
            for base, ack in self.acked.items():
                if kept.get(base) != ack.batch:
                    self.violated(
                        f"ISR member {member} lacks acknowledged {ack.batch} (by {ack.broker} "
                        f"in epoch {ack.leader_epoch}), which a new leader {leader} whose high "
                        f"watermark {high_watermark} lags may not know committed"
                    )
