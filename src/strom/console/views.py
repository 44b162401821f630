"""The console's views, pure: the cluster's health from its brokers and partitions, and the
rows of its pages, from plain values the API gathered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["BrokerView", "PartitionView", "cluster_health", "topic_row"]


class PartitionView(NamedTuple):
    """A partition as the pages show it (a tuple: ten thousand are made per page load)."""

    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_isr: int = 1
    """The topic's ``min.insync.replicas``."""

    @property
    def offline(self) -> bool:
        return self.leader is None or self.leader < 0

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def under_min_isr(self) -> bool:
        """Fewer in-sync replicas than ``min.insync.replicas``: producers with ``acks=all``
        are refused (NOT_ENOUGH_REPLICAS)."""
        return not self.offline and len(self.isr) < self.min_isr


@dataclass(frozen=True)
class BrokerView:
    broker_id: int
    host: str | None
    port: int | None
    rack: str | None
    alive: bool


def cluster_health(
    live: Sequence[BrokerView], partitions: Iterable[PartitionView], controller: int | None
) -> dict[str, object]:
    """Brokers (a replica's broker that is not live is down) with their leader and replica
    counts, and the partitions that are under-replicated, under their topic's
    ``min.insync.replicas`` or offline."""
    partitions = list(partitions)
    brokers = {b.broker_id: b for b in live}
    for p in partitions:
        for replica in p.replicas:
            brokers.setdefault(replica, BrokerView(replica, None, None, None, alive=False))
    leaders = _count(p.leader for p in partitions if not p.offline)
    replicas = _count(r for p in partitions for r in p.replicas)
    return {
        "controller": controller,
        "brokers": [
            {
                "id": b.broker_id,
                "host": b.host,
                "port": b.port,
                "rack": b.rack,
                "alive": b.alive,
                "leaders": leaders.get(b.broker_id, 0),
                "replicas": replicas.get(b.broker_id, 0),
            }
            for b in sorted(brokers.values(), key=lambda b: b.broker_id)
        ],
        "partitions": len(partitions),
        "under_replicated": [_name(p) for p in partitions if p.under_replicated and not p.offline],
        "under_min_isr": [_name(p) for p in partitions if p.under_min_isr],
        "offline": [_name(p) for p in partitions if p.offline],
    }


def topic_row(
    name: str,
    partitions: Sequence[PartitionView],
    offsets: Mapping[int, tuple[int, int]] | None,
    *,
    internal: bool,
) -> dict[str, object]:
    """A topic's line on the topics page: partitions, replication, records held (latest minus
    earliest offsets, over every partition; None without ``offsets``), and its partitions'
    health."""
    held = None if offsets is None else sum(max(0, end - start) for start, end in offsets.values())
    return {
        "name": name,
        "internal": internal,
        "partitions": len(partitions),
        "replication_factor": max((len(p.replicas) for p in partitions), default=0),
        "records": held,
        "under_replicated": sum(1 for p in partitions if p.under_replicated),
        "under_min_isr": sum(1 for p in partitions if p.under_min_isr),
        "offline": sum(1 for p in partitions if p.offline),
    }


def _name(p: PartitionView) -> str:
    return f"{p.topic}-{p.partition}"


def _count(ids: Iterable[int | None]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for i in ids:
        if i is not None:
            counts[i] = counts.get(i, 0) + 1
    return counts
