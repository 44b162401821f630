"""MirrorMaker 2's internal records in its exact binary formats (Kafka's protocol types: INT16,
INT32, INT64 big-endian, STRING as an INT16 length and UTF-8): ``OffsetSync`` (the offset-syncs
topic), ``Checkpoint`` (``<source>.checkpoints.internal``) and ``Heartbeat`` (``heartbeats``).
Checkpoint and heartbeat values start with a version header (INT16, 0). Pure: no I/O."""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["Checkpoint", "FormatError", "Heartbeat", "OffsetSync"]

VERSION = 0
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class FormatError(ValueError):
    """Bytes that are not a record of the expected format."""


def _string(text: str) -> bytes:
    data = text.encode()
    if len(data) > 0x7FFF:
        raise FormatError(f"a string of {len(data)} bytes: Kafka's STRING holds 32767 at most")
    return _INT16.pack(len(data)) + data


class _Reader:
    """Reads protocol types from the front of ``data``."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.at, self.what = data, 0, what

    def _take(self, size: int) -> bytes:
        if self.at + size > len(self.data):
            raise FormatError(f"{self.what}: {len(self.data)} bytes end too soon")
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def int16(self) -> int:
        return int(_INT16.unpack(self._take(2))[0])

    def int32(self) -> int:
        return int(_INT32.unpack(self._take(4))[0])

    def int64(self) -> int:
        return int(_INT64.unpack(self._take(8))[0])

    def string(self) -> str:
        size = self.int16()
        if size < 0:
            raise FormatError(f"{self.what}: a null string where one is required")
        return self._take(size).decode()

    def version(self) -> None:
        version = self.int16()
        if version != VERSION:
            raise FormatError(f"{self.what}: unknown version {version}")


@dataclass(frozen=True)
class OffsetSync:
    """Upstream offset ``upstream`` of ``topic``-``partition`` is downstream offset
    ``downstream`` of its remote topic."""

    topic: str
    partition: int
    upstream: int
    downstream: int

    def key(self) -> bytes:
        return _string(self.topic) + _INT32.pack(self.partition)

    def value(self) -> bytes:
        return _INT64.pack(self.upstream) + _INT64.pack(self.downstream)

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> OffsetSync:
        k, v = _Reader(key, "offset sync key"), _Reader(value, "offset sync value")
        return cls(k.string(), k.int32(), v.int64(), v.int64())


@dataclass(frozen=True)
class Checkpoint:
    """Group ``group``'s committed offset ``upstream`` of a source partition is ``downstream``
    of ``topic``-``partition`` on the target (``topic``: the name there)."""

    group: str
    topic: str
    partition: int
    upstream: int
    downstream: int
    metadata: str = ""

    def key(self) -> bytes:
        return _string(self.group) + _string(self.topic) + _INT32.pack(self.partition)

    def value(self) -> bytes:
        return (
            _INT16.pack(VERSION)
            + _INT64.pack(self.upstream)
            + _INT64.pack(self.downstream)
            + _string(self.metadata)
        )

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Checkpoint:
        k, v = _Reader(key, "checkpoint key"), _Reader(value, "checkpoint value")
        group, topic, partition = k.string(), k.string(), k.int32()
        v.version()
        return cls(group, topic, partition, v.int64(), v.int64(), v.string())


@dataclass(frozen=True)
class Heartbeat:
    """A heartbeat of the flow ``source`` -> ``target`` at ``timestamp`` (ms)."""

    source: str
    target: str
    timestamp: int

    def key(self) -> bytes:
        return _string(self.source) + _string(self.target)

    def value(self) -> bytes:
        return _INT16.pack(VERSION) + _INT64.pack(self.timestamp)

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Heartbeat:
        k, v = _Reader(key, "heartbeat key"), _Reader(value, "heartbeat value")
        source, target = k.string(), k.string()
        v.version()
        return cls(source, target, v.int64())
