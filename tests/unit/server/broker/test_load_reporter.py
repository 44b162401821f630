"""The broker's load reporter (:mod:`strom.server.broker.load_reporter`): a sample per
interval, carried by heartbeats until one is answered, sent again after the connection to the
controller was lost, and counters of partitions no longer held dropped."""

from __future__ import annotations

from strom.common import TopicPartition
from strom.common.clock import ManualClock
from strom.server.broker.load_reporter import LoadReporter
from strom.server.metrics import PartitionTraffic

T0 = TopicPartition("t", 0)


def test_one_sample_per_interval_until_a_heartbeat_delivers_it() -> None:
    clock, traffic = ManualClock(), PartitionTraffic()
    sizes = {T0: 4096}
    reporter = LoadReporter(
        clock=clock, interval_ms=1000, traffic=lambda: traffic, sizes=lambda: sizes
    )
    first = reporter.for_heartbeat()
    assert [(p.topic, p.size, p.bytes_in_rate) for p in first] == [("t", 4096, 0.0)]
    assert reporter.for_heartbeat() == first  # not answered yet: sent again
    reporter.delivered()
    traffic.appended("t", 0, 3000)
    traffic.sent("t", 0, 500)
    clock.advance(999)
    assert reporter.for_heartbeat() == ()  # nothing new within the interval
    clock.advance(1)
    (load,) = reporter.for_heartbeat()
    assert (load.bytes_in_rate, load.bytes_out_rate) == (3000.0, 500.0)
    assert reporter.latest == (load,)
    reporter.delivered()
    reporter.resend()  # the controller connection was lost: a new controller knows nothing
    assert reporter.for_heartbeat() == (load,)


def test_counters_of_partitions_no_longer_held_are_dropped() -> None:
    clock, traffic = ManualClock(), PartitionTraffic()
    traffic.appended("gone", 0, 10)
    reporter = LoadReporter(
        clock=clock, interval_ms=1000, traffic=lambda: traffic, sizes=lambda: {T0: 1}
    )
    reporter.for_heartbeat()
    assert ("gone", 0) not in traffic.counts
