"""The balancer's load from what brokers measure, without I/O.

A broker counts the bytes appended to each partition it leads and the bytes it sends consumers
(``PartitionTraffic``, always counted). Every ``strom.balancer.metrics.reporter.interval.ms`` its
:class:`RateSampler` turns the counters into rates over the interval just ended, beside each
replica's size; the broker sends the sample to the active controller with its next heartbeat and
answers it to ``strom balance`` in DescribeLogDirs. :class:`LoadReports` keeps each broker's
latest sample on the controller, and :func:`partition_loads` combines the samples of the live
brokers into one load per partition: the largest replica's size, and the largest rates any
broker measured. Only a partition's leader counts bytes (it alone appends as the leader and
answers consumers, strom having no fetching from followers), so one broker's rates are the
partition's; after a leadership change the old leader's last sample and the new one's may both
hold the partition's rates for an interval, and a sum would count them twice.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from strom.balancer.model import PartitionModel
from strom.common import TopicPartition

__all__ = ["LoadReports", "RateSampler", "ReplicaLoad", "partition_loads", "with_loads"]


@dataclass(frozen=True, slots=True)
class ReplicaLoad:
    """One broker's replica of a partition: its size, and the bytes per second appended to it
    as the leader and sent from it to consumers over the last interval."""

    tp: TopicPartition
    size: int
    bytes_in: float = 0.0
    bytes_out: float = 0.0


class RateSampler:
    """A broker's counters, sampled into rates (see the module doc)."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, int], tuple[int, int]] = {}
        self._at_ms: int | None = None
        self.latest: tuple[ReplicaLoad, ...] = ()
        """The last sample (rates zero until a second sample spans an interval)."""

    def sample(
        self,
        now_ms: int,
        counts: Mapping[tuple[str, int], Sequence[int]],
        sizes: Mapping[TopicPartition, int],
    ) -> tuple[ReplicaLoad, ...]:
        """The replicas held here (``sizes``) with the rates of ``counts`` (bytes in and out
        so far per partition) since the previous sample."""
        span_s = 0.0 if self._at_ms is None else (now_ms - self._at_ms) / 1000.0
        loads = []
        for tp, size in sorted(sizes.items(), key=lambda item: (item[0].topic, item[0].partition)):
            key = (tp.topic, tp.partition)
            now = counts.get(key)
            before = self._counts.get(key, (0, 0))
            if now is None or span_s <= 0:
                loads.append(ReplicaLoad(tp, size))
                continue
            # a counter below the previous one was dropped and started again: count from zero
            grown = [n - b if n >= b else n for n, b in zip(now, before, strict=True)]
            loads.append(ReplicaLoad(tp, size, grown[0] / span_s, grown[1] / span_s))
        self._counts = {key: (int(c[0]), int(c[1])) for key, c in counts.items()}
        self._at_ms = now_ms
        self.latest = tuple(loads)
        return self.latest


class LoadReports:
    """The active controller's latest sample of each broker (in memory, as broker sessions)."""

    def __init__(self) -> None:
        self._reports: dict[int, tuple[ReplicaLoad, ...]] = {}
        self.samples: dict[int, int] = {}
        """Per broker, how many samples it has reported (``SelfBalancer.step``'s)."""

    def report(self, broker_id: int, loads: Iterable[ReplicaLoad]) -> None:
        self._reports[broker_id] = tuple(loads)
        self.samples[broker_id] = self.samples.get(broker_id, 0) + 1

    def loads(self, brokers: Collection[int]) -> dict[TopicPartition, ReplicaLoad]:
        """The partitions' loads from the samples of ``brokers`` (the live ones)."""
        return partition_loads(
            load for broker, loads in self._reports.items() if broker in brokers for load in loads
        )


def partition_loads(replicas: Iterable[ReplicaLoad]) -> dict[TopicPartition, ReplicaLoad]:
    """One load per partition from its replicas' samples: the largest size and rates."""
    out: dict[TopicPartition, ReplicaLoad] = {}
    for load in replicas:
        seen = out.get(load.tp)
        out[load.tp] = (
            load
            if seen is None
            else ReplicaLoad(
                load.tp,
                max(seen.size, load.size),
                max(seen.bytes_in, load.bytes_in),
                max(seen.bytes_out, load.bytes_out),
            )
        )
    return out


def with_loads(
    partitions: Iterable[PartitionModel], loads: Mapping[TopicPartition, ReplicaLoad]
) -> tuple[PartitionModel, ...]:
    """``partitions`` with the sizes and byte rates of ``loads`` (none known: unchanged)."""
    out = []
    for p in partitions:
        load = loads.get(p.tp)
        out.append(
            p
            if load is None
            else replace(p, size=load.size, bytes_in=load.bytes_in, bytes_out=load.bytes_out)
        )
    return tuple(out)
