"""ProduceRequest bodies read with ``struct``, each partition's records a view of the frame.

kio's reader (native code) reads a small Produce body in under a microsecond, but copies every
partition's records into new bytes; for the large requests producers batch into (hundreds of KB)
that copy, and the fresh pages it touches, were most of ``decode_request``'s share of the
broker's produce profile (docs/benchmarks.md). ``decode_produce_request`` reads the fields with
``struct`` and leaves the records where they are (a memoryview of the frame: the partition log
copies them once, as it validates them). It costs a few microseconds in Python, so the broker
uses it for frames of ``PRODUCE_VIEW_MIN`` bytes or more and kio below. It returns None for
anything it leaves to kio (a version out of range, a null or truncated array, tagged fields),
so that kio reads or rejects it exactly as before. The unit tests compare it with kio's reader
for every version.
"""

from __future__ import annotations

import datetime
import struct
import sys
from dataclasses import dataclass
from typing import Any, Final

from strom.protocol.framing import BytesLike
from strom.protocol.wire_cursor import WIRE_ERRORS, WireCursor, WireError

__all__ = [
    "FIRST_VERSION",
    "LAST_VERSION",
    "PRODUCE_VIEW_MIN",
    "PartitionProduceData",
    "ProduceRequestData",
    "TopicProduceData",
    "as_kio",
    "decode_produce_request",
]

FIRST_VERSION: Final = 3
LAST_VERSION: Final = 12
PRODUCE_VIEW_MIN: Final = 64 * 1024
"""Frames at least this large are read here (below, kio's native reader and its copy cost
less than this module's Python)."""
_FIRST_FLEXIBLE: Final = 9
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")


@dataclass(frozen=True, slots=True)
class PartitionProduceData:
    """One partition's records (kio's ``PartitionProduceData``)."""

    index: int
    records: memoryview | None


@dataclass(frozen=True, slots=True)
class TopicProduceData:
    """One topic's partitions (kio's ``TopicProduceData``)."""

    name: str
    partition_data: tuple[PartitionProduceData, ...]


@dataclass(frozen=True, slots=True)
class ProduceRequestData:
    """A ProduceRequest body with the field names and values of kio's."""

    transactional_id: str | None
    acks: int
    timeout: datetime.timedelta
    topic_data: tuple[TopicProduceData, ...]


def decode_produce_request(
    frame: BytesLike, offset: int, version: int
) -> tuple[ProduceRequestData, int] | None:
    """The body at ``offset`` of ``frame`` and its size in bytes, or None to leave it to kio."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    view = memoryview(frame)
    try:
        reader = _Reader(view, offset, flexible=version >= _FIRST_FLEXIBLE)
        body = reader.body()
    except (*WIRE_ERRORS, UnicodeDecodeError):
        return None
    return body, reader.position - offset


class _Reader(WireCursor):
    """A cursor over one request body."""

    __slots__ = ("flexible",)

    def __init__(self, view: memoryview, position: int, *, flexible: bool) -> None:
        self.view = view  # not super().__init__: a call less per request
        self.position = position
        self.flexible = flexible

    def body(self) -> ProduceRequestData:
        transactional_id = self.nullable_string()
        acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(self.view, self.position)
        self.position += _ACKS_TIMEOUT.size
        topics = []
        for _ in range(self.array_length()):
            name = self.string()
            partitions = []
            for _ in range(self.array_length()):
                (index,) = _I32.unpack_from(self.view, self.position)
                self.position += 4
                partitions.append(PartitionProduceData(index, self.records()))
                self.no_tagged_fields()
            topics.append(TopicProduceData(name, tuple(partitions)))
            self.no_tagged_fields()
        self.no_tagged_fields()
        return ProduceRequestData(
            transactional_id=transactional_id,
            acks=acks,
            timeout=datetime.timedelta(milliseconds=timeout_ms),
            topic_data=tuple(topics),
        )

    def length(self, fixed: struct.Struct) -> int:
        """A length: compact (unsigned varint minus one) or fixed; -1 for null."""
        try:
            if self.flexible:
                return self.uvarint() - 1
            (value,) = fixed.unpack_from(self.view, self.position)
        except IndexError:
            raise WireError from None
        self.position += fixed.size
        return int(value)

    def array_length(self) -> int:
        length = self.length(_I32)
        if length < 0:  # a null array where kio expects one
            raise WireError
        return length

    def nullable_string(self) -> str | None:
        length = self.length(_I16)
        return None if length < 0 else str(self.take(length), "utf-8")

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:  # null where kio expects a string
            raise WireError
        return value

    def records(self) -> memoryview | None:
        length = self.length(_I32)
        if length < 0:
            return None
        return self.take(length)

    def no_tagged_fields(self) -> None:
        if self.flexible:
            try:
                tagged = self.view[self.position]
            except IndexError:
                raise WireError from None
            if tagged:
                raise WireError
            self.position += 1


def as_kio(body: ProduceRequestData, entity: type[Any]) -> Any:
    """The same body as kio's ``entity`` (a ProduceRequest class): what the wire tests
    re-encode with kio's writer."""
    module = sys.modules[entity.__module__]
    return entity(
        transactional_id=body.transactional_id,
        acks=body.acks,
        timeout=body.timeout,
        topic_data=tuple(
            module.TopicProduceData(
                name=topic.name,
                partition_data=tuple(
                    module.PartitionProduceData(
                        index=partition.index,
                        records=None if partition.records is None else bytes(partition.records),
                    )
                    for partition in topic.partition_data
                ),
            )
            for topic in body.topic_data
        ),
    )
