"""A tiny v2 batch builder for the storage tests (uncompressed, CRC-32C via crc32c).

Independent of ``strom.protocol.records`` on purpose: the storage tests must not depend on the
code they feed. Also a few helpers to look at what a log holds.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import crc32c

from strom.protocol.batch import BatchHeader, scan_batches

_HEADER = struct.Struct(">qiibIhiqqqhii")


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if zigzag:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes) -> bytes:
    body = b"".join(
        [
            b"\x00",
            _varint(timestamp_delta),
            _varint(offset_delta),
            _varint(-1) if key is None else _varint(len(key)) + key,
            _varint(len(value)) + value,
            _varint(0),
        ]
    )
    return _varint(len(body)) + body


def make_batch(
    count: int = 1,
    *,
    timestamp: int = 1_000,
    timestamps: Sequence[int] | None = None,
    value_size: int = 10,
    values: Sequence[bytes] | None = None,
    keys: Sequence[bytes | None] | None = None,
    base_offset: int = 0,
    leader_epoch: int = -1,
    magic: int = 2,
    attributes: int = 0,
) -> bytes:
    """An uncompressed v2 batch of ``count`` records, as a producer would send it."""
    if values is None:
        values = [bytes([65 + i % 26]) * value_size for i in range(count)]
    count = len(values)
    if timestamps is None:
        timestamps = [timestamp] * count
    if keys is None:
        keys = [None] * count
    base_timestamp = timestamps[0]
    body = b"".join(
        _record(i, timestamps[i] - base_timestamp, keys[i], values[i]) for i in range(count)
    )
    length = 61 - 12 + len(body)
    header = bytearray(
        _HEADER.pack(
            base_offset,
            length,
            leader_epoch,
            magic,
            0,
            attributes,
            count - 1,
            base_timestamp,
            max(timestamps),
            -1,
            -1,
            -1,
            count,
        )
        + body
    )
    struct.pack_into(">I", header, 17, crc32c.crc32c(bytes(header[21:])))
    return bytes(header)


def headers_of(data: bytes) -> list[BatchHeader]:
    found, end = scan_batches(data)
    assert end == len(data), "trailing bytes that are not a valid batch"
    return [header for _, header in found]


def offsets_of(data: bytes) -> list[tuple[int, int]]:
    """``(base offset, last offset)`` of each batch in ``data``."""
    return [(header.base_offset, header.last_offset) for header in headers_of(data)]


def without_offset_and_epoch(batch: bytes) -> bytes:
    """The batch with baseOffset and partitionLeaderEpoch blanked, to compare the rest."""
    copy = bytearray(batch)
    copy[0:8] = bytes(8)
    copy[12:16] = bytes(4)
    return bytes(copy)
