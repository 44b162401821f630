"""Partition leaders and ISRs as brokers come and go: the elections Kafka's controller makes when
a broker is fenced, re-registers or is unfenced (``ReplicationControlManager``'s
``generateLeaderAndIsrUpdates`` with ``PartitionChangeBuilder``, before KIP-966's eligible
leader replicas).

* A broker that becomes unavailable (fenced, or starting a new session) leaves the ISR of every
  partition that has it; a partition it led gets the first replica, in replica order, that is in
  the remaining ISR and on an active broker. With none, the partition has no leader (-1) and
  keeps the broker as its last ISR member, so the replica holding every committed record is
  known when it returns (Kafka never empties an ISR).
* A broker that becomes available again leads each partition without a leader whose ISR holds
  it (the only replica that may lead without losing committed records).
* A new leader bumps the leader epoch; any change bumps the partition epoch
  (``PartitionRegistration.merge``). Unclean elections (a replica outside the ISR) are not made.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

from strom.metadata import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    MetadataImage,
    PartitionChangeRecord,
    PartitionRegistration,
)

__all__ = ["broker_available", "broker_unavailable", "elect_leader"]


def elect_leader(
    partition: PartitionRegistration, isr: tuple[int, ...], acceptable: Callable[[int], bool]
) -> int:
    """The current leader if it stays acceptable and in ``isr``; else the first replica, in
    replica order, that is both; else NO_LEADER."""
    if partition.leader in isr and acceptable(partition.leader):
        return partition.leader
    return next((b for b in partition.replicas if b in isr and acceptable(b)), NO_LEADER)


def _change(
    topic_id: uuid.UUID,
    partition_id: int,
    partition: PartitionRegistration,
    *,
    isr: tuple[int, ...],
    acceptable: Callable[[int], bool],
) -> PartitionChangeRecord | None:
    leader = elect_leader(partition, isr, acceptable)
    if not isr:
        isr = partition.isr  # never an empty ISR: the last member stays
    if leader == partition.leader and isr == partition.isr:
        return None
    return PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        isr=None if isr == partition.isr else isr,
        leader=NO_LEADER_CHANGE if leader == partition.leader else leader,
    )


def _partitions(image: MetadataImage) -> Iterator[tuple[uuid.UUID, int, PartitionRegistration]]:
    for topic in image.topics.topics_by_id.values():
        for partition_id, partition in sorted(topic.partitions.items()):
            yield topic.topic_id, partition_id, partition


def _active(image: MetadataImage) -> Callable[[int], bool]:
    def active(broker_id: int) -> bool:
        broker = image.cluster.broker(broker_id)
        return broker is not None and broker.active

    return active


def broker_unavailable(image: MetadataImage, broker_id: int) -> list[PartitionChangeRecord]:
    """The broker is fenced or starts a new session: out of every ISR, leaders moved away."""
    active = _active(image)
    records = []
    for topic_id, partition_id, partition in _partitions(image):
        if broker_id not in partition.isr and partition.leader != broker_id:
            continue
        record = _change(
            topic_id,
            partition_id,
            partition,
            isr=tuple(b for b in partition.isr if b != broker_id),
            acceptable=lambda b: b != broker_id and active(b),
        )
        if record is not None:
            records.append(record)
    return records


def broker_available(image: MetadataImage, broker_id: int) -> list[PartitionChangeRecord]:
    """The broker is unfenced: it leads the leaderless partitions whose ISR holds it."""
    active = _active(image)
    records = []
    for topic_id, partition_id, partition in _partitions(image):
        if partition.leader != NO_LEADER or broker_id not in partition.isr:
            continue
        record = _change(
            topic_id,
            partition_id,
            partition,
            isr=partition.isr,
            acceptable=lambda b: b == broker_id or active(b),
        )
        if record is not None:
            records.append(record)
    return records
