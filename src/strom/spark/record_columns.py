"""Fetched v2 record batches straight to an Arrow record batch in the source's schema.

A Fetch answer's ``records`` bytes are walked batch by batch (control batches and, with
read_committed, aborted transactions' batches skipped; compressed ones decompressed), then
the records' fields become columns with numpy: the varints of every record are decoded at
once, keys, values and headers are gathered by Arrow from the batch bytes (a ``binary_view``
array over them, cast to ``binary``), offsets and timestamps are the batches' bases plus the
decoded deltas. No record becomes a Python object.

One step stays per record: finding where each record starts. A record's position is the
previous one's plus its length prefix, a chain numpy cannot follow, so ``_bodies`` walks the
length prefixes in a tight loop (one or two bytes each, about 0.1 us a record); every other
field is read from the positions it yields. Each record's fields must end exactly where its
length says, which is checked for all records at once.

Record layout (zig-zag varints), as in Kafka's ``DefaultRecord``::

    length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
    keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
    headerCount varint, then per header: keyLength varint, utf-8 key, valueLength varint, value
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from kio.serial.readers import read_signed_varint

from strom.common import ErrorCode, KafkaError
from strom.protocol.batch import (
    COMPRESSION_MASK,
    CONTROL_FLAG,
    HEADER_SIZE,
    MAGIC_V2,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
    BatchHeader,
    Compression,
    whole_batches_size,
)
from strom.protocol.compression import decompress
from strom.protocol.framing import BytesLike
from strom.protocol.records import ControlRecordType, iter_records, read_control_record

__all__ = ["AbortedTransaction", "Kept", "RecordColumns"]

AbortedTransaction = tuple[int, int]
"""``(producer_id, first_offset)`` of a Fetch answer's aborted transactions."""

_INLINE = 12  # a binary_view element holds up to 12 bytes itself


def _corrupt(message: str) -> KafkaError:
    return KafkaError(ErrorCode.corrupt_message, message)


@dataclass
class Kept:
    """The data batches kept from one Fetch answer (their records' bytes and per-batch fields),
    the first offset wanted, and the offset after the answer's last whole batch."""

    records: BytesLike
    first: int
    next_offset: int
    pieces: list[tuple[BytesLike, int, int]] = field(default_factory=list)  # (bytes, start, end)
    counts: list[int] = field(default_factory=list)
    base_offsets: list[int] = field(default_factory=list)
    base_timestamps: list[int] = field(default_factory=list)
    log_append: list[bool] = field(default_factory=list)


