"""Properties of the balancing core (:mod:`strom.balancer`): the hard goals hold after any plan,
counts come within 10% of even where the racks allow it, no partition loses a replica, and the
same model always gives the same plan."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strom.balancer import BalanceError, BrokerModel, ClusterModel, PartitionModel, plan_balance
from strom.balancer.model import rack_of
from strom.common import TopicPartition

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw: st.DrawFn, *, even_racks: bool = False, uniform: bool = False) -> ClusterModel:
    """A cluster of 3 to 6 brokers (racked or not) with partitions placed on a few of them."""
    racks = draw(st.sampled_from([0, 2, 3]))
    if even_racks and racks:  # as many brokers in each rack
        count = racks * draw(st.integers(-(-3 // racks), 2))
    else:
        count = draw(st.integers(3, 6))
    brokers = tuple(
        BrokerModel(b, rack=f"r{b % racks}" if racks else None) for b in range(1, count + 1)
    )
    span = len({rack_of(b) for b in brokers})
    factor_max = min(3, span)
    partitions = []
    same_factor = draw(st.integers(1, factor_max))
    for i in range(draw(st.integers(1, 30))):
        # uniform: one factor, so a leader's outbound bytes do not depend on the partition
        factor = same_factor if uniform else draw(st.integers(1, factor_max))
        crowd = draw(st.integers(factor, count))  # skew: replicas on the first brokers only
        replicas = draw(st.permutations(range(1, crowd + 1)))[:factor]
        size = 1000 if uniform else draw(st.integers(0, 10_000))
        rate = 10.0 if uniform else float(draw(st.integers(0, 100)))
        partitions.append(
            PartitionModel(TopicPartition(f"t{i % 3}", i), tuple(replicas), size, rate, rate)
        )
    return ClusterModel(brokers, tuple(partitions))


def _after(
    model: ClusterModel, removed: frozenset[int] = frozenset()
) -> dict[TopicPartition, tuple[int, ...]]:
    plan = plan_balance(model, remove_brokers=removed)
    assignment = {p.tp: p.replicas for p in model.partitions}
    assignment.update({m.tp: m.after for m in plan.moves})
    return assignment


def _assert_hard_goals(
    model: ClusterModel,
    assignment: dict[TopicPartition, tuple[int, ...]],
    removed: frozenset[int] = frozenset(),
) -> None:
    for p in model.partitions:
        replicas = assignment[p.tp]
        assert len(replicas) == len(p.replicas)  # the replication factor is kept
        assert len(set(replicas)) == len(replicas)
        assert not set(replicas) & removed
        assert all(b in model.by_id for b in replicas)
        racks = [rack_of(model.by_id[b]) for b in replicas]
        assert len(set(racks)) == len(racks), (p.tp, replicas)


def _within_ten_percent(counts: Counter[int], brokers: list[int]) -> None:
    average = sum(counts.values()) / len(brokers)
    for b in brokers:
        assert abs(counts[b] - average) <= max(0.1 * average, 1.0), (counts, average)


@_SETTINGS
@given(clusters())
def test_hard_goals_hold_and_no_partition_loses_a_replica(model: ClusterModel) -> None:
    try:
        assignment = _after(model)
    except BalanceError:
        return
    _assert_hard_goals(model, assignment)


@_SETTINGS
@given(clusters(even_racks=True, uniform=True))
def test_replica_and_leader_counts_come_within_ten_percent_of_even(model: ClusterModel) -> None:
    assignment = _after(model)
    _assert_hard_goals(model, assignment)
    brokers = sorted(model.by_id)
    _within_ten_percent(Counter(b for r in assignment.values() for b in r), brokers)
    _within_ten_percent(Counter(r[0] for r in assignment.values()), brokers)


@_SETTINGS
@given(clusters(), st.data())
def test_a_removed_broker_is_drained(model: ClusterModel, data: st.DataObject) -> None:
    victim = data.draw(st.sampled_from(sorted(model.by_id)))
    try:
        assignment = _after(model, frozenset({victim}))
    except BalanceError as error:
        assert "\n" not in str(error)
        return
    _assert_hard_goals(model, assignment, frozenset({victim}))


@_SETTINGS
@given(clusters(uniform=True))
def test_added_brokers_only_receive(model: ClusterModel) -> None:
    new = max(model.by_id) + 1
    rack = model.brokers[0].rack
    grown = ClusterModel((*model.brokers, BrokerModel(new, rack=rack)), model.partitions)
    try:
        plan = plan_balance(grown, add_brokers=frozenset({new}))
    except BalanceError:
        return
    rack_aware = all(
        len({rack_of(grown.by_id[b]) for b in p.replicas}) == len(p.replicas)
        for p in grown.partitions
    )
    if rack_aware:  # otherwise the rack goal, being higher, moves replicas anywhere
        for move in plan.moves:
            assert set(move.adding) <= {new}
    assignment = {p.tp: p.replicas for p in grown.partitions} | {m.tp: m.after for m in plan.moves}
    _assert_hard_goals(grown, assignment)


@_SETTINGS
@given(clusters())
def test_plans_are_deterministic(model: ClusterModel) -> None:
    try:
        first = plan_balance(model)
    except BalanceError as error:
        with pytest.raises(BalanceError, match=str(error)):
            plan_balance(model)
        return
    assert plan_balance(model) == first


def _three_partitions(racks: list[str | None]) -> ClusterModel:
    brokers = tuple(BrokerModel(b + 1, rack=r) for b, r in enumerate(racks))
    partitions = tuple(PartitionModel(TopicPartition("orders", i), (1, 2, 3)) for i in range(3))
    return ClusterModel(brokers, partitions)


def test_too_few_racks_is_refused_naming_what_to_change() -> None:
    with pytest.raises(
        BalanceError,
        match=r"orders-0 has 3 replicas but the brokers span only "
        r"2 rack\(s\) \(a, b\): add a broker in another rack",
    ):
        plan_balance(_three_partitions(["a", "a", "b", "b"]))


def test_an_unknown_broker_is_refused() -> None:
    with pytest.raises(
        BalanceError, match="--add-broker names broker 9, which is not in the cluster"
    ):
        plan_balance(_three_partitions([None] * 4), add_brokers=frozenset({9}))


def test_removing_below_the_replication_factor_is_refused() -> None:
    with pytest.raises(BalanceError, match="orders-0 has 3 replicas but only 2 broker"):
        plan_balance(_three_partitions([None] * 3), remove_brokers=frozenset({3}))


def test_a_fair_share_moves_onto_a_new_broker() -> None:
    model = _three_partitions([None] * 4)
    grown = ClusterModel(
        model.brokers,
        tuple(
            PartitionModel(
                TopicPartition("orders", i), (1 + i % 3, 1 + (i + 1) % 3, 1 + (i + 2) % 3), size=100
            )
            for i in range(12)
        ),
    )
    plan = plan_balance(grown, add_brokers=frozenset({4}))
    assert plan.after["replicas"] == {1: 9.0, 2: 9.0, 3: 9.0, 4: 9.0}
    assert plan.after["leaders"] == {1: 3.0, 2: 3.0, 3: 3.0, 4: 3.0}
    assert plan.data_to_move == 900


def test_capacity_is_a_hard_goal() -> None:
    brokers = (BrokerModel(1, max_replicas=1), BrokerModel(2), BrokerModel(3, disk_capacity=50))
    parts = tuple(PartitionModel(TopicPartition("t", i), (1,), size=100) for i in range(3))
    plan = plan_balance(ClusterModel(brokers, parts))
    after = Counter(m.after[0] for m in plan.moves) + Counter({1: 3 - len(plan.moves)})
    assert after[1] <= 1
    assert after[3] == 0


def test_byte_rates_move_hot_partitions_apart() -> None:
    """Even replica and leader counts, but both hot partitions on broker 1: the network goals
    (the brokers' measured per-partition byte rates) swap one hot partition away."""
    rates = {1: 100.0, 2: 100.0, 3: 1.0, 4: 1.0, 5: 1.0, 6: 1.0}
    placement = {1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3}
    model = ClusterModel(
        tuple(BrokerModel(b) for b in (1, 2, 3)),
        tuple(
            PartitionModel(TopicPartition("t", i), (placement[i],), 0, rates[i], rates[i])
            for i in sorted(placement)
        ),
    )
    plan = plan_balance(model)
    assert plan.before["nw_in"][1] == 200.0
    assert max(plan.after["nw_in"].values()) == 101.0
    assert max(plan.after["nw_out"].values()) == 101.0
    after = _after(model)
    assert {after[TopicPartition("t", 1)], after[TopicPartition("t", 2)]} != {(1,)}
    assert sorted(Counter(r[0] for r in after.values()).values()) == [2, 2, 2]
