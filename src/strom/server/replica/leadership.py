"""Becoming leader or follower: what a metadata change does to the partitions this broker
holds a replica of (Kafka's ``ReplicaManager.applyDelta`` and ``Partition.makeLeader``).

Partitions led here take a new leader state in a new leader epoch (starting at the log end),
partitions followed here lose it and are to be fetched from their leader, partitions gone from
this broker are dropped; what waits on a partition no longer led here is answered at once with
its error. Functions of the :class:`~strom.server.replica.replica_manager.ReplicaManager`
whose state they change.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.metadata import LeaderRecoveryState
from strom.metadata.delta import MetadataDelta
from strom.replication.partition_replication import PartitionReplication
from strom.server.replica.partition import Partition
from strom.server.replica.replica_results import FollowTarget, LeadershipChanges

if TYPE_CHECKING:
    from strom.server.replica.replica_manager import ReplicaManager

__all__ = ["apply_delta", "become_leader"]

log = logging.getLogger(__name__)


def become_leader(partition: Partition, *, node_id: int, max_lag_ms: int, now_ms: int) -> None:
    """Kafka's ``Partition.makeLeader``: a new leader epoch starts at the log end, every
    follower's state is reset (the ISR's count as caught up now). The caller then moves the
    high watermark."""
    registration = partition.registration
    if registration.leader_recovery_state == LeaderRecoveryState.RECOVERING:
        log.info(
            "%s: leader after an unclean election (RECOVERING); nothing to recover, its "
            "next ISR change reports it RECOVERED (KIP-704)",
            partition.tp,
        )
    log_end = partition.log_end_offset
    if registration.leader_epoch > partition.log.leader_epochs.latest_epoch:
        partition.log.start_leader_epoch(registration.leader_epoch)
    partition._unreplicated.clear()
    partition.replication = PartitionReplication(
        leader_id=node_id,
        replicas=registration.replicas,
        isr=registration.isr,
        leader_epoch=registration.leader_epoch,
        partition_epoch=registration.partition_epoch,
        leader_epoch_start_offset=log_end,
        max_lag_ms=max_lag_ms,
        started_ms=now_ms,
    )


def apply_delta(manager: ReplicaManager, delta: MetadataDelta) -> LeadershipChanges:
    """This broker's part of a metadata change (Kafka's ``ReplicaManager.applyDelta``):
    partitions it leads now take their leader state, partitions it follows lose it and are
    to be fetched from their leader; partitions gone from this broker are dropped. The
    operations waiting on a partition that is no longer led here (produce, consumer and
    follower fetches) are answered at once with its error (``_left``); others re-check."""
    changes = LeadershipChanges()
    _forget_restarted_followers(manager, delta)
    topics = delta.topics_delta
    for topic in topics.deleted_topics.values():
        for partition_id in topic.partitions:
            _drop(
                manager,
                TopicPartition(topic.name, partition_id),
                changes,
                ErrorCode.unknown_topic_or_partition,
            )
    for topic_delta in topics.changed_topics.values():
        for partition_id in sorted(topic_delta.changed_partitions | topic_delta.new_partitions):
            registration = topic_delta.partition(partition_id)
            tp = TopicPartition(topic_delta.name, partition_id)
            if registration is None or manager.node_id not in registration.replicas:
                _drop(manager, tp, changes, ErrorCode.not_leader_or_follower)
                continue
            try:
                if registration.leader == manager.node_id:
                    # The ISR may have shrunk (the controller fenced a member): the high
                    # watermark may move now, with no fetch or append to move it (Kafka's
                    # makeLeader ends with maybeIncrementLeaderHW).
                    manager.maybe_advance_high_watermark(manager.partition(tp))
                    changes.stop.add(tp)
                else:
                    _left(manager, tp, ErrorCode.not_leader_or_follower)
                    partition = manager.local_partition(tp, registration)
                    partition.replication = None
                    if registration.has_leader:
                        changes.follow[tp] = FollowTarget(
                            registration.leader, registration.leader_epoch
                        )
                    else:
                        changes.stop.add(tp)
            except KafkaError as error:
                log.warning("cannot take up the replica of %s: %s", tp, error.message)
                _left(manager, tp, error.error_code)
                changes.stop.add(tp)
            manager.notify(tp, None)
    return changes


def _forget_restarted_followers(manager: ReplicaManager, delta: MetadataDelta) -> None:
    """Followers whose broker registered anew (or left) are unknown again to the
    partitions this broker leads."""
    old = delta.image.cluster.brokers
    restarted = [
        broker_id
        for broker_id, registration in delta.cluster_delta.changed_brokers.items()
        if registration is None or (broker_id in old and old[broker_id].epoch != registration.epoch)
    ]
    if not restarted:
        return
    for partition in manager.local_partitions.values():
        if partition.replication is not None:
            for broker_id in restarted:
                partition.replication.forget_follower(broker_id)


def _drop(
    manager: ReplicaManager, tp: TopicPartition, changes: LeadershipChanges, error: ErrorCode
) -> None:
    changes.stop.add(tp)
    _left(manager, tp, error)
    if manager.local_partitions.pop(tp, None) is not None:
        manager.notify(tp, None)


def _left(manager: ReplicaManager, tp: TopicPartition, error: ErrorCode) -> None:
    """``tp`` is not led here any more: what waits on it answers ``error`` now, whatever
    the image holds under its name (Kafka's ``completeDelayedFetchOrProduceRequests``)."""
    for purgatory in manager.purgatories:
        purgatory.complete_left(tp, error)
