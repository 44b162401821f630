"""The replica simulation's invariants, checked as it runs:

- no acknowledged acks=all write is lost: the controller's leader holds each at its offset;
- replicas agree below their high watermarks, and what a leader held below its high watermark
  (committed) stays in every later leader's log;
- every live member of the controller's ISR holds what its leader holds below its high
  watermark;
- at most one leader acknowledges writes in each leader epoch;
- a leader's high watermark never goes back within its leadership;
- an acks=all produce parked at a broker is answered once the broker stops leading.

A failure raises :class:`InvariantViolated` naming the seed that replays it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim_broker import SimBroker, batch_map
from sim_controller import TP

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

    def check(self) -> None:
        """After every event: parked produces and leaders' high watermarks."""
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
