"""Primitive encodings of Kafka's message format, as metadata records use them.

Metadata records are "flexible" Kafka messages: fixed-width big-endian integers, unsigned
varints for lengths and tags, compact strings and arrays (length + 1, 0 meaning null), 16-byte
UUIDs, and a tagged-field section after the fields of every struct. This module writes and
reads those primitives; :mod:`strom.metadata.schema` composes them into messages.
"""

from __future__ import annotations

import struct
import uuid
from typing import Final

__all__ = [
    "MAX_STRING_BYTES",
    "ByteReader",
    "MetadataRecordError",
    "write_uvarint",
]

MAX_STRING_BYTES: Final = 0x7FFF
"""Kafka's generated codecs refuse strings longer than a signed 16-bit length."""

_MAX_UVARINT_BYTES: Final = 5
_MAX_UVARINT: Final = 2**32 - 1


class MetadataRecordError(ValueError):
    """Bytes that are not a metadata record strom can read, or a record it cannot write."""


def write_uvarint(out: bytearray, value: int) -> None:
    """Append an unsigned 32-bit varint (7 bits a byte, least significant group first)."""
    if not 0 <= value <= _MAX_UVARINT:
        raise MetadataRecordError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


class ByteReader:
    """Reads primitives from a buffer, front to back; every short read is a clear error."""

    __slots__ = ("_data", "_position")

    def __init__(self, data: bytes | memoryview) -> None:
        self._data = memoryview(data)
        self._position = 0

    @property
    def remaining(self) -> int:
        return len(self._data) - self._position

    def take(self, size: int) -> memoryview:
        if size < 0 or size > self.remaining:
            raise MetadataRecordError(
                f"record truncated: wanted {size} bytes at position {self._position}, "
                f"{self.remaining} left"
            )
        start = self._position
        self._position += size
        return self._data[start : self._position]

    def uvarint(self) -> int:
        value = 0
        for index in range(_MAX_UVARINT_BYTES):
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << (7 * index)
            if not byte & 0x80:
                return value
        raise MetadataRecordError("unsigned varint longer than 5 bytes")

    def unpack(self, fmt: struct.Struct) -> int:
        value: int = fmt.unpack(self.take(fmt.size))[0]
        return value

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=bytes(self.take(16)))

    def expect_end(self) -> None:
        if self.remaining:
            raise MetadataRecordError(f"{self.remaining} unexpected bytes after the record")
