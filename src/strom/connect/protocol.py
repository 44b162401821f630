"""Kafka Connect's group protocol (protocol type ``connect``), without I/O: the member metadata
a worker joins with and the assignment the leader hands out, in the byte layout of Connect's
``compatible`` protocol (version 1, incremental cooperative), so strom's workers and Java's
read each other's.

Metadata:   version int16 (1), url string, config offset int64, allocation nullable bytes (the
            worker's current assignment, serialized as below, or null)
Assignment: version int16 (1), error int16, leader string, leader url string, config offset
            int64, assigned [connector string, tasks [int32]], revoked (the same), delay int32;
            task -1 stands for the connector itself.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "COMPATIBLE",
    "CONFIG_MISMATCH",
    "CONNECTOR_TASK",
    "NO_ERROR",
    "PROTOCOL_TYPE",
    "Assignment",
    "ProtocolError",
    "WorkerState",
    "decode_assignment",
    "decode_metadata",
    "encode_assignment",
    "encode_metadata",
]

PROTOCOL_TYPE = "connect"
COMPATIBLE = "compatible"
"""Connect's protocol name for version 1 (KIP-415); ``sessioned`` adds KIP-507's session key."""
VERSION = 1
CONNECTOR_TASK = -1
NO_ERROR = 0
CONFIG_MISMATCH = 1
"""The leader could not read the config topic as far as a member had: read it and join again."""

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


class ProtocolError(ValueError):
    """Bytes that are not Connect's metadata or assignment."""


@dataclass(frozen=True)
class Assignment:
    """What one worker runs: connectors (with all their tasks, as strom runs a connector's
    tasks in one Spark query) and what it must stop before the group rebalances again."""

    leader: str = ""
    leader_url: str = ""
    config_offset: int = -1
    connectors: tuple[str, ...] = ()
    tasks: tuple[tuple[str, int], ...] = ()
    revoked_connectors: tuple[str, ...] = ()
    revoked_tasks: tuple[tuple[str, int], ...] = ()
    error: int = NO_ERROR
    delay_ms: int = 0


@dataclass(frozen=True)
class WorkerState:
    """A member's metadata: its REST URL, how far it read the config topic, what it runs."""

    url: str
    config_offset: int
    allocation: Assignment = field(default_factory=Assignment)


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def i16(self, value: int) -> None:
        self.out += _I16.pack(value)

    def i32(self, value: int) -> None:
        self.out += _I32.pack(value)

    def i64(self, value: int) -> None:
        self.out += _I64.pack(value)

    def string(self, value: str) -> None:
        raw = value.encode()
        self.i16(len(raw))
        self.out += raw

    def nullable_bytes(self, value: bytes | None) -> None:
        if value is None:
            self.i32(-1)
        else:
            self.i32(len(value))
            self.out += value


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.at = 0

    def _take(self, size: int) -> memoryview:
        if size < 0 or self.at + size > len(self.data):
            raise ProtocolError("Connect protocol data ends early")
        view = self.data[self.at : self.at + size]
        self.at += size
        return view

    def done(self) -> bool:
        return self.at >= len(self.data)

    def i16(self) -> int:
        return int(_I16.unpack(self._take(2))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def i64(self) -> int:
        return int(_I64.unpack(self._take(8))[0])

    def string(self) -> str:
        return bytes(self._take(self.i16())).decode()

    def nullable_bytes(self) -> bytes | None:
        size = self.i32()
        return None if size < 0 else bytes(self._take(size))


def _version(reader: _Reader) -> int:
    version = reader.i16()
    if version < 0:
        raise ProtocolError(f"Unsupported Connect protocol version: {version}")
    return version


def encode_metadata(state: WorkerState) -> bytes:
    writer = _Writer()
    writer.i16(VERSION)
    writer.string(state.url)
    writer.i64(state.config_offset)
    empty = state.allocation == Assignment()
    writer.nullable_bytes(None if empty else encode_assignment(state.allocation))
    return bytes(writer.out)


def decode_metadata(data: bytes) -> WorkerState:
    reader = _Reader(data)
    version = _version(reader)
    url, offset = reader.string(), reader.i64()
    allocation = None
    if version >= 1 and not reader.done():
        allocation = reader.nullable_bytes()
    current = Assignment() if allocation is None else decode_assignment(allocation)
    return WorkerState(url, offset, current)


def _write_entries(
    writer: _Writer, connectors: Iterable[str], tasks: Iterable[tuple[str, int]]
) -> None:
    grouped: dict[str, list[int]] = {}
    for name in connectors:
        grouped.setdefault(name, []).append(CONNECTOR_TASK)
    for name, task in tasks:
        grouped.setdefault(name, []).append(task)
    writer.i32(len(grouped))
    for name, ids in grouped.items():
        writer.string(name)
        writer.i32(len(ids))
        for task in ids:
            writer.i32(task)


def _read_entries(reader: _Reader) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    connectors: list[str] = []
    tasks: list[tuple[str, int]] = []
    for _ in range(max(reader.i32(), 0)):
        name = reader.string()
        for _ in range(max(reader.i32(), 0)):
            task = reader.i32()
            if task == CONNECTOR_TASK:
                connectors.append(name)
            else:
                tasks.append((name, task))
    return tuple(connectors), tuple(tasks)


def encode_assignment(assignment: Assignment) -> bytes:
    writer = _Writer()
    writer.i16(VERSION)
    writer.i16(assignment.error)
    writer.string(assignment.leader)
    writer.string(assignment.leader_url)
    writer.i64(assignment.config_offset)
    _write_entries(writer, assignment.connectors, assignment.tasks)
    _write_entries(writer, assignment.revoked_connectors, assignment.revoked_tasks)
    writer.i32(assignment.delay_ms)
    return bytes(writer.out)


def decode_assignment(data: bytes) -> Assignment:
    reader = _Reader(data)
    version = _version(reader)
    error, leader, leader_url = reader.i16(), reader.string(), reader.string()
    offset = reader.i64()
    connectors, tasks = _read_entries(reader)
    revoked: tuple[tuple[str, ...], tuple[tuple[str, int], ...]] = ((), ())
    delay = 0
    if version >= 1 and not reader.done():
        revoked = _read_entries(reader)
        delay = reader.i32()
    return Assignment(
        leader=leader,
        leader_url=leader_url,
        config_offset=offset,
        connectors=connectors,
        tasks=tasks,
        revoked_connectors=revoked[0],
        revoked_tasks=revoked[1],
        error=error,
        delay_ms=delay,
    )
