"""The replica simulation's faults and timing: what a seed draws (:class:`Faults`) and the
network that drops, delays (and so reorders) and duplicates messages between the brokers and
the controller (:class:`Network`), over virtual time."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from dataclasses import dataclass

from strom.common.timer import ManualTimer

LAG_MS = 1_500
"""``replica.lag.time.max.ms``: longer than the session timeout, as in Kafka (30 s and 9 s)."""
SESSION_TIMEOUT_MS = 500
FETCH_BACKOFF_MS = 50
FETCH_WAIT_MAX_MS = 100
FETCH_SOCKET_TIMEOUT_MS = 200
ISR_CHECK_MS = 250
CHECKPOINT_MS = 2_000
ALTER_TIMEOUT_MS = 400
METADATA_PUBLISH_MS = 100
PRODUCE_TIMEOUT_MS = 3_000
CONTROLLER = 0
"""The controller's node id on the network (brokers are 1, 2, 3)."""


@dataclass(frozen=True)
class Faults:
    drop: float
    duplicate: float
    max_delay_ms: int
    lose_answer: float
    late_answer: float
    metadata_lag_ms: int
    """Extra delay of the metadata reaching brokers (behind the AlterPartition answers)."""
    cut_after_expansion: float
    """How often the leader is cut off just after the controller commits its ISR expansion."""
    min_isr: int
    replication_factor: int
    """The partition's replicas are the first brokers (the others host nothing)."""
    replica_epochs: bool
    """Followers say their broker epoch in fetches (Fetch v15+, KIP-903), or not."""

    @classmethod
    def of(cls, rng: random.Random) -> Faults:
        return cls(
            drop=rng.choice((0.0, 0.02, 0.1)),
            duplicate=rng.choice((0.0, 0.05)),
            max_delay_ms=rng.choice((2, 20, 80)),
            lose_answer=rng.choice((0.0, 0.2, 0.5)),
            late_answer=rng.choice((0.0, 0.2)),
            metadata_lag_ms=rng.choice((0, 300, 1_500)),
            cut_after_expansion=rng.choice((0.0, 0.3, 1.0)),
            min_isr=rng.choice((1, 2)),
            replication_factor=rng.choice((2, 3)),
            replica_epochs=rng.random() < 0.5,
        )

    def quiet(self) -> Faults:
        """The same cluster with every message delivered at once, in order, and answered."""
        return dataclasses.replace(
            self,
            drop=0.0,
            duplicate=0.0,
            max_delay_ms=2,
            lose_answer=0.0,
            late_answer=0.0,
            metadata_lag_ms=0,
            cut_after_expansion=0.0,
        )


class Network:
    """Messages between nodes (brokers by id, the controller as 0) over virtual time."""

    def __init__(self, rng: random.Random, timer: ManualTimer, faults: Faults) -> None:
        self.rng = rng
        self.timer = timer
        self.faults = faults
        self.cut_off: set[int] = set()

    def reachable(self, source: int, target: int) -> bool:
        return source not in self.cut_off and target not in self.cut_off

    def send(
        self, source: int, target: int, deliver: Callable[[], object], *, extra_ms: int = 0
    ) -> None:
        """Deliver later, maybe twice, maybe never; ``deliver`` checks its receiver still
        lives (a message to an earlier life of a broker is lost with it)."""
        if not self.reachable(source, target) or self.rng.random() < self.faults.drop:
            return
        copies = 2 if self.rng.random() < self.faults.duplicate else 1
        for _ in range(copies):
            delay = self.rng.randint(1, self.faults.max_delay_ms) + extra_ms
            self.timer.call_later(delay, lambda: self._arrive(source, target, deliver))

    def _arrive(self, source: int, target: int, deliver: Callable[[], object]) -> None:
        if self.reachable(source, target):
            deliver()
