"""ProduceResponse bodies packed with ``struct``: byte for byte what kio's writer produces.

Every produce request gets one, and kio's generic writer spends ~20 us on a one-partition
response (it dispatches and type-checks field by field): a sixth of the broker's work for a
small request. ``encode_produce_response`` packs the responses the broker sends (no per-batch
record errors, no tagged field set) and returns None for any other, which kio then encodes.
The unit tests compare both for every version; ``api.encode_response`` is the only caller.
"""

from __future__ import annotations

import struct
from typing import Any, Final

__all__ = ["FIRST_VERSION", "LAST_VERSION", "encode_produce_response"]

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


def encode_produce_response(body: Any) -> bytes | None:
    """The body's bytes (without the response header), or None to leave it to kio."""
    version = int(body.__version__)
    endpoints = getattr(body, "node_endpoints", None)  # v10+, tagged
    if not FIRST_VERSION <= version <= LAST_VERSION or endpoints:
        return None
    flexible = version >= _FIRST_FLEXIBLE
    out = bytearray()
    _array_length(out, len(body.responses), flexible=flexible)
    for topic in body.responses:
        if not _string(out, topic.name, flexible=flexible):
            return None
        partitions = topic.partition_responses
        _array_length(out, len(partitions), flexible=flexible)
        for partition in partitions:
            if not _partition(out, partition, version=version, flexible=flexible):
                return None
        if flexible:
            out.append(0)  # no tagged fields
    out += _I32.pack(round(body.throttle_time.total_seconds() * 1000))
    if flexible:
        out.append(0)
    return bytes(out)


def _partition(out: bytearray, partition: Any, *, version: int, flexible: bool) -> bool:
    appended = partition.log_append_time
    leader = getattr(partition, "current_leader", None)
    if leader is not None and (leader.leader_id != -1 or leader.leader_epoch != -1):
        return False
    time_ms = _NO_TIME if appended is None else round(appended.timestamp() * 1000)
    out += _PARTITION.pack(
        partition.index, partition.error_code.value, partition.base_offset, time_ms
    )
    if version >= 5:
        out += _I64.pack(partition.log_start_offset)
    if version >= 8:
        if partition.record_errors:
            return False
        _array_length(out, 0, flexible=flexible)
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
