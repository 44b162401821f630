"""The v2 record batch header: a view over its 61 bytes, batch-level validation, offset rewrite.

This is the hot path of produce and fetch, so it never looks inside the records: a batch is
validated by its lengths, magic, CRC-32C and counts, and gets its base offset (and, for
LogAppendTime topics, its max timestamp) written into the header in place.

Layout (big-endian), as in Kafka's ``DefaultRecordBatch``::

    0  baseOffset int64          27 baseTimestamp int64
    8  batchLength int32         35 maxTimestamp int64
    12 partitionLeaderEpoch i32  43 producerId int64
    16 magic int8                51 producerEpoch int16
    17 crc uint32 (CRC-32C of    53 baseSequence int32
       bytes 21..end)            57 recordCount int32
    21 attributes int16          61 records...
    23 lastOffsetDelta int32
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Final

import crc32c

from strom.common import ErrorCode, KafkaError

HEADER_SIZE: Final = 61
LOG_OVERHEAD: Final = 12
"""baseOffset + batchLength: the bytes before the length-counted part of a batch."""
MAGIC_V2: Final = 2
CRC_START: Final = 21
NO_PRODUCER_ID: Final = -1
NO_SEQUENCE: Final = -1
NO_TIMESTAMP: Final = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")

COMPRESSION_MASK: Final = 0x07
TIMESTAMP_TYPE_FLAG: Final = 0x08
TRANSACTIONAL_FLAG: Final = 0x10
CONTROL_FLAG: Final = 0x20
DELETE_HORIZON_FLAG: Final = 0x40


class Compression(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(enum.IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The decoded fixed header of one v2 record batch."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @classmethod
    def read(cls, buffer: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
        return cls(*_HEADER.unpack_from(buffer, position))

    def pack(self) -> bytes:
        """The 61 header bytes, ``crc`` as it is in this header (see ``records.build_batch``)."""
        return _HEADER.pack(
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.record_count,
        )

    @property
    def size(self) -> int:
        """Bytes the whole batch takes, header included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType(1 if self.attributes & TIMESTAMP_TYPE_FLAG else 0)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (2**31)


def _corrupt(message: str) -> KafkaError:
    return KafkaError(ErrorCode.corrupt_message, message)


def validate_batch(
    buffer: bytes | bytearray | memoryview,
    position: int,
    end: int,
    *,
    max_batch_bytes: int,
    from_client: bool = True,
) -> BatchHeader:
    """Check the batch at ``position`` and return its header; raise KafkaError if it is bad.

    Errors are Kafka's: CORRUPT_MESSAGE for framing, magic and CRC problems,
    UNSUPPORTED_COMPRESSION_TYPE for an unknown codec, MESSAGE_TOO_LARGE over the limit,
    INVALID_RECORD for counts that disagree with the header. Batches already in a log
    (``from_client=False``) may have gaps or no records left after compaction.
    """
    available = end - position
    if available < LOG_OVERHEAD:
        raise _corrupt(f"truncated batch: {available} bytes, fewer than a batch's offset+length")
    _, batch_length = _OFFSET_AND_LENGTH.unpack_from(buffer, position)
    size = LOG_OVERHEAD + batch_length
    if batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise _corrupt(f"batch length {batch_length} is smaller than a v2 batch header")
    if size > available:
        raise _corrupt(f"truncated batch: header says {size} bytes, only {available} present")
    header = BatchHeader.read(buffer, position)
    if header.magic != MAGIC_V2:
        raise _corrupt(f"unsupported record batch magic {header.magic}; only v2 is accepted")
    if size > max_batch_bytes:
        raise KafkaError(
            ErrorCode.message_too_large,
            f"batch of {size} bytes exceeds max.message.bytes {max_batch_bytes}",
        )
    actual_crc = crc32c.crc32c(memoryview(buffer)[position + CRC_START : position + size])
    if actual_crc != header.crc:
        raise _corrupt(f"CRC mismatch: header {header.crc:#010x}, computed {actual_crc:#010x}")
    if header.attributes & COMPRESSION_MASK > Compression.ZSTD:
        raise KafkaError(
            ErrorCode.unsupported_compression_type,
            f"unknown compression codec {header.attributes & COMPRESSION_MASK}",
        )
    if header.record_count < 0 or header.last_offset_delta < 0:
        raise KafkaError(ErrorCode.invalid_record, "negative record count or offset delta")
    if not from_client:
        return header
    if header.record_count != header.last_offset_delta + 1:
        # Producers always send dense batches; only compaction leaves gaps.
        raise KafkaError(
            ErrorCode.invalid_record,
            f"record count {header.record_count} does not match last offset delta "
            f"{header.last_offset_delta}",
        )
    if header.record_count == 0:
        raise KafkaError(ErrorCode.invalid_record, "empty record batch")
    return header


def validate_batches(
    buffer: bytes | bytearray | memoryview, *, max_batch_bytes: int
) -> list[BatchHeader]:
    """Validate a produce request's record set: one or more whole batches, nothing else."""
    headers: list[BatchHeader] = []
    position, end = 0, len(buffer)
    while position < end:
        header = validate_batch(buffer, position, end, max_batch_bytes=max_batch_bytes)
        headers.append(header)
        position += header.size
    if not headers:
        raise KafkaError(ErrorCode.invalid_record, "produce request has no record batch")
    return headers


def scan_batches(
    buffer: bytes | bytearray | memoryview, position: int = 0, end: int | None = None
) -> tuple[list[tuple[int, BatchHeader]], int]:
    """Walk the valid batches from ``position``; stop at the first invalid or torn one.

    Returns ``(position, header)`` pairs and the position where valid data ends. Recovery uses
    it to find the last complete batch of a segment after a crash.
    """
    stop = len(buffer) if end is None else end
    found: list[tuple[int, BatchHeader]] = []
    while position < stop:
        try:
            header = validate_batch(
                buffer, position, stop, max_batch_bytes=2**31, from_client=False
            )
        except KafkaError:
            break
        found.append((position, header))
        position += header.size
    return found, position


def set_base_offset(buffer: bytearray | memoryview, position: int, base_offset: int) -> None:
    """Assign the broker's offset; baseOffset is outside the CRC, so nothing else changes."""
    _INT64.pack_into(buffer, position, base_offset)


def set_partition_leader_epoch(buffer: bytearray | memoryview, position: int, epoch: int) -> None:
    """partitionLeaderEpoch is outside the CRC too."""
    _INT32.pack_into(buffer, position + 12, epoch)


def set_log_append_time(buffer: bytearray | memoryview, position: int, timestamp_ms: int) -> None:
    """Mark the batch LogAppendTime with the broker's time and recompute its CRC, as Kafka does."""
    (attributes,) = _INT16.unpack_from(buffer, position + CRC_START)
    _INT16.pack_into(buffer, position + CRC_START, attributes | TIMESTAMP_TYPE_FLAG)
    _INT64.pack_into(buffer, position + 35, timestamp_ms)
    rewrite_crc(buffer, position)


def rewrite_crc(buffer: bytearray | memoryview, position: int) -> None:
    (batch_length,) = _INT32.unpack_from(buffer, position + 8)
    end = position + LOG_OVERHEAD + batch_length
    _UINT32.pack_into(
        buffer, position + 17, crc32c.crc32c(memoryview(buffer)[position + CRC_START : end])
    )
