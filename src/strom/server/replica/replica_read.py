"""The read path: a Fetch request's reads (Kafka's ``ReplicaManager.fetchMessages`` and
``readFromLog``), a consumer's read of one partition up to the high watermark or the last
stable offset, and a follower's up to the log end or the diverging epoch (KIP-320), which
records the follower's position. Functions of the
:class:`~strom.server.replica.replica_manager.ReplicaManager` they read through.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.server.replica.delayed_fetch import DelayedFetch, FetchPartitions, FetchPartitionStatus
from strom.server.replica.partition import fetch_isolation
from strom.server.replica.replica_results import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchParams,
    ReadResultInfo,
)
from strom.storage.partition_log import FetchIsolation
from strom.storage.txn_index import AbortedTxn

if TYPE_CHECKING:
    from strom.server.replica.replica_manager import ReplicaManager

__all__ = ["fetch_messages", "read_for_consumer", "read_for_follower", "read_from_log"]


async def fetch_messages(
    manager: ReplicaManager, params: FetchParams, partitions: FetchPartitions
) -> list[ReadResultInfo]:
    """Kafka's ``fetchMessages``: each partition's read with the request's byte budget
    (:func:`read_from_log`), one result per partition, in order (the caller closes their
    file regions).

    Answers at once when ``max_wait`` is 0, when no partition was asked for, when
    ``min_bytes`` are readable, or when a partition has an error or a diverging epoch;
    otherwise the fetch waits as a ``DelayedFetch`` (``delayed_fetch``) in the follower
    purgatory (a follower's) or the consumer purgatory and reads again once it completes.
    A follower's position is recorded by the first read only: the one after the wait does
    not record it again (Kafka's ``readFromPurgatory``), or a fetch of a follower's life
    before a restart, parked meanwhile, would bring back the position the restart forgot.
    """
    purgatory = (
        manager.follower_fetch_purgatory if params.is_from_follower else manager.fetch_purgatory
    )
    reads = read_from_log(manager, params, partitions)
    if (
        not partitions
        or params.max_wait_ms <= 0
        or sum(read.size for read in reads) >= params.min_bytes
        or any(read.error != ErrorCode.none or read.diverging_epoch is not None for read in reads)
    ):
        return _counted(manager, params, partitions, reads)
    statuses = {
        TopicPartition(key.topic, key.partition): FetchPartitionStatus(
            fetch_offset=request.fetch_offset,
            max_bytes=request.partition_max_bytes,
            current_leader_epoch=request.current_leader_epoch,
            readable=read.size,
        )
        for (key, request), read in zip(partitions, reads, strict=True)
    }
    for read in reads:
        read.close()
    operation = DelayedFetch(
        timeout_ms=params.max_wait_ms,
        min_bytes=params.min_bytes,
        partitions=statuses,
        replica_manager=manager,
        isolation_level=params.isolation_level,
    )
    if not purgatory.try_complete_else_watch(operation, statuses):
        await operation.wait()
    reads = read_from_log(manager, params, partitions, update_fetch_state=False)
    return _counted(manager, params, partitions, reads)


def _counted(
    manager: ReplicaManager,
    params: FetchParams,
    partitions: FetchPartitions,
    reads: list[ReadResultInfo],
) -> list[ReadResultInfo]:
    """``reads``, once the bytes they send a consumer are counted (Kafka's BytesOutPerSec;
    a follower's are replication, not counted there)."""
    if params.is_from_follower:
        return reads
    metrics, traffic = manager.metrics, manager.traffic
    for (key, _), read in zip(partitions, reads, strict=True):
        if read.size:
            traffic.sent(key.topic, key.partition, read.size)
            if metrics is not None:
                metrics.sent(key.topic, read.size)
    return reads


def read_from_log(
    manager: ReplicaManager,
    params: FetchParams,
    partitions: FetchPartitions,
    *,
    update_fetch_state: bool = True,
) -> list[ReadResultInfo]:
    """Kafka's ``readFromLog``: the partitions in request order, each up to its
    ``partition_max_bytes`` and what is left of the request's ``max_bytes``; the first batch
    of the first partition with data comes whole even when larger (KIP-74). A consumer
    reads with :func:`read_for_consumer`, a follower (``FetchParams.replica_id`` >= 0) with
    :func:`read_for_follower`. A partition named by a topic id the metadata does not know
    (or knows for another name) is UNKNOWN_TOPIC_ID. One result per partition, in order;
    ``update_fetch_state``: a follower's read records its position."""
    remaining = params.max_bytes
    min_one_message = True
    image = manager.image
    reads: list[ReadResultInfo] = []
    for key, request in partitions:
        if key.topic_id is not None:
            topic = image.topics.get_topic(key.topic) if key.topic else None
            if topic is None or topic.topic_id != key.topic_id:
                reads.append(
                    ReadResultInfo(
                        error=ErrorCode.unknown_topic_id,
                        message=f"unknown topic id {key.topic_id}",
                    )
                )
                continue
        tp = TopicPartition(key.topic, key.partition)
        budget = max(0, min(request.partition_max_bytes, remaining))
        if params.is_from_follower:
            read = read_for_follower(
                manager,
                tp,
                replica_id=params.replica_id,
                replica_epoch=params.replica_epoch,
                fetch_offset=request.fetch_offset,
                max_bytes=budget,
                current_leader_epoch=request.current_leader_epoch,
                last_fetched_epoch=request.last_fetched_epoch,
                update_fetch_state=update_fetch_state,
            )
        else:
            read = read_for_consumer(
                manager,
                tp,
                fetch_offset=request.fetch_offset,
                max_bytes=budget,
                min_one_message=min_one_message,
                isolation_level=params.isolation_level,
                current_leader_epoch=request.current_leader_epoch,
            )
        size = read.size
        if size:
            min_one_message = False
            remaining = max(0, remaining - size)
        reads.append(read)
    return reads


def read_for_consumer(
    manager: ReplicaManager,
    tp: TopicPartition,
    *,
    fetch_offset: int,
    max_bytes: int,
    min_one_message: bool,
    isolation_level: int = READ_UNCOMMITTED,
    current_leader_epoch: int = -1,
) -> ReadResultInfo:
    """A consumer's read from the batch holding ``fetch_offset`` (see the module doc).

    A fetch offset outside [log start offset, log end offset] is OFFSET_OUT_OF_RANGE. On any
    error the offsets are -1, as in Kafka's answers.
    """
    try:
        partition = manager.partition(tp, current_leader_epoch=current_leader_epoch)
    except KafkaError as error:
        return ReadResultInfo(error=error.error_code, message=error.message)
    aborted: tuple[AbortedTxn, ...] | None = None
    try:
        result = partition.log.read(
            fetch_offset,
            max_bytes=max_bytes,
            isolation=fetch_isolation(isolation_level),
            min_one_message=min_one_message,
        )
    except KafkaError as error:
        return ReadResultInfo(error=error.error_code, message=error.message)
    if isolation_level == READ_COMMITTED:
        # Up to the offset after the last whole batch: a partial one is dropped by the
        # client and fetched again.
        try:
            txns = partition.log.collect_aborted_txns(fetch_offset, result.next_offset)
        except BaseException:
            result.close()
            raise
        aborted = tuple(txns)
    return ReadResultInfo(
        regions=result.regions,
        high_watermark=partition.log.high_watermark,
        last_stable_offset=partition.log.last_stable_offset,
        log_start_offset=partition.log_start_offset,
        aborted_transactions=aborted,
    )


# --- ListOffsets -----------------------------------------------------------------------


def read_for_follower(
    manager: ReplicaManager,
    tp: TopicPartition,
    *,
    replica_id: int,
    replica_epoch: int = -1,
    fetch_offset: int,
    max_bytes: int,
    current_leader_epoch: int,
    last_fetched_epoch: int,
    update_fetch_state: bool = True,
) -> ReadResultInfo:
    """A follower's fetch (Kafka's ``Partition.fetchRecords`` for a replica): the records
    up to the log end, or the diverging epoch when the follower's log went another way
    after ``last_fetched_epoch`` (KIP-320: it truncates, then fetches again). A fetch that
    is not diverging records the follower's position (unless not ``update_fetch_state``)."""
    try:
        partition = manager.partition(tp, current_leader_epoch=current_leader_epoch)
        if last_fetched_epoch >= 0:
            end = partition.log.end_offset_for_epoch(last_fetched_epoch)
            if end.epoch < last_fetched_epoch or end.end_offset < fetch_offset:
                return ReadResultInfo(
                    high_watermark=partition.log.high_watermark,
                    last_stable_offset=partition.log.last_stable_offset,
                    log_start_offset=partition.log_start_offset,
                    diverging_epoch=(end.epoch, end.end_offset),
                )
        quota = manager.leader_quota
        if quota is not None and quota.holds_back(tp, in_sync=replica_id in partition.isr):
            max_bytes = 0  # nothing this time
        result = partition.log.read(
            fetch_offset,
            max_bytes=max_bytes,
            isolation=FetchIsolation.LOG_END,
            min_one_message=max_bytes > 0,
        )
        if update_fetch_state:
            try:
                manager.record_follower_fetch(
                    tp,
                    replica_id=replica_id,
                    log_end_offset=fetch_offset,
                    replica_epoch=replica_epoch,
                )
            except BaseException:
                result.close()
                raise
    except KafkaError as error:
        return ReadResultInfo(error=error.error_code, message=error.message)
    if quota is not None:
        quota.record(tp, result.size)
    return ReadResultInfo(
        regions=result.regions,
        high_watermark=partition.log.high_watermark,
        last_stable_offset=partition.log.last_stable_offset,
        log_start_offset=partition.log_start_offset,
    )


# --- the follower's side -----------------------------------------------------------------
