"""Partition reassignment (KIP-455): AlterPartitionReassignments and
ListPartitionReassignments, as Kafka's ``ReplicationControlManager`` and
``PartitionReassignmentReplicas`` do them.

A reassignment to a target replica list goes in steps, each a PartitionChangeRecord:

1. **Start**: the replicas become the target followed by the replicas being removed, with
   ``adding_replicas`` (in the target, not yet replicas) and ``removing_replicas`` (replicas
   not in the target). The added brokers create their logs and fetch from the leader.
2. **Catch up**: the leader adds each new replica to the ISR once it is in sync (AlterPartition).
3. **Complete** (:func:`complete_if_done`, checked on every ISR change): once every added
   replica is in the ISR, the replicas become the target, the removed ones leave the ISR, and a
   leader being removed hands over to the first target replica in the ISR. The removed
   brokers delete their logs.

A reassignment with nothing to add completes at once. Cancelling (a null target) puts the
original replicas back: the added ones leave replicas and ISR (a leader among them hands over).
Errors are Kafka's: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty, duplicates,
a broker that is not registered), NO_REASSIGNMENT_IN_PROGRESS for a cancel of nothing.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from strom.common import ErrorCode, TopicPartition
from strom.controller.leadership import active_brokers
from strom.controller.results import NO_ERROR, ApiError, ControllerResult
from strom.metadata import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    MetadataImage,
    PartitionChangeRecord,
    PartitionRegistration,
)

__all__ = [
    "ReassignmentRequest",
    "ReassignmentResult",
    "alter_reassignments",
    "complete_if_done",
    "ongoing_reassignments",
]


@dataclass(frozen=True, slots=True)
class ReassignmentRequest:
    partition: TopicPartition
    replicas: tuple[int, ...] | None
    """The target replicas; None cancels the partition's ongoing reassignment."""


@dataclass(frozen=True, slots=True)
class ReassignmentResult:
    partition: TopicPartition
    error: ApiError = NO_ERROR


def alter_reassignments(
    image: MetadataImage, requests: Sequence[ReassignmentRequest]
) -> ControllerResult[list[ReassignmentResult]]:
    """Start or cancel each partition's reassignment; a result per partition."""
    records: list[PartitionChangeRecord] = []
    results: list[ReassignmentResult] = []
    active = active_brokers(image)
    for request in requests:
        tp = request.partition
        topic = image.topics.get_topic(tp.topic)
        partition = None if topic is None else topic.partitions.get(tp.partition)
        if topic is None or partition is None:
            error = ApiError(ErrorCode.unknown_topic_or_partition, f"{tp} does not exist")
        elif request.replicas is None:
            change, error = _cancel(topic.topic_id, tp.partition, partition, active)
            if change is not None:
                records.append(change)
        else:
            error = _check_target(image, request.replicas)
            if not error.is_failure:
                change = _start(topic.topic_id, tp.partition, partition, request.replicas, active)
                if change is not None:
                    records.append(change)
        results.append(ReassignmentResult(tp, error))
    return ControllerResult(records, results)


def ongoing_reassignments(
    image: MetadataImage, partitions: Sequence[TopicPartition] | None = None
) -> list[tuple[TopicPartition, PartitionRegistration]]:
    """ListPartitionReassignments: the partitions (of those asked, or all) being moved."""
    found: list[tuple[TopicPartition, PartitionRegistration]] = []
    if partitions is None:
        candidates = [
            TopicPartition(topic.name, index)
            for topic in image.topics.topics_by_id.values()
            for index in sorted(topic.partitions)
        ]
    else:
        candidates = list(partitions)
    for tp in candidates:
        registration = image.topics.get_partition(tp)
        if registration is not None and (
            registration.adding_replicas or registration.removing_replicas
        ):
            found.append((tp, registration))
    return sorted(found, key=lambda item: item[0])


