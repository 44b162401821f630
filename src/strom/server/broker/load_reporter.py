"""The broker's side of the balancer's load (``strom.balancer.load``): every
``strom.balancer.metrics.reporter.interval.ms`` the partitions' sizes and byte rates are sampled
(:class:`~strom.balancer.load.RateSampler` over the replica manager's ``PartitionTraffic``), the
sample rides the next heartbeat to the active controller (in strom's tagged field,
``strom.protocol.strom_fields``), and DescribeLogDirs answers it to ``strom balance``."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from kio.static.primitive import f64, i32, i64

from strom.balancer.load import RateSampler, ReplicaLoad
from strom.common import Clock, TopicPartition
from strom.protocol.strom_fields import PartitionLoad
from strom.server.metrics import PartitionTraffic

__all__ = ["LoadReporter", "wire_loads"]


def wire_loads(loads: Collection[ReplicaLoad]) -> tuple[PartitionLoad, ...]:
    """A sample as strom's tagged field carries it."""
    return tuple(
        PartitionLoad(
            topic=load.tp.topic,
            partition=i32(load.tp.partition),
            size=i64(load.size),
            bytes_in_rate=f64(load.bytes_in),
            bytes_out_rate=f64(load.bytes_out),
        )
        for load in loads
    )


class LoadReporter:
    def __init__(
        self,
        *,
        clock: Clock,
        interval_ms: int,
        traffic: Callable[[], PartitionTraffic],
        sizes: Callable[[], Mapping[TopicPartition, int]],
    ) -> None:
        """``traffic``: the replica manager's counters; ``sizes``: the replicas held here."""
        self._clock = clock
        self._interval_ms = interval_ms
        self._traffic = traffic
        self._sizes = sizes
        self._sampler = RateSampler()
        self._next_ms: int | None = None
        self._unsent: tuple[PartitionLoad, ...] | None = None

    @property
    def latest(self) -> tuple[PartitionLoad, ...]:
        """The last sample (DescribeLogDirs' answer to ``strom balance``)."""
        return wire_loads(self._sampler.latest)

    def for_heartbeat(self) -> tuple[PartitionLoad, ...]:
        """The sample the next heartbeat carries: a new one once the interval has passed, sent
        until a heartbeat with it is answered (:meth:`delivered`); else none."""
        now = self._clock.monotonic_ms()
        if self._next_ms is None or now >= self._next_ms:
            self._next_ms = now + self._interval_ms
            sizes = self._sizes()
            traffic = self._traffic()
            traffic.forget_others({(tp.topic, tp.partition) for tp in sizes})
            self._unsent = wire_loads(self._sampler.sample(now, traffic.counts, sizes))
        return self._unsent or ()

    def delivered(self) -> None:
        """The controller answered the heartbeat that carried the sample."""
        self._unsent = None

    def resend(self) -> None:
        """The connection to the controller was lost (perhaps another one is active now, which
        knows no sample yet): the next heartbeat carries the latest sample again."""
        if self._sampler.latest:
            self._unsent = self.latest
