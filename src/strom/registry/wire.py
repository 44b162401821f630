"""Confluent's wire format of a registry-encoded value: the magic byte 0, the schema id as a
4-byte big-endian integer, then the payload; a Protobuf payload starts with the indexes of its
message in the file (a zigzag-varint count, then each index; the first message is the single
byte 0)."""

from __future__ import annotations

import struct

__all__ = ["frame", "message_indexes", "read_message_indexes", "unframe"]

MAGIC = 0
_HEADER = struct.Struct(">bI")


def frame(schema_id: int, payload: bytes) -> bytes:
    return _HEADER.pack(MAGIC, schema_id) + payload


def unframe(value: bytes) -> tuple[int, memoryview]:
    """The schema id and the payload of a framed value; ValueError if it is not framed."""
    if len(value) < _HEADER.size or value[0] != MAGIC:
        raise ValueError("not a schema-registry framed value (no magic byte 0)")
    _, schema_id = _HEADER.unpack_from(value)
    return schema_id, memoryview(value)[_HEADER.size :]


def _zigzag(value: int) -> bytes:
    encoded = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = encoded & 0x7F
        encoded >>= 7
        if encoded:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_zigzag(data: memoryview, at: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if at >= len(data):
            raise ValueError("truncated message indexes")
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), at


def message_indexes(indexes: list[int]) -> bytes:
    """The encoded indexes of a message: ``[0]`` (the first message) is the byte 0."""
    if indexes == [0]:
        return b"\x00"
    return _zigzag(len(indexes)) + b"".join(_zigzag(index) for index in indexes)


def read_message_indexes(payload: memoryview) -> tuple[list[int], memoryview]:
    """The message indexes at the start of a Protobuf payload, and the message bytes."""
    count, at = _read_zigzag(payload, 0)
    if count == 0:
        return [0], payload[at:]
    indexes = []
    for _ in range(count):
        index, at = _read_zigzag(payload, at)
        indexes.append(index)
    return indexes, payload[at:]
