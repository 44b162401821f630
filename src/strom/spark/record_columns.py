"""Fetched v2 record batches straight to an Arrow record batch in the source's schema.

A Fetch answer's ``records`` bytes are walked batch by batch (control batches and, with
read_committed, aborted transactions' batches skipped; compressed ones decompressed), then
the records' fields become columns with numpy: the varints of every record are decoded at
once, keys, values and headers are gathered by Arrow from the batch bytes (a ``binary_view``
array over them, cast to ``binary``), offsets and timestamps are the batches' bases plus the
decoded deltas. No record becomes a Python object.

Finding where each record starts is a chain: a record's position is the previous one's plus
its length prefix. ``_bodies`` follows it without a Python step per record where it can:
records of one length (fixed-size values; the one- and two-byte offset and timestamp deltas
break a batch into a few runs) are guessed one length apart and the guesses checked at once;
the batches left over are independent, so many short ones are walked together, the k-th
record of each in one numpy step; only batches too long for that (mixed lengths, few batches)
are walked one record at a time. Each record's fields must end exactly where its length says,
and each record where the next one starts, which is checked for all records at once.

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
from kio.serial.errors import BufferUnderflow
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

    The length-prefix positions are found as the module docstring says, then decoded and
    checked all at once: every record must end where the next one of its batch starts, the
    last one at the batch's end.
    """
    buffer = np.frombuffer(data, np.uint8)
    pieces: list[np.ndarray[Any, Any]] = []
    rest: list[tuple[int, int, int]] = []  # (index in pieces, first position, records)
    try:
        for (begin, _), count in zip(spans, counts, strict=True):
            position, left = _runs(data, buffer, begin, count, pieces)
            if left:
                rest.append((len(pieces), position, left))
                pieces.append(buffer[:0])  # filled in by _find_rest
        if rest:
            _find_rest(data, buffer, rest, pieces)
    except (IndexError, BufferUnderflow):
        raise _corrupt("a record runs past its batch") from None
    positions = np.concatenate(pieces) if len(pieces) > 1 else pieces[0].astype(np.int64)
    lengths, sizes = _varints(buffer, positions)
    if (lengths <= 0).any():
        raise _corrupt("a record length that is not positive")
    starts = positions + sizes
    ends = starts + lengths
    following = np.empty_like(positions)
    following[:-1] = positions[1:]
    following[np.cumsum(counts) - 1] = [stop for _, stop in spans]
    if (ends != following).any():
        raise _corrupt("a batch's records do not end where its length says")
    return starts, ends


def _runs(
    data: BytesLike,
    buffer: np.ndarray[Any, Any],
    position: int,
    count: int,
    pieces: list[np.ndarray[Any, Any]],
) -> tuple[int, int]:
    """Appends to ``pieces`` the positions of a batch's records while they come in runs of
    one length; returns where it stopped and how many records are left (a record whose
    successor has another length: the rest is walked otherwise).

    A run is found at once: the positions one length apart are guessed up to the batch's
    last record and the first whose prefix bytes differ ends it. Each guess is a record's
    start if all before it are, since each of those had the run's length.
    """
    while count:
        length, size = read_signed_varint(data, position)
        stride = size + length
        if length <= 0 or size > 2:
            return position, count
        head = data[position : position + size]
        if count > 1 and data[position + stride : position + stride + size] != head:
            return position, count  # the next record has another length
        guesses = np.arange(position, position + stride * count, stride, dtype=np.int64)
        same = buffer[np.minimum(guesses, len(buffer) - 1)] == buffer[position]
        if size == 2:
            same &= buffer[np.minimum(guesses + 1, len(buffer) - 1)] == buffer[position + 1]
        run = count if same.all() else int(np.argmin(same))
        pieces.append(guesses[:run])
        position += stride * run
        count -= run
    return position, 0


_STEP_RECORDS = 64
"""A numpy step over many batches' k-th records costs about as much as walking this many
records in Python (measured: ~25 us against ~0.4 us)."""


