"""AlterPartition: a partition leader asks the controller to change its ISR (Kafka's
``ReplicationControlManager.alterPartition``, KIP-497, with KIP-841's broker epochs).

Checked in Kafka's order: the sender's broker epoch (STALE_BROKER_EPOCH for the whole request),
the topic (UNKNOWN_TOPIC_ID), the partition (UNKNOWN_TOPIC_OR_PARTITION), that the sender leads
it (NOT_LEADER_OR_FOLLOWER) in the same leader epoch (FENCED_LEADER_EPOCH) and partition epoch
(INVALID_UPDATE_VERSION: the leader's view is stale, it must take the newer state from the
metadata), that the new ISR holds the leader and only replicas (INVALID_REQUEST), that a leader
still RECOVERING after an unclean election (KIP-704) keeps the ISR to itself and that a
RECOVERED partition does not go back to RECOVERING (INVALID_REQUEST), and that every member is
on an active broker, in the broker epoch the leader saw (INELIGIBLE_REPLICA). The leader's
RECOVERED ends the partition's recovery, in the same record as its ISR change. An
accepted change is a PartitionChangeRecord; the answer carries the partition as it then is. A
change that brings the last added replica of a reassignment into the ISR completes the
reassignment in the same record (``strom.controller.reassignment``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from strom.common import ErrorCode
from strom.config import ServerConfig
from strom.controller.leadership import ElectionPolicy, active_brokers
from strom.controller.reassignment import complete_if_done
from strom.controller.results import NO_ERROR, ApiError, ControllerResult
from strom.metadata import (
    LeaderRecoveryState,
    MetadataImage,
    PartitionChangeRecord,
    PartitionRegistration,
)

__all__ = [
    "AlterPartitionItem",
    "AlterPartitionReply",
    "AlterPartitionRequest",
    "IsrChangeResult",
    "alter_partition",
]


@dataclass(frozen=True, slots=True)
class AlterPartitionItem:
    topic_id: uuid.UUID
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[tuple[int, int], ...]
    """(broker id, broker epoch) of each member; epoch -1 when the leader did not say."""
    leader_recovery_state: int = LeaderRecoveryState.RECOVERED


@dataclass(frozen=True)
class AlterPartitionRequest:
    broker_id: int
    broker_epoch: int
    items: Sequence[AlterPartitionItem]


@dataclass(frozen=True, slots=True)
class IsrChangeResult:
    topic_id: uuid.UUID
    partition: int
    error: ApiError = NO_ERROR
    registration: PartitionRegistration | None = None
    """The partition after the change (None when the partition is unknown)."""


@dataclass(frozen=True)
class AlterPartitionReply:
    error: ApiError
    results: list[IsrChangeResult]


def alter_partition(
    image: MetadataImage, defaults: ServerConfig, request: AlterPartitionRequest
) -> ControllerResult[AlterPartitionReply]:
    sender = image.cluster.broker(request.broker_id)
    if sender is None or sender.epoch != request.broker_epoch:
        stale = ApiError(
            ErrorCode.stale_broker_epoch,
            f"broker {request.broker_id} is not registered in epoch {request.broker_epoch}",
        )
        return ControllerResult([], AlterPartitionReply(stale, []))
    policy = ElectionPolicy(image, defaults)
    records: list[PartitionChangeRecord] = []
    results: list[IsrChangeResult] = []
    for item in request.items:
        topic = image.topics.topics_by_id.get(item.topic_id)
        partition = None if topic is None else topic.partitions.get(item.partition)
        if topic is None:
            error = ApiError(ErrorCode.unknown_topic_id, f"no topic has id {item.topic_id}")
        elif partition is None:
            error = ApiError(ErrorCode.unknown_topic_or_partition, f"no partition {item.partition}")
        else:
            error = _check(image, request.broker_id, item, partition)
        if topic is None or partition is None or error.is_failure:
            results.append(IsrChangeResult(item.topic_id, item.partition, error, partition))
            continue
        isr = tuple(broker_id for broker_id, _ in item.new_isr)
        change = policy.change(
            topic, item.partition, partition, isr=isr, recovery=item.leader_recovery_state
        )
        if change is None:
            results.append(IsrChangeResult(item.topic_id, item.partition, NO_ERROR, partition))
            continue
        completed = complete_if_done(
            item.topic_id, item.partition, partition.merge(change), active_brokers(image)
        )
        if completed is not None:  # the last added replica is in sync: the move is done
            change = completed
        records.append(change)
        results.append(
            IsrChangeResult(item.topic_id, item.partition, NO_ERROR, partition.merge(change))
        )
    return ControllerResult(records, AlterPartitionReply(NO_ERROR, results))


def _check(
    image: MetadataImage, sender: int, item: AlterPartitionItem, partition: PartitionRegistration
) -> ApiError:
    if partition.leader != sender:
        return ApiError(
            ErrorCode.not_leader_or_follower,
            f"broker {sender} does not lead the partition (broker {partition.leader} does)",
        )
    if item.leader_epoch != partition.leader_epoch:
        return ApiError(
            ErrorCode.fenced_leader_epoch,
            f"leader epoch {item.leader_epoch} is not the partition's {partition.leader_epoch}",
        )
    if item.partition_epoch != partition.partition_epoch:
        return ApiError(
            ErrorCode.invalid_update_version,
            f"partition epoch {item.partition_epoch} is not the partition's "
            f"{partition.partition_epoch}",
        )
    members = [broker_id for broker_id, _ in item.new_isr]
    if len(set(members)) != len(members) or not set(members) <= set(partition.replicas):
        return ApiError(ErrorCode.invalid_request, f"ISR {members} is not a set of replicas")
    if sender not in members:
        return ApiError(ErrorCode.invalid_request, f"ISR {members} leaves out its leader {sender}")
    if item.leader_recovery_state not in (
        LeaderRecoveryState.RECOVERED,
        LeaderRecoveryState.RECOVERING,
    ):
        return ApiError(
            ErrorCode.invalid_request,
            f"{item.leader_recovery_state} is not a leader recovery state",
        )
    recovering = item.leader_recovery_state == LeaderRecoveryState.RECOVERING
    if recovering and len(members) > 1:
        return ApiError(
            ErrorCode.invalid_request,
            f"ISR {members} has more than the leader while it recovers from an unclean election",
        )
    if recovering and partition.leader_recovery_state == LeaderRecoveryState.RECOVERED:
        return ApiError(
            ErrorCode.invalid_request, "the leader recovery state cannot go back to RECOVERING"
        )
    for broker_id, broker_epoch in item.new_isr:
        broker = image.cluster.broker(broker_id)
        if broker is None or not broker.active or broker_epoch not in (-1, broker.epoch):
            return ApiError(
                ErrorCode.ineligible_replica,
                f"broker {broker_id} is not active in epoch {broker_epoch}",
            )
    return NO_ERROR
