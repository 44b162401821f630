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

Self-healing (``strom.balancer.heal.broker.failure.threshold.ms``, Confluent's
``confluent.balancer.heal.broker.failure.threshold.ms``): a broker away (``away``: registered
but fenced or shutting down, or no longer registered) for longer than the threshold has failed,
and the plan drains it: every replica on it moves to live brokers, as ``--remove-broker`` plans
it. A partition with no replica left on a live broker is left where it is (nothing could copy
it). The time away is counted from the first step that saw the broker away, so a new active
controller counts afresh.

Loads measured while replicas and leaders move are stale (a broker's last sample may cover the
time before a leadership change), and a plan made from them undoes the one just carried out.
So once a plan's last moves are done, a new plan waits until every broker that reports load
samples has reported two more (the first may straddle the moves); a change of brokers is
planned for at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from strom.balancer.model import BrokerModel, ClusterModel
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

    def __init__(self, *, max_concurrent_moves: int, heal_after_ms: int | None = None) -> None:
        """``heal_after_ms``: how long a broker may be away before its replicas are moved to
        live brokers (None: never)."""
        if max_concurrent_moves < 1:
            raise ValueError("max_concurrent_moves must be at least 1")
        self._batch = max_concurrent_moves
        self._heal_after_ms = heal_after_ms
        self._away_since: dict[int, int] = {}
        self._pending: list[Move] = []
        self._brokers: tuple[frozenset[int], frozenset[int]] = (frozenset(), frozenset())
        """The brokers of the last step, and the failed ones among them."""
        self._started: tuple[Move, ...] = ()
        self._failed: frozenset[int] = frozenset()
        self._settled_at: dict[int, int] = {}
        """Per broker, the number of load samples after which loads are fresh again."""

    @property
    def pending(self) -> tuple[Move, ...]:
        """The moves of the current plan not started yet."""
        return tuple(self._pending)

    @property
    def failed(self) -> frozenset[int]:
        """The brokers being healed: away longer than the threshold at the last step."""
        return self._failed

    def _heal(self, model: ClusterModel, away: Sequence[BrokerModel], now_ms: int) -> ClusterModel:
        """``model`` with the brokers away too long added (to be drained: :attr:`failed`) and
        the partitions no live broker holds left out."""
        self._away_since = {b.id: self._away_since.get(b.id, now_ms) for b in away}
        limit = self._heal_after_ms
        failed = [b for b in away if limit is not None and now_ms - self._away_since[b.id] >= limit]
        self._failed = frozenset(b.id for b in failed)
        if not failed:
            return model
        return ClusterModel(
            (*model.brokers, *failed),
            tuple(p for p in model.partitions if any(b in model.by_id for b in p.replicas)),
        )

    def step(
        self,
        model: ClusterModel,
        *,
        reassigning: bool,
        samples: Mapping[int, int] | None = None,
        away: Sequence[BrokerModel] = (),
        now_ms: int = 0,
    ) -> Step:
        """The next step, given the cluster now; ``samples``: how many load samples each broker
        has reported so far; ``away``: the brokers that are not active, at ``now_ms`` (see the
        module doc). Raises ``BalanceError`` when no plan can meet the hard goals (nothing
        moves; the next check tries again)."""
        model = self._heal(model, away, now_ms)
        if reassigning or any(b not in model.by_id for p in model.partitions for b in p.replicas):
            return Step()
        samples = samples or {}
        done, self._started = self._started, ()
        if done:
            self._settled_at = {b: n + 2 for b, n in samples.items() if n > 0}
        current = {p.tp: p.replicas for p in model.partitions}
        brokers = (frozenset(model.by_id), self._failed)
        changed = brokers != self._brokers
        if changed or any(current.get(m.tp) != m.before for m in self._pending):
            self._pending = []
        self._brokers = brokers
        if not self._pending:
            stale = any(
                samples.get(b, 0) < n for b, n in self._settled_at.items() if b in model.by_id
            )
            if stale and not changed:
                return Step(done=done)
            self._pending = list(plan_balance(model, remove_brokers=self._failed).moves)
        self._started = tuple(self._pending[: self._batch])
        del self._pending[: self._batch]
        return Step(self._started, done)
