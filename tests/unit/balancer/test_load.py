"""The balancer's load from the brokers' counters (:mod:`strom.balancer.load`): rates over the
sampling interval, counters that start again, and the controller's combination of the brokers'
samples into one load per partition."""

from __future__ import annotations

from strom.balancer import ClusterModel, PartitionModel, plan_balance
from strom.balancer.load import LoadReports, RateSampler, ReplicaLoad, partition_loads, with_loads
from strom.balancer.model import BrokerModel
from strom.common import TopicPartition

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)


def test_rates_are_the_bytes_counted_over_the_interval() -> None:
    sampler = RateSampler()
    first = sampler.sample(1000, {("a", 0): [500, 100]}, {A0: 4096, A1: 10})
    assert first == (ReplicaLoad(A0, 4096), ReplicaLoad(A1, 10))  # no interval yet
    second = sampler.sample(3000, {("a", 0): [2500, 300], ("a", 1): [40, 0]}, {A0: 8192, A1: 50})
    assert second == (ReplicaLoad(A0, 8192, 1000.0, 100.0), ReplicaLoad(A1, 50, 20.0, 0.0))
    assert sampler.latest == second


def test_a_counter_that_started_again_counts_from_zero() -> None:
    sampler = RateSampler()
    sampler.sample(0, {("a", 0): [10_000, 10_000]}, {A0: 1})
    # the partition left and came back: its counters were dropped and count again from zero
    assert sampler.sample(1000, {("a", 0): [300, 20_000]}, {A0: 1}) == (
        ReplicaLoad(A0, 1, 300.0, 10_000.0),
    )


def test_partitions_not_held_are_not_reported() -> None:
    sampler = RateSampler()
    sampler.sample(0, {}, {A0: 1})
    assert sampler.sample(1000, {("a", 0): [10, 0], ("b", 0): [99, 99]}, {A0: 1}) == (
        ReplicaLoad(A0, 1, 10.0, 0.0),
    )


def test_partition_loads_take_the_largest_replica_and_rates() -> None:
    """A leadership change: the old leader's last sample and the new one's both measured the
    partition; the rates are not counted twice."""
    loads = partition_loads(
        [ReplicaLoad(A0, 100, 50.0, 10.0), ReplicaLoad(A0, 120, 45.0, 12.0), ReplicaLoad(A1, 7)]
    )
    assert loads == {A0: ReplicaLoad(A0, 120, 50.0, 12.0), A1: ReplicaLoad(A1, 7)}


def test_the_controller_combines_the_latest_samples_of_live_brokers_only() -> None:
    reports = LoadReports()
    reports.report(1, [ReplicaLoad(A0, 100, 1.0, 1.0)])
    reports.report(1, [ReplicaLoad(A0, 100, 80.0, 40.0)])  # replaces the earlier sample
    reports.report(2, [ReplicaLoad(A0, 90, 0.0, 0.0), ReplicaLoad(A1, 5, 3.0, 0.0)])
    reports.report(3, [ReplicaLoad(A1, 5, 1000.0, 1000.0)])  # broker 3 is fenced
    assert reports.loads({1, 2}) == {
        A0: ReplicaLoad(A0, 100, 80.0, 40.0),
        A1: ReplicaLoad(A1, 5, 3.0, 0.0),
    }


def test_measured_rates_reach_the_network_goals() -> None:
    """Two hot partitions led by broker 1, counts even: with the brokers' samples applied the
    plan moves one hot leadership away; without them there is nothing to do."""
    brokers = (BrokerModel(1), BrokerModel(2))
    partitions = tuple(
        PartitionModel(TopicPartition("t", i), (1, 2) if i < 2 else (2, 1)) for i in range(4)
    )
    assert not plan_balance(ClusterModel(brokers, partitions)).moves
    reports = LoadReports()
    reports.report(1, [ReplicaLoad(TopicPartition("t", i), 0, 1e6, 1e6) for i in range(2)])
    loaded = with_loads(partitions, reports.loads({1, 2}))
    assert loaded[3] == partitions[3]  # nothing reported: unchanged
    plan = plan_balance(ClusterModel(brokers, loaded))
    led = {p.tp: p.replicas[0] for p in partitions} | {m.tp: m.after[0] for m in plan.moves}
    assert sorted(led[TopicPartition("t", i)] for i in range(2)) == [1, 2]  # hot ones split
    assert sorted(led.values()) == [1, 1, 2, 2]  # leader counts still even


def test_rates_that_differ_by_noise_alone_move_nothing() -> None:
    """Four hot partitions on three brokers: one broker must lead two. Measured rates differ by
    a few percent; trading a hot partition to another broker would only move the pair."""
    brokers = tuple(BrokerModel(b) for b in (1, 2, 3))
    hot = {("h", 0): (1, 100.0), ("h", 1): (1, 100.0), ("h", 2): (2, 104.0), ("h", 3): (3, 98.0)}
    partitions = [
        PartitionModel(TopicPartition(t, p), (b,), 0, rate, rate)
        for (t, p), (b, rate) in hot.items()
    ]
    partitions += [PartitionModel(TopicPartition("c", b), (b,)) for b in (2, 3)]
    assert plan_balance(ClusterModel(brokers, tuple(partitions))).moves == ()