class RecordColumns:
    """Turns one partition's fetched record batches into Arrow record batches, in two steps:
    ``keep`` walks the batch headers (cheap: the next fetch can be sent after it), ``arrow``
    decodes the records."""

    def __init__(self, topic: str, partition: int, schema: Any) -> None:
        self.topic = topic
        self.partition = partition
        self.schema = schema
        self.include_headers = "headers" in schema.names

    @staticmethod
    def keep(
        records: BytesLike, *, first: int, aborted: Sequence[AbortedTransaction] | None
    ) -> Kept:
        """The data batches of the whole batches of ``records`` holding offsets from ``first``
        on; ``aborted`` (read_committed only, else None) names the transactions to leave out.
        ``next_offset`` is ``first`` when ``records`` holds no whole batch."""
        kept = Kept(records, first, first)
        pending = sorted((offset, producer) for producer, offset in aborted or ())
        aborting: set[int] = set()
        position, whole = 0, whole_batches_size(records)
        while position < whole:
            header = BatchHeader.read(records, position)
            batch_end = position + header.size
            if header.magic != MAGIC_V2:
                raise _corrupt(f"record batch magic {header.magic} at offset {header.base_offset}")
            while pending and pending[0][0] <= header.last_offset:
                aborting.add(heapq.heappop(pending)[1])
            attributes = header.attributes
            if attributes & CONTROL_FLAG:
                if header.producer_id in aborting and _is_abort(records[position:batch_end]):
                    aborting.discard(header.producer_id)
            elif (
                header.record_count > 0
                and header.last_offset >= first
                and not (attributes & TRANSACTIONAL_FLAG and header.producer_id in aborting)
            ):
                _keep(kept, header, records, position)
            kept.next_offset = max(kept.next_offset, header.last_offset + 1)
            position = batch_end
        return kept

    def arrow(self, kept: Kept, end: int) -> Any:
        """A ``pyarrow.RecordBatch`` of the kept records below ``end``; None when none is."""
        if not kept.counts:
            return None
        data, spans = _one_buffer(kept.records, kept.pieces)
        starts, ends = _bodies(data, spans, kept.counts)
        columns = _Fields(data, starts, ends)
        counts = np.array(kept.counts, np.int64)
        offsets = np.repeat(np.array(kept.base_offsets, np.int64), counts) + columns.offset_delta
        wanted = (offsets >= kept.first) & (offsets < end)
        if not wanted.all():
            columns = columns.take(wanted)
            offsets = offsets[wanted]
            counts = _kept_counts(counts, wanted)
        if len(offsets) == 0:
            return None
        return pa.RecordBatch.from_arrays(
            self._arrays(columns, offsets, counts, kept), schema=self.schema
        )

    def _arrays(
        self,
        fields: _Fields,
        offsets: np.ndarray[Any, Any],
        counts: np.ndarray[Any, Any],
        kept: Kept,
    ) -> list[Any]:
        rows = len(offsets)
        log_append = np.array(kept.log_append, bool)
        stamps = np.where(
            np.repeat(log_append, counts),
            np.repeat(np.array(kept.base_timestamps, np.int64), counts),
            np.repeat(np.array(kept.base_timestamps, np.int64), counts) + fields.timestamp_delta,
        )
        if log_append.all() or not log_append.any():
            kinds = pa.repeat(pa.scalar(int(log_append[0]), pa.int32()), rows)
        else:
            kinds = pa.array(np.repeat(log_append, counts).astype(np.int32), pa.int32())
        arrays = [
            _binary(fields, fields.key_start, fields.key_length),
            _binary(fields, fields.value_start, fields.value_length),
            pa.repeat(pa.scalar(self.topic, pa.string()), rows),
            pa.repeat(pa.scalar(self.partition, pa.int32()), rows),
            pa.array(offsets, pa.int64()),
            pa.array(stamps * 1000, self.schema.field("timestamp").type),
            kinds,
        ]
        if self.include_headers:
            arrays.append(_headers(fields, self.schema.field("headers").type))
        return arrays


def _keep(kept: Kept, header: BatchHeader, records: BytesLike, position: int) -> None:
    attributes = header.attributes
    codec = attributes & COMPRESSION_MASK
    body_start, body_end = position + HEADER_SIZE, position + header.size
    if codec:
        body = decompress(Compression(codec), memoryview(records)[body_start:body_end])
        kept.pieces.append((body, 0, len(body)))
    else:
        kept.pieces.append((records, body_start, body_end))
    kept.counts.append(header.record_count)
    kept.base_offsets.append(header.base_offset)
    log_append = bool(attributes & TIMESTAMP_TYPE_FLAG)
    kept.log_append.append(log_append)
    kept.base_timestamps.append(header.max_timestamp if log_append else header.base_timestamp)


def _one_buffer(
    records: BytesLike, pieces: Sequence[tuple[BytesLike, int, int]]
) -> tuple[BytesLike, list[tuple[int, int]]]:
    """One buffer holding every kept batch's records, and each batch's span in it: the
    fetched bytes themselves unless a batch was compressed."""
    if all(source is records for source, _, _ in pieces):
        return records, [(start, end) for _, start, end in pieces]
    data = b"".join(memoryview(source)[start:end] for source, start, end in pieces)
    spans, position = [], 0
    for _, start, end in pieces:
        spans.append((position, position + end - start))
        position += end - start
    return data, spans


def _is_abort(batch: BytesLike) -> bool:
    return any(
        read_control_record(record)[0] == ControlRecordType.ABORT for record in iter_records(batch)
    )


