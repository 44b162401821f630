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
  (``PartitionRegistration.merge``). Unclean elections (a replica outside the ISR) are made only
  when asked for (ElectLeaders).

``elect_leaders`` is the ElectLeaders API (``kafka-leader-election.sh``): a *preferred*
election gives each partition back to its first replica when that replica is in the ISR and on
an active broker; an *unclean* one gives a leaderless partition to an ISR replica, or failing
that to any replica on an active broker, which may lose committed records.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from strom.common import ErrorCode, TopicPartition
from strom.controller.results import NO_ERROR, ApiError, ControllerResult
from strom.metadata import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    MetadataImage,
    PartitionChangeRecord,
    PartitionRegistration,
)

__all__ = [
    "ElectLeadersRequest",
    "ElectionResult",
    "ElectionType",
    "active_brokers",
    "broker_available",
    "broker_unavailable",
    "elect_leader",
    "elect_leaders",
]


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


def active_brokers(image: MetadataImage) -> Callable[[int], bool]:
    def active(broker_id: int) -> bool:
        broker = image.cluster.broker(broker_id)
        return broker is not None and broker.active

    return active


def broker_unavailable(image: MetadataImage, broker_id: int) -> list[PartitionChangeRecord]:
    """The broker is fenced or starts a new session: out of every ISR, leaders moved away."""
    active = active_brokers(image)
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
    active = active_brokers(image)
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


class ElectionType(enum.IntEnum):
    """ElectLeaders' election types, numbered as on the wire."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True)
class ElectLeadersRequest:
    election_type: ElectionType
    partitions: Sequence[TopicPartition] | None
    """None: every partition of every topic."""


@dataclass(frozen=True, slots=True)
class ElectionResult:
    partition: TopicPartition
    error: ApiError = NO_ERROR


def elect_leaders(
    image: MetadataImage, request: ElectLeadersRequest
) -> ControllerResult[list[ElectionResult]]:
    """ElectLeaders: a result per partition asked for; asked for all, only the partitions an
    election was made or failed for (Kafka leaves out ELECTION_NOT_NEEDED then)."""
    active = active_brokers(image)
    records: list[PartitionChangeRecord] = []
    results: list[ElectionResult] = []
    wanted = request.partitions
    if wanted is None:
        wanted = [
            TopicPartition(topic.name, partition_id)
            for topic in image.topics.topics_by_id.values()
            for partition_id in sorted(topic.partitions)
        ]
    for tp in dict.fromkeys(wanted):
        topic = image.topics.get_topic(tp.topic)
        partition = None if topic is None else topic.partitions.get(tp.partition)
        if topic is None or partition is None:
            error = ApiError(ErrorCode.unknown_topic_or_partition, f"{tp} does not exist")
        else:
            leader, error = _election(request.election_type, partition, active)
            if leader is not None:
                records.append(
                    PartitionChangeRecord(
                        partition_id=tp.partition,
                        topic_id=topic.topic_id,
                        leader=leader,
                        # Unclean: the new leader's log is the truth; it is the whole ISR.
                        isr=None if leader in partition.isr else (leader,),
                    )
                )
        if request.partitions is not None or error.code is not ErrorCode.election_not_needed:
            results.append(ElectionResult(tp, error))
    return ControllerResult(records, results)


def _election(
    election_type: ElectionType,
    partition: PartitionRegistration,
    active: Callable[[int], bool],
) -> tuple[int | None, ApiError]:
    """The new leader (None: no change) and the partition's result."""
    if election_type is ElectionType.PREFERRED:
        preferred = partition.replicas[0]
        if partition.leader == preferred:
            return None, ApiError(ErrorCode.election_not_needed, "the preferred replica leads")
        if preferred in partition.isr and active(preferred):
            return preferred, NO_ERROR
        return None, ApiError(
            ErrorCode.preferred_leader_not_available,
            f"preferred replica {preferred} is not in the ISR or not on an active broker",
        )
    if partition.leader != NO_LEADER:
        return None, ApiError(ErrorCode.election_not_needed, "the partition has a leader")
    leader = elect_leader(partition, partition.isr, active)
    if leader == NO_LEADER:
        leader = elect_leader(partition, partition.replicas, active)
    if leader == NO_LEADER:
        return None, ApiError(
            ErrorCode.eligible_leaders_not_available, "no replica is on an active broker"
        )
    return leader, NO_ERROR
