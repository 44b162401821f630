"""The cluster as the balancer sees it, and the hard goals' feasibility checks.

A partition's ``replicas[0]`` is its preferred leader: a leadership move reorders the replica
list, and the leader follows once the reassignment completes and a preferred leader election
runs (as Cruise Control's leadership movements do). A broker without a rack is a rack of its
own, as Kafka's rack-aware placement treats an unracked cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from strom.common import TopicPartition

__all__ = ["BalanceError", "BrokerModel", "ClusterModel", "PartitionModel", "rack_of"]


class BalanceError(Exception):
    """A plan that cannot meet the hard goals; the message names what to change."""


@dataclass(frozen=True, slots=True)
class BrokerModel:
    """A broker: its rack and its capacities (None: unlimited)."""

    id: int
    rack: str | None = None
    max_replicas: int | None = None
    disk_capacity: int | None = None


@dataclass(frozen=True, slots=True)
class PartitionModel:
    """A partition: its replicas (preferred leader first), size in bytes and byte rates."""

    tp: TopicPartition
    replicas: tuple[int, ...]
    size: int = 0
    bytes_in: float = 0.0
    bytes_out: float = 0.0


@dataclass(frozen=True, slots=True)
class ClusterModel:
    brokers: tuple[BrokerModel, ...]
    partitions: tuple[PartitionModel, ...]
    by_id: Mapping[int, BrokerModel] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_id", {b.id: b for b in self.brokers})


def rack_of(broker: BrokerModel) -> str:
    return broker.rack if broker.rack is not None else f"\0broker-{broker.id}"


def _names(ids: list[int]) -> str:
    return ", ".join(map(str, ids))


def check_feasible(
    model: ClusterModel, alive: list[int], removed: set[int], added: set[int]
) -> None:
    """Refuse, with one line naming what to change, a plan the hard goals make impossible."""
    known = sorted(model.by_id)
    for flag, ids in (("--add-broker", added), ("--remove-broker", removed)):
        unknown = sorted(ids - set(known))
        if unknown:
            raise BalanceError(
                f"{flag} names broker {_names(unknown)}, which is not in the cluster "
                f"(brokers: {_names(known)})"
            )
    both = sorted(added & removed)
    if both:
        raise BalanceError(f"broker {_names(both)} cannot be both added and removed")
    if not alive:
        raise BalanceError("no broker would remain: remove fewer brokers")
    racks = {rack_of(model.by_id[b]) for b in alive}
    named = sorted(r for r in racks if not r.startswith("\0"))
    for p in model.partitions:
        factor = len(p.replicas)
        if factor > len(alive):
            raise BalanceError(
                f"{p.tp.topic}-{p.tp.partition} has {factor} replicas but only {len(alive)} "
                "broker(s) would hold them: add brokers or lower its replication factor"
            )
        if factor > len(racks):
            raise BalanceError(
                f"{p.tp.topic}-{p.tp.partition} has {factor} replicas but the brokers span only "
                f"{len(racks)} rack(s) ({', '.join(named)}): add a broker in another rack "
                "or lower its replication factor"
            )
    replicas = sum(len(p.replicas) for p in model.partitions)
    limits = [model.by_id[b].max_replicas for b in alive]
    if all(limit is not None for limit in limits):
        room = sum(limit or 0 for limit in limits)
        if replicas > room:
            raise BalanceError(
                f"{replicas} replicas exceed the brokers' replica capacity of {room}: "
                "add brokers or raise their replica capacity"
            )
    disks = [model.by_id[b].disk_capacity for b in alive]
    if all(disk is not None for disk in disks):
        size = sum(p.size * len(p.replicas) for p in model.partitions)
        room = sum(disk or 0 for disk in disks)
        if size > room:
            raise BalanceError(
                f"{size} bytes of replicas exceed the brokers' disk capacity of {room} bytes: "
                "add brokers or disks"
            )
