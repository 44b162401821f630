"""The append path of a leader: a producer's batches (Kafka's
``ReplicaManager.appendToLocalLog`` / ``appendRecordsToLeader``) and the transaction
coordinator's COMMIT/ABORT markers (WriteTxnMarkers), each appended to the partition's log,
then the log end listeners told and the high watermark moved. An acks=all write is refused
before anything is appended while the ISR is below ``min.insync.replicas``. Functions of the
:class:`~strom.server.replica.replica_manager.ReplicaManager` they append through.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.controller.topic_names import INTERNAL_TOPICS
from strom.protocol.framing import BytesLike
from strom.server.replica.partition import Partition
from strom.server.replica.replica_results import AppendResult, HighWatermarkUpdate
from strom.storage.log_validator import RecordValidationError
from strom.storage.producer_state import AppendOrigin

if TYPE_CHECKING:
    from strom.server.replica.replica_manager import ReplicaManager

__all__ = ["VALID_ACKS", "append_to_local_log", "appended", "check_min_isr", "write_txn_marker"]

log = logging.getLogger(__name__)

VALID_ACKS: Final = (-1, 0, 1)
_NO_LOG_START_ERRORS: Final = frozenset(
    {
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_leader_or_follower,
        ErrorCode.message_too_large,
        ErrorCode.record_list_too_large,
        ErrorCode.corrupt_message,
        ErrorCode.kafka_storage_error,
    }
)
"""Failed appends answered with log start offset -1; others carry it (Kafka's ReplicaManager)."""


def append_to_local_log(
    manager: ReplicaManager,
    entries: Iterable[tuple[TopicPartition, BytesLike | None]],
    *,
    required_acks: int,
    internal_topics_allowed: bool = False,
    origin: AppendOrigin = AppendOrigin.CLIENT,
) -> list[tuple[TopicPartition, AppendResult]]:
    """Append each partition's batches now; a failure affects only its own partition.

    ``required_acks`` outside (-1, 0, 1) fails every partition with INVALID_REQUIRED_ACKS
    and appends nothing, as Kafka does. ``origin`` COORDINATOR: a coordinator's own write
    (its transactional offset commits get the producer epoch check only).
    """
    if required_acks not in VALID_ACKS:
        message = f"acks={required_acks}: only -1 (all), 0 and 1 are valid"
        return [
            (tp, AppendResult.failed(ErrorCode.invalid_required_acks, message)) for tp, _ in entries
        ]
    return [
        (
            tp,
            _append_to_leader(
                manager,
                tp,
                records,
                required_acks=required_acks,
                internal_topics_allowed=internal_topics_allowed,
                origin=origin,
            ),
        )
        for tp, records in entries
    ]


def _append_to_leader(
    manager: ReplicaManager,
    tp: TopicPartition,
    records: BytesLike | None,
    *,
    required_acks: int,
    internal_topics_allowed: bool,
    origin: AppendOrigin,
) -> AppendResult:
    partition: Partition | None = None
    try:
        if tp.topic in INTERNAL_TOPICS and not internal_topics_allowed:
            raise KafkaError(
                ErrorCode.invalid_topic_exception, f"cannot append to internal topic {tp.topic}"
            )
        partition = manager.partition(tp)
        if required_acks == -1:
            check_min_isr(manager, partition)
        info = partition.log.append(
            records or b"", leader_epoch=partition.leader_epoch, origin=origin
        )
    except KafkaError as error:
        # Kafka answers the partition's log start offset, except for these errors (-1).
        log_start = -1
        if partition is not None and error.error_code not in _NO_LOG_START_ERRORS:
            log_start = partition.log_start_offset
        record_errors = error.record_errors if isinstance(error, RecordValidationError) else ()
        return AppendResult.failed(
            error.error_code, error.message, record_errors, log_start_offset=log_start
        )
    if info.last_offset >= partition.log.high_watermark:  # not a duplicate of older batches
        appended(manager, partition, info.base_offset, info.last_offset, info.size)
        manager.traffic.appended(tp.topic, tp.partition, info.size)
        metrics = manager.metrics
        if metrics is not None:
            metrics.appended(tp.topic, info.last_offset - info.base_offset + 1, info.size)
    return AppendResult(
        base_offset=info.base_offset,
        last_offset=info.last_offset,
        log_append_time=info.log_append_time,
        log_start_offset=info.log_start_offset,
    )


def appended(
    manager: ReplicaManager, partition: Partition, base_offset: int, last_offset: int, size: int
) -> None:
    partition._unreplicated.append((last_offset + 1, size))
    if manager.log_end_listeners:
        update = HighWatermarkUpdate(base_offset, last_offset + 1, size)
        for listener in manager.log_end_listeners:
            listener(partition.tp, update)
    manager.maybe_advance_high_watermark(partition)


def write_txn_marker(
    manager: ReplicaManager,
    tp: TopicPartition,
    *,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
) -> ErrorCode:
    """Append the coordinator's COMMIT/ABORT marker for ``producer_id`` to ``tp`` (internal
    topics included), move the high watermark, then tell the marker listeners.

    Errors: the partition's (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER),
    NOT_ENOUGH_REPLICAS (before anything is appended) below min.insync.replicas,
    INVALID_PRODUCER_EPOCH for an older producer epoch, TRANSACTION_COORDINATOR_FENCED for
    an older coordinator epoch than the producer's last marker's, storage errors.
    """
    try:
        partition = manager.partition(tp)
        check_min_isr(manager, partition)  # written as acks=all: nothing appended below it
        info = partition.log.append_txn_marker(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            leader_epoch=partition.leader_epoch,
        )
    except KafkaError as error:
        log.info(
            "%s marker for producer %d epoch %d on %s refused: %s: %s",
            "COMMIT" if commit else "ABORT",
            producer_id,
            producer_epoch,
            tp,
            error.error_code.name.upper(),
            error.message,
        )
        return error.error_code
    appended(manager, partition, info.base_offset, info.last_offset, info.size)
    for listener in manager.marker_listeners:
        listener(tp, producer_id, producer_epoch, commit)
    return ErrorCode.none


def check_min_isr(manager: ReplicaManager, partition: Partition) -> None:
    """Refuse an acks=all write before it is appended (NOT_ENOUGH_REPLICAS) while the ISR
    is smaller than ``min.insync.replicas``, as Kafka's ``appendRecordsToLeader``."""
    min_isr = manager.min_insync_replicas(partition.tp.topic)
    replication = partition.replication
    if replication is not None and replication.under_min_isr(min_isr):
        raise KafkaError(
            ErrorCode.not_enough_replicas,
            f"{partition.tp} has {len(partition.isr)} in-sync replica(s) "
            f"{list(partition.isr)}, fewer than min.insync.replicas {min_isr}",
        )