def _find_rest(
    data: BytesLike,
    buffer: np.ndarray[Any, Any],
    rest: list[tuple[int, int, int]],
    pieces: list[np.ndarray[Any, Any]],
) -> None:
    """The positions of the records ``_runs`` left, in ``pieces``: the batches are
    independent, so the shorter ones are walked together (one numpy step per record index),
    the longer ones, where that would cost more steps than records, one record at a time."""
    sizes = np.array([left for _, _, left in rest], np.int64)
    order = np.argsort(sizes, kind="stable")
    ordered = sizes[order]
    # Walking the j shortest together costs ordered[j - 1] steps; the others, their records.
    after = np.concatenate([np.cumsum(ordered[::-1])[::-1], [0]])
    together = int(np.argmin(np.concatenate([[0], ordered]) * _STEP_RECORDS + after))
    if together:
        chosen = [rest[i] for i in order[:together]]
        begins = np.array([begin for _, begin, _ in chosen], np.int64)
        walked = _walk_together(buffer, begins, ordered[:together])
        for (slot, _, _), positions in zip(chosen, walked, strict=True):
            pieces[slot] = positions
    for i in order[together:]:
        slot, begin, left = rest[i]
        pieces[slot] = _walk(data, begin, left)


def _walk_together(
    buffer: np.ndarray[Any, Any], begins: np.ndarray[Any, Any], counts: np.ndarray[Any, Any]
) -> list[np.ndarray[Any, Any]]:
    """Each batch's length-prefix positions, all batches' k-th record in one step (``counts``
    ascending: the batches still going are a suffix)."""
    table = np.empty((len(begins), int(counts[-1])), np.int64)
    position = begins.copy()
    first = 0
    for k in range(int(counts[-1])):
        while counts[first] <= k:
            first += 1
        live = position[first:]
        table[first:, k] = live
        lengths, sizes = _varints(buffer, live)
        if (lengths <= 0).any():
            raise _corrupt("a record length that is not positive")
        position[first:] = live + sizes + lengths
    return [table[row, :count] for row, count in enumerate(counts.tolist())]


def _walk(data: BytesLike, begin: int, count: int) -> np.ndarray[Any, Any]:
    """One batch's length-prefix positions, one record at a time (raises IndexError past the
    data)."""
    prefixes = array("q")
    note = prefixes.append
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
    return np.frombuffer(prefixes, np.int64)


def _varints(
    buffer: np.ndarray[Any, Any], positions: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The zig-zag varints (or varlongs) at ``positions`` and their sizes in bytes: one numpy
    step per byte of the longest, over the varints that have that byte (positions past the
    buffer read its last byte: a record that overruns is caught by the length checks). The
    first two bytes are decoded by whole-array steps (most varints are one or two bytes:
    values under 64 or 8192), the rest over the varints that have them."""
    last = len(buffer) - 1
    byte = buffer[np.minimum(positions, last)]
    two = byte >= 0x80
    if not two.any():
        unsigned = byte.astype(np.int64)
        return (unsigned >> 1) ^ -(unsigned & 1), np.ones(len(positions), np.int64)
    second = buffer[np.minimum(positions + 1, last)]
    unsigned = np.where(two, (byte & 0x7F) | (second.astype(np.int64) << 7), byte)
    sizes = two.astype(np.int64) + 1
    more = np.flatnonzero(two & (second >= 0x80))
    unsigned[more] &= 0x3FFF  # the bits, as uint64 would hold them
    shift = 14
    while len(more):
        if shift > 63:
            raise _corrupt("a record varint longer than 10 bytes")
        byte = buffer[np.minimum(positions[more] + sizes[more], last)]
        unsigned[more] |= (byte & 0x7F).astype(np.int64) << shift
        sizes[more] += 1
        more = more[byte >= 0x80]
        shift += 7
    values = (unsigned.view(np.uint64) >> np.uint64(1)).view(np.int64) ^ -(unsigned & 1)
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
    views = np.zeros((rows, 4), np.int32)  # little-endian: size, then 12 bytes
    views[:, 0] = sizes
    last = len(buffer) - 1
    short = np.flatnonzero((sizes > 0) & (sizes <= _INLINE))  # empty and null: all zeros
    if len(short):
        lanes = np.arange(_INLINE)
        inline = buffer[np.minimum(start[short, None] + lanes, last)]
        inline[lanes >= sizes[short, None]] = 0
        views.view(np.uint8).reshape(rows, 16)[short, 4:16] = inline
    long = sizes > _INLINE
    if long.any():  # the first 4 bytes, then the data buffer's index (0) and offset
        which = slice(None) if long.all() else np.flatnonzero(long)
        first = start[which]
        views[which, 1] = buffer[np.minimum(first[:, None] + np.arange(4), last)].view("<i4")[:, 0]
        views[which, 3] = first
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
