"""From a :class:`ClusterModel` to a :class:`Plan`, goal by goal in Cruise Control's default
order. Hard goals first (rack awareness, replica capacity, disk capacity): replicas that break
them move, or the plan is refused. Then each soft goal (replica, disk, network inbound, network
outbound and leader distribution) is optimised by greedy moves that each strictly lower its
imbalance (the sum of squared per-broker loads; a resource goal's by a margin, ``_MARGIN``,
so that noise in measured loads moves nothing), and that no higher goal rejects: a move may
not break a hard goal, nor take a broker further out of a higher soft goal's bounds.

Actions: relocate one replica (the partition keeps its replication factor and replica order),
swap two replicas of different partitions between two brokers (keeps replica counts, so a
resource goal can act after the replica goal), and leadership moves (reorder the replicas).
Everything iterates in sorted order, so the same model always gives the same plan.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from strom.balancer.model import BalanceError, ClusterModel, PartitionModel, check_feasible, rack_of
from strom.common import TopicPartition

__all__ = ["GOALS", "METRICS", "Move", "Plan", "plan_balance"]

GOALS = (
    "RackAwareGoal",
    "ReplicaCapacityGoal",
    "DiskCapacityGoal",
    "ReplicaDistributionGoal",
    "DiskUsageDistributionGoal",
    "NetworkInboundUsageDistributionGoal",
    "NetworkOutboundUsageDistributionGoal",
    "LeaderReplicaDistributionGoal",
)
METRICS = ("replicas", "disk", "nw_in", "nw_out", "leaders")
_COUNTS = frozenset({"replicas", "leaders"})
_BALANCE = 0.10
_EPSILON = 1e-9
_MARGIN = 0.2
"""A resource goal's move must lower its sum of squares by this much of the largest partition
load it moves, squared: moving load L from a broker at S to one at D then needs S - D > 1.1 L,
so that measured rates that differ by noise alone neither trade one hot partition for another
nor swap two of nearly the same load (two copies for a net gain of little)."""
_MAX_STEPS = 100_000

Loads = dict[str, dict[int, float]]


@dataclass(frozen=True, slots=True)
class Move:
    """One partition's replica list before and after (preferred leader first)."""

    tp: TopicPartition
    before: tuple[int, ...]
    after: tuple[int, ...]

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.after if b not in self.before)

    @property
    def leader_changed(self) -> bool:
        return self.before[0] != self.after[0]


@dataclass(frozen=True, slots=True)
class Plan:
    """The moves, the per-broker loads before and after them, and the bytes they copy."""

    moves: tuple[Move, ...]
    before: Loads
    after: Loads
    data_to_move: int


def _contribution(p: PartitionModel, replicas: tuple[int, ...]) -> Iterator[tuple[str, int, float]]:
    for b in replicas:
        yield "replicas", b, 1.0
        yield "disk", b, float(p.size)
        yield "nw_in", b, p.bytes_in
    leader = replicas[0]
    yield "leaders", leader, 1.0
    yield "nw_out", leader, p.bytes_out + p.bytes_in * (len(replicas) - 1)


