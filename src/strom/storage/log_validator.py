"""The per-record part of Kafka's ``LogValidator``: keys on compacted topics, recompression.

Pure: bytes in, bytes out. :meth:`strom.storage.partition_log.PartitionLog.append` calls
:func:`validate_records` only when the topic needs it (:func:`needs_record_work`), before it
assigns offsets, so the usual append path stays at the batch level.

- **Keys**: on a topic whose cleanup.policy holds ``compact``, every record needs a key. Each
  keyless record is one :data:`RecordError` (its index in the batch and Kafka's message); the
  batch is refused with INVALID_RECORD and the message Kafka's ``processRecordErrors`` writes.
- **Recompression**: with ``compression.type`` other than ``producer`` and unlike the batch's
  codec, the batch is rebuilt with the topic's codec (Kafka's levels), keeping its records,
  timestamps, timestamp type, producer id, epoch, base sequence, transactional flag and last
  offset delta. A batch already in the topic's codec, or a control batch, is kept byte for
  byte (clients' control batches are refused later, by the producer state's checks).
"""

from __future__ import annotations

from typing import Final

from strom.common import ErrorCode, KafkaError
from strom.protocol.batch import (
    COMPRESSION_MASK,
    CONTROL_FLAG,
    BatchHeader,
    Compression,
    summarize_batches,
)
from strom.protocol.records import Record, build_batch, iter_records
from strom.storage.log_config import LogConfig

__all__ = ["RecordError", "RecordValidationError", "needs_record_work", "validate_records"]

RecordError = tuple[int, str]
"""``(index of the record in its batch, message)``: one entry of Produce's ``record_errors``."""

_SHOWN_ERRORS: Final = 3


class RecordValidationError(KafkaError):
    """Records refused one by one (Kafka's ``RecordValidationException``); Produce v8+ answers
    with ``record_errors`` and the message."""

    def __init__(
        self, error_code: ErrorCode, message: str, record_errors: tuple[RecordError, ...]
    ) -> None:
        super().__init__(error_code, message)
        self.record_errors = record_errors


def needs_record_work(config: LogConfig) -> bool:
    """Whether appends to a log with ``config`` must look at records (compaction keys or a
    broker-side codec)."""
    return config.compacts or config.compression is not None


def validate_records(buffer: bytearray, *, config: LogConfig, partition: str) -> bytearray:
    """Check keys and recompress as ``config`` says; return ``buffer`` or a rebuilt copy.

    Every batch is first validated as :func:`strom.protocol.batch.summarize_batches` does
    (CRC, lengths, counts, size), since its records are read. ``partition`` names the topic
    partition in messages (``<topic>-<partition>``, as Kafka prints it).
    """
    summaries = summarize_batches(buffer, max_batch_bytes=config.max_message_bytes)
    target = config.compression
    parts: list[bytes | memoryview] = []
    changed = False
    position = 0
    view = memoryview(buffer)
    for _, size, _, _ in summaries:
        batch = view[position : position + size]
        position += size
        attributes = batch[22]  # the low byte
        source = Compression(attributes & COMPRESSION_MASK)
        # Control batches keep their codec (Kafka recompresses none that come uncompressed).
        recompress = target not in (None, source) and not attributes & CONTROL_FLAG
        if not recompress and not config.compacts:
            parts.append(batch)
            continue
        records = list(iter_records(batch))
        if config.compacts:
            _check_keys(records, partition)
        if recompress:
            assert target is not None
            parts.append(_rebuild(BatchHeader.read(batch), records, target))
            changed = True
        else:
            parts.append(batch)
    return bytearray(b"".join(parts)) if changed else buffer


def _check_keys(records: list[Record], partition: str) -> None:
    errors = tuple(
        (
            index,
            f"Compacted topic cannot accept message without key in topic partition {partition}.",
        )
        for index, record in enumerate(records)
        if record.key is None
    )
    if errors:
        shown = ", ".join(
            f"RecordError(batchIndex={index}, message='{message}')"
            for index, message in errors[:_SHOWN_ERRORS]
        )
        raise RecordValidationError(
            ErrorCode.invalid_record,
            f"One or more records have been rejected due to {len(errors)} record errors in "
            f"total, and only showing the first three errors at most: [{shown}]",
            errors,
        )


def _rebuild(header: BatchHeader, records: list[Record], codec: Compression) -> bytes:
    return build_batch(
        records,
        base_offset=header.base_offset,
        last_offset_delta=header.last_offset_delta,
        compression=codec,
        timestamp_type=header.timestamp_type,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        partition_leader_epoch=header.partition_leader_epoch,
        max_timestamp=header.max_timestamp,
    )
