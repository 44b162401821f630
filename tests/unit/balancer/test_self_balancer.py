"""Self-balancing's decisions (:class:`strom.balancer.SelfBalancer`): nothing while a
reassignment runs or a replica's broker is away, a plan carried out a bounded number of moves
at a time until the counts are even, and a plan made again when the brokers change or someone
else moved a partition it was to move."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from strom.balancer import BalanceError, BrokerModel, ClusterModel, PartitionModel, SelfBalancer
from strom.balancer.optimizer import Move
from strom.common import TopicPartition


def _skewed(brokers: int = 4) -> ClusterModel:
    """Twelve partitions of factor 2 on brokers 1-3 (most on 1 and 2); brokers up to ``brokers``."""
    partitions = tuple(
        PartitionModel(TopicPartition("t", p), (1, 2) if p % 3 else (3, 1)) for p in range(12)
    )
    return ClusterModel(tuple(BrokerModel(b) for b in range(1, brokers + 1)), partitions)


def _apply(model: ClusterModel, moves: tuple[Move, ...]) -> ClusterModel:
    after = {m.tp: m.after for m in moves}
    partitions = tuple(
        dataclasses.replace(p, replicas=after.get(p.tp, p.replicas)) for p in model.partitions
    )
    return dataclasses.replace(model, partitions=partitions)


def test_nothing_while_a_reassignment_is_in_progress() -> None:
    balancer = SelfBalancer(max_concurrent_moves=3)
    step = balancer.step(_skewed(), reassigning=True)
    assert step.moves == () and step.done == ()
    assert balancer.pending == ()


def test_nothing_while_a_replica_is_on_a_broker_that_is_away() -> None:
    model = _skewed()
    away = dataclasses.replace(model, brokers=tuple(b for b in model.brokers if b.id != 3))
    assert SelfBalancer(max_concurrent_moves=3).step(away, reassigning=False).moves == ()


def test_a_new_broker_gets_its_share_a_bounded_number_of_moves_at_a_time() -> None:
    balancer = SelfBalancer(max_concurrent_moves=2)
    model = _skewed()
    started: list[Move] = []
    last: tuple[Move, ...] = ()
    for _ in range(20):
        step = balancer.step(model, reassigning=False)
        assert len(step.moves) <= 2
        assert step.done == last
        assert step.elect == tuple(m.tp for m in step.done if m.leader_changed)
        if not step.moves:
            break
        assert balancer.step(model, reassigning=True).moves == ()  # the batch is copying
        started.extend(step.moves)
        last = step.moves
        model = _apply(model, step.moves)
    assert started, "nothing moved"
    replicas = Counter(b for p in model.partitions for b in p.replicas)
    leaders = Counter(p.replicas[0] for p in model.partitions)
    for counts in (replicas, leaders):
        average = sum(counts.values()) / 4
        assert all(abs(counts[b] - average) <= max(0.1 * average, 1) for b in range(1, 5)), counts
    assert balancer.step(model, reassigning=False).moves == ()


def test_the_plan_is_made_again_when_the_brokers_change() -> None:
    balancer = SelfBalancer(max_concurrent_moves=1)
    first = balancer.step(_skewed(brokers=4), reassigning=False)
    assert first.moves and balancer.pending
    model = _apply(_skewed(brokers=5), first.moves)
    second = balancer.step(model, reassigning=False)
    assert second.done == first.moves
    assert any(5 in m.after for m in (*second.moves, *balancer.pending)), "broker 5 is planned for"


def test_the_plan_is_made_again_when_someone_else_moved_a_partition() -> None:
    balancer = SelfBalancer(max_concurrent_moves=1)
    model = _skewed()
    first = balancer.step(model, reassigning=False)
    model = _apply(model, first.moves)
    victim = balancer.pending[0]
    moved = dataclasses.replace(victim, after=tuple(reversed(victim.before)))
    model = _apply(model, (moved,))
    balancer.step(model, reassigning=False)
    current = {p.tp: p.replicas for p in model.partitions}
    assert all(current[m.tp] == m.before for m in balancer.pending)


def test_a_plan_that_cannot_meet_the_hard_goals_moves_nothing() -> None:
    model = ClusterModel(
        (BrokerModel(1, rack="a"), BrokerModel(2, rack="a")),
        (PartitionModel(TopicPartition("t", 0), (1, 2)),),
    )
    balancer = SelfBalancer(max_concurrent_moves=1)
    with pytest.raises(BalanceError, match="span only 1 rack"):
        balancer.step(model, reassigning=False)
    assert balancer.pending == ()


def test_a_new_plan_waits_for_loads_measured_after_the_last_moves() -> None:
    balancer = SelfBalancer(max_concurrent_moves=100)
    model = _skewed()
    first = balancer.step(model, reassigning=False, samples={1: 5, 2: 5, 3: 5, 4: 0})
    assert first.moves and not balancer.pending
    model = _apply(model, first.moves)
    hot = dataclasses.replace(  # the loads now make broker 1 look hot: a plan would move
        model,
        partitions=tuple(
            dataclasses.replace(p, bytes_in=1e6 if p.replicas[0] == 1 else 0.0)
            for p in model.partitions
        ),
    )
    done = balancer.step(hot, reassigning=False, samples={1: 6, 2: 5, 3: 6, 4: 0})
    assert done.done == first.moves and done.moves == ()
    # one more sample each: the first after the moves may straddle them
    assert balancer.step(hot, reassigning=False, samples={1: 7, 2: 7, 3: 7}).moves == ()
    # broker 4 never reported samples: not waited for
    assert balancer.step(hot, reassigning=False, samples={1: 8, 2: 8, 3: 8}).moves


def test_a_changed_set_of_brokers_is_planned_for_at_once() -> None:
    balancer = SelfBalancer(max_concurrent_moves=100)
    first = balancer.step(_skewed(brokers=3), reassigning=False, samples={1: 1, 2: 1, 3: 1})
    model = _apply(_skewed(brokers=3), first.moves)
    balancer.step(model, reassigning=False, samples={1: 1, 2: 1, 3: 1})
    grown = dataclasses.replace(model, brokers=(*model.brokers, BrokerModel(4)))
    assert balancer.step(grown, reassigning=False, samples={1: 1, 2: 1, 3: 1}).moves


def _without(model: ClusterModel, broker: int) -> tuple[ClusterModel, tuple[BrokerModel, ...]]:
    """``model`` with ``broker`` away (fenced): out of the model, in the away list."""
    away = tuple(b for b in model.brokers if b.id == broker)
    return dataclasses.replace(
        model, brokers=tuple(b for b in model.brokers if b.id != broker)
    ), away


def test_a_broker_away_longer_than_the_threshold_is_drained() -> None:
    balancer = SelfBalancer(max_concurrent_moves=100, heal_after_ms=60_000)
    model, away = _without(_skewed(brokers=4), 3)
    assert balancer.step(model, reassigning=False, away=away, now_ms=1_000).moves == ()
    assert balancer.step(model, reassigning=False, away=away, now_ms=60_999).moves == ()
    step = balancer.step(model, reassigning=False, away=away, now_ms=61_000)
    assert balancer.failed == {3}
    assert {m.tp for m in step.moves} >= {p.tp for p in model.partitions if 3 in p.replicas}
    healed = _apply(_skewed(brokers=4), step.moves)
    assert not any(3 in p.replicas for p in healed.partitions)
    # done: the drained broker stays away and nothing more moves
    healed_model, _ = _without(healed, 3)
    after = balancer.step(healed_model, reassigning=False, away=away, now_ms=62_000)
    assert after.done == step.moves and after.moves == ()


def test_the_time_away_starts_again_when_the_broker_comes_back() -> None:
    balancer = SelfBalancer(max_concurrent_moves=100, heal_after_ms=60_000)
    full = _skewed(brokers=3)
    model, away = _without(full, 3)
    balancer.step(model, reassigning=False, away=away, now_ms=0)
    balancer.step(full, reassigning=False, now_ms=30_000)  # back: balanced, nothing to do
    assert balancer.step(model, reassigning=False, away=away, now_ms=70_000).moves == ()
    assert balancer.step(model, reassigning=False, away=away, now_ms=130_000).moves


def test_without_a_threshold_nothing_is_healed() -> None:
    balancer = SelfBalancer(max_concurrent_moves=100)
    model, away = _without(_skewed(brokers=4), 3)
    assert balancer.step(model, reassigning=False, away=away, now_ms=10**12).moves == ()


def test_a_partition_no_live_broker_holds_is_left_where_it_is() -> None:
    balancer = SelfBalancer(max_concurrent_moves=100, heal_after_ms=0)
    lonely = PartitionModel(TopicPartition("single", 0), (3,))
    full = _skewed(brokers=4)
    model, away = _without(dataclasses.replace(full, partitions=(*full.partitions, lonely)), 3)
    step = balancer.step(model, reassigning=False, away=away, now_ms=0)
    assert step.moves and lonely.tp not in {m.tp for m in step.moves}