def complete_if_done(
    topic_id: uuid.UUID,
    partition_id: int,
    partition: PartitionRegistration,
    active: Callable[[int], bool],
) -> PartitionChangeRecord | None:
    """The change that completes ``partition``'s reassignment, once every added replica is in
    its ISR (Kafka's ``maybeCompleteReassignment``); None before, or when none is going on."""
    adding, removing = partition.adding_replicas, partition.removing_replicas
    if not adding and not removing:
        return None
    if not set(adding) <= set(partition.isr):
        return None
    replicas = tuple(r for r in partition.replicas if r not in removing)
    isr = tuple(r for r in partition.isr if r not in removing)
    if not isr:
        return None
    return _settled(
        topic_id, partition_id, leader=partition.leader, replicas=replicas, isr=isr, active=active
    )


def _settled(
    topic_id: uuid.UUID,
    partition_id: int,
    *,
    leader: int,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    active: Callable[[int], bool],
) -> PartitionChangeRecord:
    """The change to ``replicas`` and ``isr`` with no reassignment going on; a leader outside
    the new ISR hands over to its first active member (in replica order)."""
    new_leader = NO_LEADER_CHANGE
    if leader not in isr:
        new_leader = next((r for r in replicas if r in isr and active(r)), NO_LEADER)
    return PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=replicas,
        isr=isr,
        adding_replicas=(),
        removing_replicas=(),
        leader=new_leader,
    )


def _start(
    topic_id: uuid.UUID,
    partition_id: int,
    partition: PartitionRegistration,
    target: tuple[int, ...],
    active: Callable[[int], bool],
) -> PartitionChangeRecord | None:
    """A new target replaces any ongoing reassignment (from the original replicas)."""
    current = _original_replicas(partition)
    if target == current and partition.replicas == current:
        return None
    removing = tuple(r for r in current if r not in target)
    adding = tuple(r for r in target if r not in current)
    replicas = (*target, *removing)
    isr = tuple(r for r in partition.isr if r in replicas) or partition.isr
    started = dataclasses.replace(
        partition, replicas=replicas, isr=isr, adding_replicas=adding, removing_replicas=removing
    )
    done = complete_if_done(topic_id, partition_id, started, active)
    if done is not None:  # nothing to copy: the target is in sync already
        return done
    return PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=replicas,
        isr=None if isr == partition.isr else isr,
        adding_replicas=adding,
        removing_replicas=removing,
    )


def _cancel(
    topic_id: uuid.UUID,
    partition_id: int,
    partition: PartitionRegistration,
    active: Callable[[int], bool],
) -> tuple[PartitionChangeRecord | None, ApiError]:
    """Kafka's ``PartitionReassignmentRevert``: the original replicas, without the added."""
    if not partition.adding_replicas and not partition.removing_replicas:
        return None, ApiError(
            ErrorCode.no_reassignment_in_progress, "no reassignment of the partition is going on"
        )
    replicas = _original_replicas(partition)
    # Kafka's revert: an ISR of added replicas only becomes the original replicas.
    isr = tuple(r for r in partition.isr if r in replicas) or replicas
    return _settled(
        topic_id, partition_id, leader=partition.leader, replicas=replicas, isr=isr, active=active
    ), NO_ERROR


def _original_replicas(partition: PartitionRegistration) -> tuple[int, ...]:
    """The replicas before the ongoing reassignment (all of them when none is going on)."""
    return tuple(r for r in partition.replicas if r not in partition.adding_replicas)


def _check_target(image: MetadataImage, target: tuple[int, ...]) -> ApiError:
    if not target:
        return ApiError(ErrorCode.invalid_replica_assignment, "the replica list is empty")
    if len(set(target)) != len(target):
        return ApiError(
            ErrorCode.invalid_replica_assignment,
            f"the replica list {list(target)} repeats a broker",
        )
    for broker_id in target:
        if image.cluster.broker(broker_id) is None:
            return ApiError(
                ErrorCode.invalid_replica_assignment,
                f"the replica list names broker {broker_id}, which is not registered",
            )
    return NO_ERROR
