"""ProduceResponse bodies packed with ``struct``: byte for byte what kio's writer produces.

Every produce request gets one, and kio's generic writer spends ~20 us on a one-partition
response (it dispatches and type-checks field by field): a sixth of the broker's work for a
small request. ``encode_produce_response`` packs the responses the broker sends (no per-batch
record errors, no tagged field set) and returns None for any other, which kio then encodes.
The produce handler calls ``pack_produce_response`` with plain values and builds no kio objects
at all for such an answer (another ~10 us a request). The unit tests compare both with kio's
writer for every version.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

__all__ = [
    "FIRST_VERSION",
    "LAST_VERSION",
    "PartitionAnswer",
    "encode_produce_response",
    "pack_produce_response",
    "response_header_version",
]

FIRST_VERSION: Final = 3
LAST_VERSION: Final = 12
_FIRST_FLEXIBLE = 9
_LEGACY_STRING_MAX = 0x7FFF
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_PARTITION = struct.Struct(">ihqq")
"""index, error code, base offset, log append time (-1: none)."""
_I64 = struct.Struct(">q")
_NO_TIME = -1


class PartitionAnswer(NamedTuple):
    """One partition of a ProduceResponse, as plain values (no per-record errors)."""

    partition: int
    error_code: int
    base_offset: int
    log_append_time: int
    """Milliseconds since the epoch; -1: none (the batch keeps its create times)."""
    log_start_offset: int
    error_message: str | None


def encode_produce_response(body: Any) -> bytes | None:
    """The body's bytes (without the response header), or None to leave it to kio."""
    endpoints = getattr(body, "node_endpoints", None)  # v10+, tagged
    if endpoints:
        return None
    topics: list[tuple[str, list[PartitionAnswer]]] = []
    for topic in body.responses:
        answers = []
        for partition in topic.partition_responses:
            answer = _answer(partition)
            if answer is None:
                return None
            answers.append(answer)
        topics.append((topic.name, answers))
    throttle_ms = round(body.throttle_time.total_seconds() * 1000)
    return pack_produce_response(int(body.__version__), topics, throttle_ms)


def pack_produce_response(
    version: int,
    topics: Sequence[tuple[str, Sequence[PartitionAnswer]]],
    throttle_ms: int = 0,
) -> bytes | None:
    """A ProduceResponse body of ``version`` from plain values (the handler's path, with no
    kio objects built); None when kio must encode it (a version out of range, a topic name
    too long for the legacy format)."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    flexible = version >= _FIRST_FLEXIBLE
    out = bytearray()
    _array_length(out, len(topics), flexible=flexible)
    for name, partitions in topics:
        if not _string(out, name, flexible=flexible):
            return None
        _array_length(out, len(partitions), flexible=flexible)
        for partition in partitions:
            if not _partition(out, partition, version=version, flexible=flexible):
                return None
        if flexible:
            out.append(0)  # no tagged fields
    out += _I32.pack(throttle_ms)
    if flexible:
        out.append(0)
    return bytes(out)


def response_header_version(version: int) -> int:
    """The response header version ProduceResponse ``version`` goes with."""
    return 1 if version >= _FIRST_FLEXIBLE else 0


def _answer(partition: Any) -> PartitionAnswer | None:
    """The plain values of kio's PartitionProduceResponse; None if it has what the packer
    leaves to kio (record errors, a current leader)."""
    leader = getattr(partition, "current_leader", None)
    if leader is not None and (leader.leader_id != -1 or leader.leader_epoch != -1):
        return None
    if getattr(partition, "record_errors", ()):
        return None
    appended = partition.log_append_time
    return PartitionAnswer(
        partition=partition.index,
        error_code=partition.error_code.value,
        base_offset=partition.base_offset,
        log_append_time=_NO_TIME if appended is None else round(appended.timestamp() * 1000),
        log_start_offset=getattr(partition, "log_start_offset", -1),
        error_message=getattr(partition, "error_message", None),
    )


def _partition(out: bytearray, partition: PartitionAnswer, *, version: int, flexible: bool) -> bool:
    out += _PARTITION.pack(
        partition.partition,
        partition.error_code,
        partition.base_offset,
        partition.log_append_time,
    )
    if version >= 5:
        out += _I64.pack(partition.log_start_offset)
    if version >= 8:
        _array_length(out, 0, flexible=flexible)  # no record errors
        if not _string(out, partition.error_message, flexible=flexible):
            return False
    if flexible:
        out.append(0)
    return True


def _array_length(out: bytearray, length: int, *, flexible: bool) -> None:
    if flexible:
        _uvarint(out, length + 1)
    else:
        out += _I32.pack(length)


def _string(out: bytearray, value: str | None, *, flexible: bool) -> bool:
    """A (nullable) string; False when it is too long for the legacy format (kio raises)."""
    if value is None:
        if flexible:
            out.append(0)
        else:
            out += _I16.pack(-1)
        return True
    data = value.encode()
    if flexible:
        _uvarint(out, len(data) + 1)
    elif len(data) > _LEGACY_STRING_MAX:
        return False
    else:
        out += _I16.pack(len(data))
    out += data
    return True


def _uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
