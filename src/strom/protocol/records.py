"""Records inside a v2 batch: iterate them, build batches from them, transaction markers.

Only the paths whose semantics need per-record work use this module (compaction, transactions'
control records, broker-side recompression); produce and fetch stay at the batch level
(:mod:`strom.protocol.batch`).

A record, as Kafka's ``DefaultRecord`` writes it (zig-zag varints)::

    length varint, attributes int8 (unused), timestampDelta varlong, offsetDelta varint,
    keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
    headerCount varint, then per header: keyLength varint, utf-8 key, valueLength varint, value

Varints are read with kio's native readers; kio's own record codec does not fit (it turns
timestamps into whole-second datetimes, has no compression and no empty batches).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Final

import crc32c
from kio.serial.errors import DecodeError
from kio.serial.readers import read_signed_varint, read_signed_varlong

from strom.common import ErrorCode, KafkaError
from strom.protocol.batch import (
    COMPRESSION_MASK,
    CONTROL_FLAG,
    CRC_START,
    DELETE_HORIZON_FLAG,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
    BatchHeader,
    Compression,
    TimestampType,
)
from strom.protocol.compression import compress, decompress

RecordHeader = tuple[str, bytes | None]
"""A record header: its utf-8 key and its value, which may be null."""

_INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Record:
    """One record with its absolute offset and timestamp (ms)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[RecordHeader, ...] = ()


class ControlRecordType(enum.IntEnum):
    """The transaction marker types of Kafka's ``ControlRecordType``."""

    ABORT = 0
    COMMIT = 1


def _corrupt(message: str) -> KafkaError:
    return KafkaError(ErrorCode.corrupt_message, message)


# --- reading ---------------------------------------------------------------------------------


def iter_records(batch: bytes | bytearray | memoryview) -> Iterator[Record]:
    """The records of one whole v2 batch, decompressed; the batch's CRC is not checked here.

    Header and decompression errors raise at once, a malformed record when iteration reaches it.
    """
    data: bytes | memoryview = batch if isinstance(batch, bytes) else memoryview(batch).toreadonly()
    if len(data) < HEADER_SIZE:
        raise _corrupt(f"truncated batch: {len(data)} bytes, fewer than a v2 batch header")
    header = BatchHeader.read(data)
    if header.magic != MAGIC_V2:
        raise _corrupt(f"unsupported record batch magic {header.magic}; only v2 is readable")
    if header.size > len(data) or header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise _corrupt(f"batch length {header.batch_length} does not fit its {len(data)} bytes")
    if header.record_count < 0:
        raise _corrupt(f"negative record count {header.record_count}")
    codec = _codec(header.attributes)
    if header.record_count == 0:  # left by compaction; Kafka reads no records section then
        return iter(())
    position, end = HEADER_SIZE, header.size
    if codec != Compression.NONE:
        data = decompress(codec, memoryview(data)[HEADER_SIZE:end])
        position, end = 0, len(data)
    log_append_time = (
        header.max_timestamp if header.timestamp_type == TimestampType.LOG_APPEND_TIME else None
    )
    return _read_records(data, position, end, header, log_append_time)


def _codec(attributes: int) -> Compression:
    try:
        return Compression(attributes & COMPRESSION_MASK)
    except ValueError:
        raise KafkaError(
            ErrorCode.unsupported_compression_type,
            f"unknown compression codec {attributes & COMPRESSION_MASK}",
        ) from None


def _read_records(
    data: bytes | memoryview,
    position: int,
    end: int,
    header: BatchHeader,
    log_append_time: int | None,
) -> Iterator[Record]:
    """The per-record hot loop, inlined.

    A slice past a record's end comes up short without error, so bounds are checked once per
    record: its fields must end exactly where its length says.
    """
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    read_varint, read_varlong = read_signed_varint, read_signed_varlong
    for index in range(header.record_count):
        try:
            length, size = read_varint(data, position)
            position += size
            record_end = position + length
            if length <= 0 or record_end > end:
                raise _corrupt(f"record length {length} with {end - position} bytes left")
            # attributes (int8): no record-level attribute is defined
            timestamp_delta, size = read_varlong(data, position + 1)
            position += 1 + size
            offset_delta, size = read_varint(data, position)
            position += size
            key, position = _read_bytes(data, position)
            value, position = _read_bytes(data, position)
            count, size = read_varint(data, position)
            position += size
            headers: tuple[RecordHeader, ...] = ()
            if count:
                headers, position = _read_headers(data, position, count)
            if position != record_end:
                raise _corrupt(f"record fields end {position - record_end} bytes off its length")
        except (DecodeError, ValueError) as error:  # kio's varint errors, bad utf-8
            raise _corrupt(f"record {index} of batch at offset {base_offset}: {error}") from error
        yield Record(
            base_offset + offset_delta,
            base_timestamp + timestamp_delta if log_append_time is None else log_append_time,
            key,
            value,
            headers,
        )
    if position != end:
        raise _corrupt(
            f"batch at offset {base_offset} has {end - position} bytes after its "
            f"{header.record_count} records"
        )


def _read_bytes(data: bytes | memoryview, position: int) -> tuple[bytes | None, int]:
    length, size = read_signed_varint(data, position)
    position += size
    if length >= 0:
        return bytes(data[position : position + length]), position + length
    if length == -1:
        return None, position
    raise _corrupt(f"negative field length {length}")


def _read_headers(
    data: bytes | memoryview, position: int, count: int
) -> tuple[tuple[RecordHeader, ...], int]:
    if count < 0:
        raise _corrupt(f"negative header count {count}")
    headers: list[RecordHeader] = []
    for _ in range(count):
        key, position = _read_bytes(data, position)
        if key is None:
            raise _corrupt("null header key")
        value, position = _read_bytes(data, position)
        headers.append((key.decode(), value))
    return tuple(headers), position