class _State:
    """The assignment being improved and the per-broker loads it implies."""

    def __init__(self, model: ClusterModel, alive: list[int], added: set[int]) -> None:
        self.model = model
        self.alive = alive
        self.added = added
        self.assignment = [p.replicas for p in model.partitions]
        ids = set(model.by_id) | {b for p in model.partitions for b in p.replicas}
        self.load: Loads = {m: dict.fromkeys(sorted(ids), 0.0) for m in METRICS}
        self.hosted: dict[int, set[int]] = {b: set() for b in ids}
        for i, p in enumerate(model.partitions):
            self._add(i, p.replicas, 1.0)
        self.bounds: dict[str, tuple[float, float]] = {}
        for m in METRICS:
            avg = sum(self.load[m][b] for b in ids) / len(alive)
            if m in _COUNTS:
                low = min(math.floor(avg), math.ceil(avg * (1 - _BALANCE)))
                high = max(math.ceil(avg), math.floor(avg * (1 + _BALANCE)))
                self.bounds[m] = (float(low), float(high))
            else:
                self.bounds[m] = (avg * (1 - _BALANCE), avg * (1 + _BALANCE))

    def _add(self, i: int, replicas: tuple[int, ...], sign: float) -> None:
        for m, b, value in _contribution(self.model.partitions[i], replicas):
            self.load[m][b] += sign * value
        for b in replicas:
            if sign > 0:
                self.hosted[b].add(i)
            else:
                self.hosted[b].discard(i)

    def apply(self, changes: dict[int, tuple[int, ...]]) -> None:
        for i, replicas in changes.items():
            self._add(i, self.assignment[i], -1.0)
            self._add(i, replicas, 1.0)
            self.assignment[i] = replicas

    def deltas(self, changes: dict[int, tuple[int, ...]]) -> Loads:
        out: Loads = {m: {} for m in METRICS}
        for i, replicas in changes.items():
            p = self.model.partitions[i]
            for sign, reps in ((-1.0, self.assignment[i]), (1.0, replicas)):
                for m, b, value in _contribution(p, reps):
                    out[m][b] = out[m].get(b, 0.0) + sign * value
        return out

    def violation(self, metric: str, broker: int, value: float) -> float:
        low, high = self.bounds[metric]
        return max(0.0, low - value, value - high)

    def hard_ok(self, changes: dict[int, tuple[int, ...]], delta: Loads) -> bool:
        for i, replicas in changes.items():
            if any(b not in self.alive for b in replicas if b not in self.assignment[i]):
                return False
            racks = [rack_of(self.model.by_id[b]) for b in replicas]
            if len(set(racks)) < len(racks):
                return False
        for b, d in delta["replicas"].items():
            limit = self.model.by_id[b].max_replicas if b in self.model.by_id else None
            if d > 0 and limit is not None and self.load["replicas"][b] + d > limit:
                return False
        for b, d in delta["disk"].items():
            cap = self.model.by_id[b].disk_capacity if b in self.model.by_id else None
            if d > 0 and cap is not None and self.load["disk"][b] + d > cap:
                return False
        return True

    def accepts(self, goal: int, changes: dict[int, tuple[int, ...]]) -> bool:
        """Whether the move improves METRICS[goal] and no higher goal rejects it."""
        delta = self.deltas(changes)
        if not self.hard_ok(changes, delta):
            return False
        for m in METRICS[:goal]:
            for b, d in delta[m].items():
                if b in self.alive and abs(d) > _EPSILON:
                    old = self.load[m][b]
                    if self.violation(m, b, old + d) > self.violation(m, b, old) + _EPSILON:
                        return False
        metric = METRICS[goal]
        gain = sum(
            (self.load[metric][b] + d) ** 2 - self.load[metric][b] ** 2
            for b, d in delta[metric].items()
        )
        if metric in _COUNTS:
            scale = max(1.0, max((abs(d) for d in delta[metric].values()), default=1.0))
            return gain < -_EPSILON * scale * scale
        moved = max(
            (
                value
                for i in changes
                for m, _, value in _contribution(self.model.partitions[i], self.assignment[i])
                if m == metric
            ),
            default=0.0,
        )
        return gain < -_MARGIN * max(moved, _EPSILON) ** 2

    # The actions a goal may try, most promising first.

    def _relocations(self, metric: str, src: int, dst: int) -> Iterator[dict[int, tuple[int, ...]]]:
        if self.added and dst not in self.added:
            return
        parts = [i for i in self.hosted[src] if dst not in self.assignment[i]]
        if metric in {"leaders", "nw_out"}:
            parts = [i for i in parts if self.assignment[i][0] == src]
        for i in sorted(parts, key=lambda i: self._order(metric, i, src)):
            yield {i: tuple(dst if b == src else b for b in self.assignment[i])}

    def _order(self, metric: str, i: int, src: int) -> tuple[float, int]:
        p = self.model.partitions[i]
        if metric in _COUNTS:  # the cheapest copy first; followers before leaders
            return (float(p.size) + (0.5 if self.assignment[i][0] == src else 0.0), i)
        weight = {"disk": float(p.size), "nw_in": p.bytes_in, "nw_out": p.bytes_out + p.bytes_in}
        return (-weight[metric], i)

    def _leaderships(self, src: int, dst: int) -> Iterator[dict[int, tuple[int, ...]]]:
        for i in sorted(self.hosted[src] & self.hosted[dst]):
            replicas = self.assignment[i]
            if replicas[0] == src:
                yield {i: (dst, *(b for b in replicas if b != dst))}

    def _swaps(self, metric: str, src: int, dst: int) -> Iterator[dict[int, tuple[int, ...]]]:
        if self.added:
            return
        outs = sorted(
            (i for i in self.hosted[src] if dst not in self.assignment[i]),
            key=lambda i: self._order(metric, i, src),
        )
        ins = sorted(
            (i for i in self.hosted[dst] if src not in self.assignment[i]),
            key=lambda i: self._order(metric, i, dst),
            reverse=True,
        )
        for i in outs:
            for j in ins:
                yield {
                    i: tuple(dst if b == src else b for b in self.assignment[i]),
                    j: tuple(src if b == dst else b for b in self.assignment[j]),
                }

    def _actions(self, goal: int, src: int, dst: int) -> Iterator[dict[int, tuple[int, ...]]]:
        metric = METRICS[goal]
        if metric in ("leaders", "nw_out"):
            yield from self._leaderships(src, dst)
        yield from self._relocations(metric, src, dst)
        if metric not in _COUNTS:
            yield from self._swaps(metric, src, dst)

    def optimise(self, goal: int) -> None:
        """Greedy moves for one soft goal until none is accepted."""
        metric = METRICS[goal]
        low, high = self.bounds[metric]
        for _ in range(_MAX_STEPS):
            load = self.load[metric]
            order = sorted(self.alive, key=lambda b: (-load[b], b))
            found = None
            for src in order:
                for dst in reversed(order):
                    if load[src] - load[dst] <= _EPSILON:
                        break
                    if load[src] <= high + _EPSILON and load[dst] >= low - _EPSILON:
                        continue
                    found = next(
                        (a for a in self._actions(goal, src, dst) if self.accepts(goal, a)), None
                    )
                    if found is not None:
                        break
                if found is not None:
                    break
            if found is None:
                return
            self.apply(found)

    # The hard goals: replicas that break them move, or the plan is refused.

    def fix_hard_goals(self) -> None:
        for i, p in enumerate(self.model.partitions):
            kept: list[int] = []
            for b in self.assignment[i]:
                rack = rack_of(self.model.by_id[b]) if b in self.model.by_id else None
                racks = {rack_of(self.model.by_id[k]) for k in kept}
                if b in self.alive and rack not in racks:
                    kept.append(b)
                    continue
                self._relocate_away(i, b, f"{p.tp.topic}-{p.tp.partition}")
                kept.append(next(k for k in self.assignment[i] if k not in kept))
        for b in self.alive:
            limit = self.model.by_id[b].max_replicas
            cap = self.model.by_id[b].disk_capacity
            for i in sorted(self.hosted[b], key=lambda i: self.model.partitions[i].size):
                if limit is not None and self.load["replicas"][b] > limit:
                    self._relocate_away(i, b, f"broker {b}'s replicas")
            for i in sorted(self.hosted[b], key=lambda i: -self.model.partitions[i].size):
                if cap is not None and self.load["disk"][b] > cap:
                    self._relocate_away(i, b, f"broker {b}'s disk")

    def _relocate_away(self, i: int, src: int, what: str) -> None:
        replicas = self.assignment[i]
        for dst in sorted(
            self.alive, key=lambda b: (self.load["replicas"][b], self.load["disk"][b], b)
        ):
            if dst in replicas:
                continue
            change = {i: tuple(dst if b == src else b for b in replicas)}
            if self.hard_ok(change, self.deltas(change)):
                self.apply(change)
                return
        raise BalanceError(
            f"no broker can take a replica of {what} without breaking rack awareness or "
            "a capacity: add a broker (in another rack) or raise the capacities"
        )


def plan_balance(
    model: ClusterModel,
    *,
    add_brokers: frozenset[int] = frozenset(),
    remove_brokers: frozenset[int] = frozenset(),
) -> Plan:
    """The moves that meet the hard goals and even out the soft ones, in order.

    ``add_brokers``: replicas move only onto these (a fair share onto new brokers).
    ``remove_brokers``: every replica moves off these (a drain)."""
    alive = sorted(b for b in model.by_id if b not in remove_brokers)
    check_feasible(model, alive, set(remove_brokers), set(add_brokers))
    state = _State(model, alive, set(add_brokers))
    before = {m: dict(v) for m, v in state.load.items()}
    state.fix_hard_goals()
    for goal in range(len(METRICS)):
        state.optimise(goal)
    moves = tuple(
        Move(p.tp, p.replicas, after)
        for p, after in zip(model.partitions, state.assignment, strict=True)
        if after != p.replicas
    )
    sizes = {p.tp: p.size for p in model.partitions}
    return Plan(
        moves=tuple(sorted(moves, key=lambda m: m.tp)),
        before=before,
        after={m: dict(v) for m, v in state.load.items()},
        data_to_move=sum(sizes[m.tp] * len(m.adding) for m in moves),
    )
