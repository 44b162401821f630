"""Self-balancing's decisions (``strom.balancer.enable``), without I/O: at each check the
controller hands in the cluster's model and whether reassignments are in progress, and gets back
the moves to start and the partitions whose moves finished with a new preferred leader (to elect
it). The controller's shell carries them out as ``strom balance execute`` does.

A plan is made once and carried out a bounded number of moves at a time, each batch once no
reassignment is in progress (the previous batch, or anyone's). It is dropped and made again when
the brokers change (one added, removed or fenced) or a partition still to move no longer has the
replicas the plan started from (someone else moved it). Nothing is planned while a replica is on
a broker outside the model (fenced, or restarting): the balancer does not drain a broker that is
only away for a moment.

Loads measured while replicas and leaders move are stale (a broker's last sample may cover the
time before a leadership change), and a plan made from them undoes the one just carried out.
So once a plan's last moves are done, a new plan waits until every broker that reports load
samples has reported two more (the first may straddle the moves); a change of brokers is
planned for at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from strom.balancer.model import ClusterModel
from strom.balancer.optimizer import Move, plan_balance
from strom.common import TopicPartition

__all__ = ["SelfBalancer", "Step"]


@dataclass(frozen=True, slots=True)
class Step:
    """What to do now: ``done`` are the moves of the previous step, finished (remove their
    throttles, elect the preferred leader of :attr:`elect`); ``moves`` the ones to start."""

    moves: tuple[Move, ...] = ()
    done: tuple[Move, ...] = ()

    @property
    def elect(self) -> tuple[TopicPartition, ...]:
        """The partitions whose finished move gave them a new preferred leader."""
        return tuple(m.tp for m in self.done if m.leader_changed)


class SelfBalancer:
    """The plan being carried out and what it waits for."""

    def __init__(self, *, max_concurrent_moves: int) -> None:
        if max_concurrent_moves < 1:
            raise ValueError("max_concurrent_moves must be at least 1")
        self._batch = max_concurrent_moves
        self._pending: list[Move] = []
        self._brokers: frozenset[int] = frozenset()
        self._started: tuple[Move, ...] = ()
        self._settled_at: dict[int, int] = {}
        """Per broker, the number of load samples after which loads are fresh again."""

    @property
    def pending(self) -> tuple[Move, ...]:
        """The moves of the current plan not started yet."""
        return tuple(self._pending)

    def step(
        self, model: ClusterModel, *, reassigning: bool, samples: Mapping[int, int] | None = None
    ) -> Step:
        """The next step, given the cluster now; ``samples``: how many load samples each broker
        has reported so far (see the module doc). Raises ``BalanceError`` when no plan can meet
        the hard goals (nothing moves; the next check tries again)."""
        if reassigning or any(b not in model.by_id for p in model.partitions for b in p.replicas):
            return Step()
        samples = samples or {}
        done, self._started = self._started, ()
        if done:
            self._settled_at = {b: n + 2 for b, n in samples.items() if n > 0}
        current = {p.tp: p.replicas for p in model.partitions}
        brokers = frozenset(model.by_id)
        changed = brokers != self._brokers
        if changed or any(current.get(m.tp) != m.before for m in self._pending):
            self._pending = []
        self._brokers = brokers
        if not self._pending:
            stale = any(samples.get(b, 0) < n for b, n in self._settled_at.items() if b in brokers)
            if stale and not changed:
                return Step(done=done)
            self._pending = list(plan_balance(model).moves)
        self._started = tuple(self._pending[: self._batch])
        del self._pending[: self._batch]
        return Step(self._started, done)