# --- writing ---------------------------------------------------------------------------------


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int | None = None,
    last_offset_delta: int | None = None,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    delete_horizon_ms: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """Encode one complete v2 batch, CRC included.

    Offset deltas are ``record.offset - base_offset`` (gaps stay, as after compaction) and
    ``last_offset_delta`` may exceed the last record's (the cleaner keeps a batch's last offset).
    An empty ``records`` needs ``base_offset`` and, as Kafka's cleaner writes it, gets no records
    section and no codec. ``max_timestamp`` defaults to the records' latest
    (``NO_TIMESTAMP`` when there are none); a LogAppendTime batch passes its append time.
    With ``delete_horizon_ms`` the batch carries the horizon in baseTimestamp (KIP-534).
    """
    if base_offset is None:
        if not records:
            raise ValueError("an empty batch needs an explicit base_offset")
        base_offset = records[0].offset
    if max_timestamp is None:
        max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    if not records:
        compression = Compression.NONE
    attributes = compression | (TIMESTAMP_TYPE_FLAG if timestamp_type else 0)
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG
    if is_control:
        attributes |= CONTROL_FLAG
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG
        base_timestamp = delete_horizon_ms
    else:
        base_timestamp = records[0].timestamp if records else max_timestamp
    body, last_delta = _write_records(records, base_offset, base_timestamp)
    if last_offset_delta is None:
        last_offset_delta = last_delta
    elif not last_delta <= last_offset_delta <= _INT32_MAX:
        raise ValueError(
            f"last_offset_delta {last_offset_delta} is below the last record's {last_delta} "
            "or above 2^31-1"
        )
    if compression != Compression.NONE:
        body = compress(compression, body)
    header = BatchHeader(
        base_offset=base_offset,
        batch_length=HEADER_SIZE - LOG_OVERHEAD + len(body),
        partition_leader_epoch=partition_leader_epoch,
        magic=MAGIC_V2,
        crc=0,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        record_count=len(records),
    )
    crc = crc32c.crc32c(body, crc32c.crc32c(header.pack()[CRC_START:]))
    return b"".join((replace(header, crc=crc).pack(), body))


def _write_records(
    records: Sequence[Record], base_offset: int, base_timestamp: int
) -> tuple[bytes, int]:
    """The uncompressed records section and the last record's offset delta (0 if none)."""
    parts: list[bytes] = []
    previous_delta = -1
    for record in records:
        offset_delta = record.offset - base_offset
        if not previous_delta < offset_delta <= _INT32_MAX:
            raise ValueError(
                f"record offset {record.offset} is not above the previous one or is more than "
                f"2^31-1 past base offset {base_offset}"
            )
        previous_delta = offset_delta
        timestamp_delta = record.timestamp - base_timestamp
        if not _INT64_MIN <= timestamp_delta <= _INT64_MAX:
            raise ValueError(f"record timestamp {record.timestamp} is too far from the batch's")
        key, value = record.key, record.value
        fields = [
            b"\x00",  # attributes
            _varint(timestamp_delta),
            _varint(offset_delta),
            _NULL_LENGTH if key is None else _varint(len(key)),
            key or b"",
            _NULL_LENGTH if value is None else _varint(len(value)),
            value or b"",
            _varint(len(record.headers)),
        ]
        for header_key, header_value in record.headers:
            encoded_key = header_key.encode()
            fields += (_varint(len(encoded_key)), encoded_key)
            if header_value is None:
                fields.append(_NULL_LENGTH)
            else:
                fields += (_varint(len(header_value)), header_value)
        parts.append(_varint(sum(map(len, fields))))
        parts.extend(fields)
    return b"".join(parts), max(previous_delta, 0)


def _varint(value: int) -> bytes:
    """Zig-zag varint (or varlong: the encoding is the same for any in-range value)."""
    zigzag = (value << 1) ^ (value >> 63)
    if zigzag < 0x80:
        return _ONE_BYTE_VARINTS[zigzag]
    if zigzag < 0x4000:
        return bytes(((zigzag & 0x7F) | 0x80, zigzag >> 7))
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


_ONE_BYTE_VARINTS: Final = tuple(bytes((b,)) for b in range(0x80))
_NULL_LENGTH: Final = _varint(-1)


# --- transaction markers ---------------------------------------------------------------------

_CONTROL_KEY = struct.Struct(">hh")
"""version, type"""
_END_TXN_MARKER = struct.Struct(">hi")
"""version, coordinator epoch"""


def build_control_batch(
    kind: ControlRecordType,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int = 0,
    timestamp: int,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Kafka's EndTransactionMarker: a transactional control batch of one record."""
    record = Record(
        offset=base_offset,
        timestamp=timestamp,
        key=_CONTROL_KEY.pack(0, kind),
        value=_END_TXN_MARKER.pack(0, coordinator_epoch),
    )
    return build_batch(
        [record],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def read_control_record(record: Record) -> tuple[ControlRecordType, int]:
    """The marker type and coordinator epoch of a transaction marker record."""
    key, value = record.key, record.value
    if key is None or len(key) < _CONTROL_KEY.size:
        raise _corrupt(f"control record key too short: {key!r}")
    version, kind = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise _corrupt(f"control record key version {version}")
    if kind not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise _corrupt(f"control record type {kind} is not a transaction marker")
    if value is None or len(value) < _END_TXN_MARKER.size:
        raise _corrupt(f"transaction marker value too short: {value!r}")
    value_version, coordinator_epoch = _END_TXN_MARKER.unpack_from(value)
    if value_version < 0:
        raise _corrupt(f"transaction marker version {value_version}")
    return ControlRecordType(kind), coordinator_epoch
