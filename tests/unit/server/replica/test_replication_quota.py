"""Replication throttles: which replicas a topic's lists name, and the sampled rate."""

from __future__ import annotations

import math

from strom.common import TopicPartition
from strom.common.clock import ManualClock
from strom.server.replica.replication_quota import ReplicationQuota, throttled_partitions


def test_a_throttled_list_names_partitions_on_one_broker() -> None:
    entries = ["0:1", "0:2", "1:2", " 2:1 "]
    assert throttled_partitions(entries, 1) == frozenset({0, 2})
    assert throttled_partitions(entries, 2) == frozenset({0, 1})
    assert throttled_partitions(entries, 3) == frozenset()
    assert throttled_partitions(["*"], 3) is None  # every replica


ORDERS_0 = TopicPartition("orders", 0)


def quota(clock: ManualClock, bound: float = 1000) -> ReplicationQuota:
    throttled = ReplicationQuota(clock, windows=3, window_ms=1000)
    throttled.configure(bound, {"orders": frozenset({0}), "all": None, "none": frozenset()})
    return throttled


def test_only_the_named_partitions_are_throttled() -> None:
    throttled = quota(ManualClock())
    assert throttled.is_throttled(TopicPartition("orders", 0))
    assert not throttled.is_throttled(TopicPartition("orders", 1))
    assert throttled.is_throttled(TopicPartition("all", 7))
    assert not throttled.is_throttled(TopicPartition("none", 0))
    assert not throttled.is_throttled(TopicPartition("other", 0))


def test_the_rate_spans_at_least_all_but_one_window_and_forgets_old_ones() -> None:
    clock = ManualClock()
    throttled = quota(clock)
    throttled.record(ORDERS_0, 1500)
    assert throttled.rate() == 750  # over two windows at least: a burst is spread
    assert not throttled.is_quota_exceeded()
    clock.advance(500)
    throttled.record(ORDERS_0, 1001)
    assert throttled.rate() == 2501 / 2.5  # all but one window, plus the half passed
    assert throttled.is_quota_exceeded()
    clock.advance(3000)  # every window older than three is gone
    assert throttled.rate() == 0
    assert not throttled.is_quota_exceeded()


def test_without_a_bound_nothing_is_exceeded() -> None:
    clock = ManualClock()
    throttled = quota(clock, bound=math.inf)
    throttled.record(ORDERS_0, 10**9)
    assert not throttled.is_quota_exceeded()


def test_only_an_out_of_sync_throttled_replica_is_held_back_and_counted() -> None:
    throttled = quota(ManualClock())
    throttled.record(TopicPartition("orders", 1), 10**6)  # not throttled: not counted
    assert throttled.rate() == 0
    throttled.record(ORDERS_0, 10**6)
    assert throttled.holds_back(ORDERS_0, in_sync=False)
    assert not throttled.holds_back(ORDERS_0, in_sync=True)  # the ISR keeps up at full speed
    assert not throttled.holds_back(TopicPartition("orders", 1), in_sync=False)