def _bodies(
    data: BytesLike, spans: Sequence[tuple[int, int]], counts: Sequence[int]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Where each record's body (after its length prefix) starts and ends.

    The one walk per record (see the module docstring) only notes where each length prefix
    is and steps over the record; the prefixes are then decoded and checked all at once.
    """
    prefixes = array("q")
    note = prefixes.append
    try:
        position = 0
        for (begin, stop), count in zip(spans, counts, strict=True):
            position = begin
            for _ in range(count):
                note(position)
                raw = data[position]
                if raw < 0x80:  # one byte: a body under 64 bytes (zig-zag: twice its length)
                    position += 1 + (raw >> 1)
                elif data[position + 1] < 0x80:  # two bytes: under 8 KiB
                    position += 2 + (((raw & 0x7F) | (data[position + 1] << 7)) >> 1)
                else:
                    length, size = read_signed_varint(data, position)
                    position += size + length
            if position != stop:
                raise _corrupt(f"a batch's records end {position - stop} bytes off its length")
    except IndexError:
        raise _corrupt("a record runs past its batch") from None
    positions = np.frombuffer(prefixes, np.int64)
    lengths, sizes = _varints(np.frombuffer(data, np.uint8), positions)
    if (lengths <= 0).any():
        raise _corrupt("a record length that is not positive")
    starts = positions + sizes
    return starts, starts + lengths


def _varints(
    buffer: np.ndarray[Any, Any], positions: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The zig-zag varints (or varlongs) at ``positions`` and their sizes in bytes: one numpy
    step per byte of the longest, over the varints that have that byte."""
    last = len(buffer) - 1
    byte = buffer[np.minimum(positions, last)].astype(np.uint64)
    unsigned = byte & np.uint64(0x7F)
    sizes = np.ones(len(positions), np.int64)
    more = np.flatnonzero(byte & np.uint64(0x80))
    shift = 7
    while len(more):
        if shift > 63:
            raise _corrupt("a record varint longer than 10 bytes")
        byte = buffer[np.minimum(positions[more] + sizes[more], last)].astype(np.uint64)
        unsigned[more] |= (byte & np.uint64(0x7F)) << np.uint64(shift)
        sizes[more] += 1
        more = more[(byte & np.uint64(0x80)) != 0]
        shift += 7
    values = (unsigned >> np.uint64(1)).astype(np.int64) ^ -(unsigned & np.uint64(1)).astype(
        np.int64
    )
    return values, sizes


class _Fields:
    """Every record's fields, decoded from where the bodies start, as numpy columns."""

    def __init__(
        self, data: BytesLike, starts: np.ndarray[Any, Any], ends: np.ndarray[Any, Any]
    ) -> None:
        self.data = data
        self.buffer = buffer = np.frombuffer(data, np.uint8)
        position = starts + 1  # the attributes byte: no record-level attribute is defined
        self.timestamp_delta, size = _varints(buffer, position)
        position = position + size
        self.offset_delta, size = _varints(buffer, position)
        position = position + size
        self.key_start, self.key_length, position = _bytes_field(buffer, position)
        self.value_start, self.value_length, position = _bytes_field(buffer, position)
        self.header_count, size = _varints(buffer, position)
        if (self.header_count < 0).any():
            raise _corrupt("negative header count")
        position = position + size
        self.headers = _header_fields(buffer, position, self.header_count)
        if (self.headers.ends != ends).any():
            raise _corrupt("record fields do not end where their length says")

    def take(self, mask: np.ndarray[Any, Any]) -> _Fields:
        """The fields of the records ``mask`` keeps."""
        taken = object.__new__(_Fields)
        taken.data, taken.buffer = self.data, self.buffer
        for name in (
            "timestamp_delta",
            "offset_delta",
            "key_start",
            "key_length",
            "value_start",
            "value_length",
            "header_count",
        ):
            setattr(taken, name, getattr(self, name)[mask])
        taken.headers = self.headers.take(mask)
        return taken


def _bytes_field(
    buffer: np.ndarray[Any, Any], position: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Start and length (-1: null) of a length-prefixed bytes field, and the position after."""
    length, size = _varints(buffer, position)
    if (length < -1).any():
        raise _corrupt("negative field length")
    start = position + size
    return start, length, start + np.maximum(length, 0)


@dataclass
class _HeaderFields:
    """The records' headers in record order: where each one's key and value are."""

    key_start: np.ndarray[Any, Any]
    key_length: np.ndarray[Any, Any]
    value_start: np.ndarray[Any, Any]
    value_length: np.ndarray[Any, Any]
    record: np.ndarray[Any, Any]  # the index of the record each header belongs to
    ends: np.ndarray[Any, Any]  # where each record's headers end

    def take(self, mask: np.ndarray[Any, Any]) -> _HeaderFields:
        index = np.cumsum(mask) - 1  # the records' new indexes
        keep = mask[self.record]
        return _HeaderFields(
            self.key_start[keep],
            self.key_length[keep],
            self.value_start[keep],
            self.value_length[keep],
            index[self.record[keep]],
            self.ends[mask],
        )


def _header_fields(
    buffer: np.ndarray[Any, Any], position: np.ndarray[Any, Any], count: np.ndarray[Any, Any]
) -> _HeaderFields:
    """Every record's headers, one header of all records that have it per round."""
    rounds: list[tuple[np.ndarray[Any, Any], ...]] = []
    position = position.copy()
    for index in range(int(count.max(initial=0))):
        records = np.flatnonzero(count > index)
        key_start, key_length, after_key = _bytes_field(buffer, position[records])
        if (key_length < 0).any():
            raise _corrupt("null header key")
        value_start, value_length, position[records] = _bytes_field(buffer, after_key)
        rounds.append((key_start, key_length, value_start, value_length, records))
    if not rounds:
        empty = np.zeros(0, np.int64)
        return _HeaderFields(empty, empty, empty, empty, empty, position)
    key_start, key_length, value_start, value_length, record = (
        np.concatenate(column) for column in zip(*rounds, strict=True)
    )
    order = np.argsort(record, kind="stable")
    return _HeaderFields(
        key_start[order],
        key_length[order],
        value_start[order],
        value_length[order],
        record[order],
        position,
    )


def _kept_counts(counts: np.ndarray[Any, Any], wanted: np.ndarray[Any, Any]) -> Any:
    """How many records of each batch ``wanted`` keeps."""
    batch_of = np.repeat(np.arange(len(counts)), counts)
    return np.bincount(batch_of[wanted], minlength=len(counts))


def _binary(
    fields: _Fields,
    start: np.ndarray[Any, Any],
    length: np.ndarray[Any, Any],
    kind: Any = None,
) -> Any:
    """A binary (or ``kind``) array of the byte ranges of ``data``; length -1 is null.

    Built as a ``binary_view`` array pointing into ``data`` (short values inline), which
    Arrow's cast then copies out, element by element in C.
    """
    buffer, rows = fields.buffer, len(start)
    nulls = length < 0
    if nulls.all():  # keys usually: no views to build, nothing to copy
        return pa.nulls(rows, kind or pa.binary())
    sizes = np.maximum(length, 0).astype(np.int32)
    views = np.zeros((rows, 16), np.uint8)
    views[:, 0:4] = sizes.astype("<i4").view(np.uint8).reshape(rows, 4)
    short = np.flatnonzero((sizes > 0) & (sizes <= _INLINE))  # empty and null: all zeros
    if len(short):
        lanes = np.arange(_INLINE)
        inline = buffer[np.minimum(start[short, None] + lanes, len(buffer) - 1)]
        inline[lanes >= sizes[short, None]] = 0
        views[short, 4:16] = inline
    out_of_line = np.flatnonzero(sizes > _INLINE)
    if len(out_of_line):  # the first 4 bytes, then the data buffer's index (0) and offset
        views[out_of_line, 4:8] = buffer[start[out_of_line, None] + np.arange(4)]
        views.view("<i4")[out_of_line, 3] = start[out_of_line]
    validity = pa.py_buffer(np.packbits(~nulls, bitorder="little")) if nulls.any() else None
    array = pa.Array.from_buffers(
        pa.binary_view(),
        rows,
        [validity, pa.py_buffer(views), pa.py_buffer(fields.data)],
        null_count=int(nulls.sum()),
    )
    return array.cast(kind or pa.binary())


def _headers(fields: _Fields, kind: Any) -> Any:
    """The headers column: a list per record, null for a record without headers."""
    headers = fields.headers
    entries = pa.StructArray.from_arrays(
        [
            _binary(fields, headers.key_start, headers.key_length, pa.string()),
            _binary(fields, headers.value_start, headers.value_length),
        ],
        fields=list(kind.value_type),
    )
    counts = fields.header_count
    offsets = np.zeros(len(counts) + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    mask = pa.array(counts == 0)
    return pa.ListArray.from_arrays(pa.array(offsets), entries, type=kind, mask=mask)
