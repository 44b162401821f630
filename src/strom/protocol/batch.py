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
_SPAN = struct.Struct(">qi4xb6xi")  # baseOffset, batchLength, magic, lastOffsetDelta
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


_LAST_CODEC: Final = int(max(Compression))
"""The highest codec id (a plain int: reading an enum member costs ~10x on the hot path)."""


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
    def summary(self) -> BatchSummary:
        """What appending needs of this batch (see :data:`BatchSummary`)."""
        return (self.base_offset, self.size, self.last_offset_delta, self.max_timestamp)

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


BatchSpan = tuple[int, int, int, int]
"""``(base_offset, batch_length, magic, last_offset_delta)``: the header fields walking a
log's batches needs (where each batch ends, which offsets it holds, whether it is v2)."""


def read_batch_span(buffer: bytes | bytearray | memoryview, position: int = 0) -> BatchSpan:
    """The :data:`BatchSpan` of the batch at ``position``, without building a BatchHeader."""
    span: BatchSpan = _SPAN.unpack_from(buffer, position)
    return span


def whole_batches_size(buffer: bytes | bytearray | memoryview) -> int:
    """How many leading bytes of ``buffer`` are whole batches (a fetch answer may end inside
    one, cut by its byte limit); only the length fields are read."""
    position, end = 0, len(buffer)
    while position + LOG_OVERHEAD <= end:
        size = LOG_OVERHEAD + int.from_bytes(buffer[position + 8 : position + 12], "big")
        if position + size > end:
            break
        position += size
    return position


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
    return BatchHeader(*_validated_fields(buffer, position, end, max_batch_bytes, from_client))


def _validated_fields(
    buffer: bytes | bytearray | memoryview,
    position: int,
    end: int,
    max_batch_bytes: int,
    from_client: bool,
) -> tuple[int, ...]:
    """:func:`validate_batch`'s checks; the header fields as one struct unpack gives them."""
    available = end - position
    if available < HEADER_SIZE:
        raise _short_batch_error(buffer, position, available)
    fields: tuple[int, ...] = _HEADER.unpack_from(buffer, position)
    (_, batch_length, _, magic, crc, attributes, last_offset_delta, _, _, _, _, _, record_count) = (
        fields
    )
    size = LOG_OVERHEAD + batch_length
    if batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise _corrupt(f"batch length {batch_length} is smaller than a v2 batch header")
    if size > available:
        raise _corrupt(f"truncated batch: header says {size} bytes, only {available} present")
    if magic != MAGIC_V2:
        raise _corrupt(f"unsupported record batch magic {magic}; only v2 is accepted")
    if size > max_batch_bytes:
        raise KafkaError(
            ErrorCode.message_too_large,
            f"batch of {size} bytes exceeds max.message.bytes {max_batch_bytes}",
        )
    actual_crc = crc32c.crc32c(memoryview(buffer)[position + CRC_START : position + size])
    if actual_crc != crc:
        raise _corrupt(f"CRC mismatch: header {crc:#010x}, computed {actual_crc:#010x}")
    if attributes & COMPRESSION_MASK > _LAST_CODEC:
        raise KafkaError(
            ErrorCode.unsupported_compression_type,
            f"unknown compression codec {attributes & COMPRESSION_MASK}",
        )
    if record_count < 0 or last_offset_delta < 0:
        raise KafkaError(ErrorCode.invalid_record, "negative record count or offset delta")
    if not from_client:
        return fields
    if record_count != last_offset_delta + 1:
        # Producers always send dense batches; only compaction leaves gaps.
        raise KafkaError(
            ErrorCode.invalid_record,
            f"record count {record_count} does not match last offset delta {last_offset_delta}",
        )
    if record_count == 0:
        raise KafkaError(ErrorCode.invalid_record, "empty record batch")
    return fields


def _short_batch_error(
    buffer: bytes | bytearray | memoryview, position: int, available: int
) -> KafkaError:
    """Why fewer bytes than a whole v2 header are not a batch."""
    if available < LOG_OVERHEAD:
        return _corrupt(f"truncated batch: {available} bytes, fewer than a batch's offset+length")
    _, batch_length = _OFFSET_AND_LENGTH.unpack_from(buffer, position)
    if batch_length < HEADER_SIZE - LOG_OVERHEAD:
        return _corrupt(f"batch length {batch_length} is smaller than a v2 batch header")
    size = LOG_OVERHEAD + batch_length
    return _corrupt(f"truncated batch: header says {size} bytes, only {available} present")


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


BatchSummary = tuple[int, int, int, int]
"""``(base_offset, size, last_offset_delta, max_timestamp)`` of a validated batch: what an
append needs, taken from the one struct unpack that validation does anyway."""


def summarize_batches(
    buffer: bytes | bytearray | memoryview, *, max_batch_bytes: int, from_client: bool = True
) -> list[BatchSummary]:
    """The append path's :func:`validate_batches`: the same checks and errors, batch by batch,
    but summaries instead of :class:`BatchHeader` objects (empty for an empty buffer)."""
    summaries: list[BatchSummary] = []
    position, end = 0, len(buffer)
    while position < end:
        fields = _validated_fields(buffer, position, end, max_batch_bytes, from_client)
        (base_offset, batch_length, _, _, _, _, last_offset_delta, _, max_timestamp, _, _, _, _) = (
            fields
        )
        size = LOG_OVERHEAD + batch_length
        summaries.append((base_offset, size, last_offset_delta, max_timestamp))
        position += size
    return summaries


def assign_offsets(
    buffer: bytearray,
    *,
    base_offset: int,
    leader_epoch: int,
    log_append_time: int,
    max_batch_bytes: int,
) -> list[BatchSummary]:
    """Validate a produce request's batches and write the broker's fields into their headers,
    in one pass (Kafka's ``LogValidator``, for v2 batches: no per-record work).

    ``buffer`` is the append's private copy: offsets from ``base_offset`` on, the leader epoch
    and, unless ``log_append_time`` is NO_TIMESTAMP, that time as LogAppendTime (new CRC).
    Raises as :func:`validate_batches` does, possibly after rewriting earlier batches (the
    caller drops the copy). Returns the summaries as written (empty for an empty buffer).
    """
    summaries: list[BatchSummary] = []
    position, end = 0, len(buffer)
    offset = base_offset
    stamped = log_append_time != NO_TIMESTAMP
    while position < end:
        fields = _validated_fields(buffer, position, end, max_batch_bytes, True)
        (_, batch_length, _, _, _, _, last_offset_delta, _, max_timestamp, _, _, _, _) = fields
        _INT64.pack_into(buffer, position, offset)
        _INT32.pack_into(buffer, position + 12, leader_epoch)
        if stamped:
            set_log_append_time(buffer, position, log_append_time)
            max_timestamp = log_append_time
        size = LOG_OVERHEAD + batch_length
        summaries.append((offset, size, last_offset_delta, max_timestamp))
        offset += last_offset_delta + 1
        position += size
    return summaries


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
