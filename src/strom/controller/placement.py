"""Replica placement: which brokers hold the replicas of new partitions.

A striped placement in the spirit of Kafka's ``StripedReplicaPlacer``:

* Brokers are grouped by rack (brokers without a rack form one rack), racks sorted by name and
  brokers within a rack by id. Racks are visited round-robin from a random starting rack, and
  each new partition starts one rack further on, so replicas spread over racks first.
* Within a rack, brokers are taken round-robin too: each partition that touches a rack starts one
  broker further on in that rack's list (from a random starting point), and successive replicas
  of one partition from the same rack take the following brokers. This gives the "striped"
  pattern: leaders, and replicas in general, spread evenly over brokers.
* The leader (first replica) is always an unfenced broker; followers come from unfenced brokers
  first and from fenced ones only when a rack has no unfenced broker left for this partition.
* No broker holds two replicas of one partition, so the replication factor cannot exceed the
  number of usable brokers (registered and not in controlled shutdown).

Randomness comes in as an argument (a seeded ``random.Random`` in tests).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from strom.controller.results import RandomSource
from strom.metadata import ClusterImage

__all__ = ["PlacementError", "UsableBroker", "place_replicas", "usable_brokers"]


class PlacementError(Exception):
    """The replicas cannot be placed; the message says why."""


@dataclass(frozen=True, slots=True)
class UsableBroker:
    id: int
    rack: str | None = None
    fenced: bool = False


def usable_brokers(cluster: ClusterImage) -> list[UsableBroker]:
    """Brokers that may receive new replicas: registered and not in controlled shutdown."""
    return [
        UsableBroker(id=b.id, rack=b.rack, fenced=b.fenced)
        for b in cluster.brokers.values()
        if not b.in_controlled_shutdown
    ]


class _BrokerList:
    """One rack's brokers of one kind (fenced or not), handed out round-robin."""

    def __init__(self, ids: list[int], start: int) -> None:
        self.ids = ids
        self._cursor = start
        self._partition = -1
        self._first = 0
        self._taken = 0

    def take(self, partition: int) -> int | None:
        """The next broker for ``partition``, None when this list gave it all it has."""
        if not self.ids:
            return None
        if partition != self._partition:
            self._partition = partition
            self._first = self._cursor
            self._cursor += 1
            self._taken = 0
        if self._taken >= len(self.ids):
            return None
        broker = self.ids[(self._first + self._taken) % len(self.ids)]
        self._taken += 1
        return broker


class _Rack:
    def __init__(self, brokers: Iterable[UsableBroker], random: RandomSource) -> None:
        unfenced = sorted(b.id for b in brokers if not b.fenced)
        fenced = sorted(b.id for b in brokers if b.fenced)
        self.unfenced = _BrokerList(unfenced, random.randrange(len(unfenced) or 1))
        self.fenced = _BrokerList(fenced, random.randrange(len(fenced) or 1))

    def take(self, partition: int) -> int | None:
        broker = self.unfenced.take(partition)
        return broker if broker is not None else self.fenced.take(partition)


def place_replicas(
    brokers: Sequence[UsableBroker],
    *,
    num_partitions: int,
    replication_factor: int,
    random: RandomSource,
) -> list[tuple[int, ...]]:
    """Replica lists (leader first) for ``num_partitions`` new partitions."""
    if replication_factor <= 0:
        raise PlacementError(f"replication factor must be positive, got {replication_factor}")
    if not brokers:
        raise PlacementError("no brokers are registered")
    if all(b.fenced for b in brokers):
        raise PlacementError("all brokers are fenced")
    if replication_factor > len(brokers):
        raise PlacementError(
            f"replication factor {replication_factor} is more than the "
            f"{len(brokers)} usable broker(s)"
        )
    by_rack: dict[str, list[UsableBroker]] = {}
    for broker in brokers:
        by_rack.setdefault(broker.rack or "", []).append(broker)
    racks = [_Rack(by_rack[name], random) for name in sorted(by_rack)]
    first_rack = random.randrange(len(racks))
    placements: list[tuple[int, ...]] = []
    for partition in range(num_partitions):
        start = first_rack + partition
        # The leader: the first rack, from this partition's starting rack, with an unfenced broker.
        position = start
        leader = None
        while leader is None:
            leader = racks[position % len(racks)].unfenced.take(partition)
            position += 1
        replicas = [leader]
        misses = 0
        while len(replicas) < replication_factor:
            follower = racks[position % len(racks)].take(partition)
            position += 1
            if follower is None:
                misses += 1
                if misses > len(racks):  # pragma: no cover - ruled out by the checks above
                    raise PlacementError("not enough brokers for the replication factor")
                continue
            misses = 0
            replicas.append(follower)
        placements.append(tuple(replicas))
    return placements
