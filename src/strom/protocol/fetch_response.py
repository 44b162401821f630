"""A Fetch response as bytes and file regions: kio writes everything but the record batches.

The records of a fetched partition stay in their segment files; the network layer sends them
with sendfile. So the response is encoded by kio as usual, except that each partition's
``records`` field holds a *placeholder*, and :meth:`RecordsSplicer.encode` then cuts the encoded
bytes at each placeholder and puts the partition's file regions there::

    kio bytes ... | length prefix | placeholder | ... kio bytes
    kio bytes ... | length prefix of the regions | region, region | ... kio bytes

Only the records field changes: its length prefix (an int32 in the non-flexible versions, an
unsigned varint of length + 1 in the flexible ones) now counts the regions' bytes, and whatever
kio wrote after the field (the rest of the partition, its tagged fields, the next partitions)
follows unchanged. The result is byte for byte what kio writes with the records inlined (the
unit tests check it for every version).

A placeholder is 16 bytes: a random 12-byte token, the same for one response, and the
placeholder's number. The encoded response is searched for the token (the response's own bytes
only, never the records); the prefix before each hit is checked, so a chance match in another
field (2^-96 per position) is refused loudly instead of corrupting the response.

The usual answer (a consumer's, no diverging epoch, no leader hints) skips kio altogether:
``pack_fetch_response`` packs header and body with ``struct`` from plain values and puts the
regions in place as it goes, the same bytes kio and the splicer give (the unit tests compare
them for every version). kio's generic writer walked the response field by field and
type-checked each value, which was most of the Python a fetch request cost.

Pure: no I/O, no asyncio; regions are only measured (``length``), never read.
"""

from __future__ import annotations

import secrets
import struct
import uuid
from collections.abc import Sequence
from typing import Final, Generic, NamedTuple, Protocol, TypeVar

from kio.static.primitive import Records
from kio.static.protocol import ResponsePayload

from strom.protocol.api import encode_response

__all__ = [
    "FetchedPartition",
    "RecordsSplicer",
    "Region",
    "compact_length_prefix",
    "legacy_length_prefix",
    "pack_fetch_response",
]

_TOKEN_SIZE: Final = 12
_PLACEHOLDER_SIZE: Final = _TOKEN_SIZE + 4
_INDEX = struct.Struct(">I")
_INT32 = struct.Struct(">i")
_INT32_MAX: Final = 2**31 - 1
_FIRST_VERSION: Final = 4
_LAST_VERSION: Final = 17
_FIRST_FLEXIBLE: Final = 12
_FIRST_TOPIC_ID: Final = 13
_LEGACY_STRING_MAX: Final = 0x7FFF
_TOP = struct.Struct(">ihi")
"""throttle time, error code, session id (v7+)."""
_I16 = struct.Struct(">h")
_PARTITION = struct.Struct(">ihqqq")
"""index, error code, high watermark, last stable offset, log start offset (v5+)."""
_PARTITION_V4 = struct.Struct(">ihqq")
_ABORTED = struct.Struct(">qq")
"""producer id, first offset."""
_NULL_ARRAY: Final = _INT32.pack(-1)
_NO_READ_REPLICA: Final = _INT32.pack(-1)


class Region(Protocol):
    """What the splicer needs of a file region: its length."""

    @property
    def length(self) -> int: ...


R = TypeVar("R", bound=Region)


def legacy_length_prefix(length: int) -> bytes:
    """The int32 length of a non-flexible ``records`` (nullable bytes) field."""
    return _INT32.pack(length)


def compact_length_prefix(length: int) -> bytes:
    """The unsigned varint ``length + 1`` of a flexible (compact) ``records`` field."""
    value = length + 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class RecordsSplicer(Generic[R]):
    """Placeholders for records fields, and the spliced encoding of the response holding them.

    One splicer serves one response: call :meth:`placeholder` once per partition while building
    the kio body, then :meth:`encode` once.
    """

    def __init__(self, *, token: bytes | None = None) -> None:
        if token is None:
            token = secrets.token_bytes(_TOKEN_SIZE)
        if len(token) != _TOKEN_SIZE:
            raise ValueError(f"a placeholder token has {_TOKEN_SIZE} bytes, got {len(token)}")
        self._token = token
        self._slots: list[tuple[R, ...]] = []

    def placeholder(self, regions: Sequence[R]) -> Records:
        """The value to put in a partition's ``records`` field for these regions.

        No regions (or only empty ones) gives plain empty records, encoded by kio as they are.
        """
        kept = tuple(region for region in regions if region.length > 0)
        if not kept:
            return Records(b"")
        index = len(self._slots)
        self._slots.append(kept)
        return Records(self._token + _INDEX.pack(index))

    @property
    def size(self) -> int:
        """Bytes of all the regions given placeholders so far."""
        return sum(region.length for slot in self._slots for region in slot)

    def encode(self, *, correlation_id: int, body: ResponsePayload) -> list[bytes | R]:
        """Response header and body (no size prefix) as bytes parts and the regions, in order.

        Raises ValueError when the placeholders found in the encoding are not exactly those
        handed out, each once, behind the length prefix of a records field.
        """
        encoded = encode_response(correlation_id=correlation_id, body=body)
        flexible = bool(type(body).__flexible__)
        if flexible:
            expected_prefix = compact_length_prefix(_PLACEHOLDER_SIZE)
            prefix_for = compact_length_prefix
        else:
            expected_prefix = legacy_length_prefix(_PLACEHOLDER_SIZE)
            prefix_for = legacy_length_prefix
        prefix_size = len(expected_prefix)
        parts: list[bytes | R] = []
        seen: set[int] = set()
        position = 0
        view = memoryview(encoded)
        while True:
            hit = encoded.find(self._token, position)
            if hit < 0:
                break
            start = hit - prefix_size
            end = hit + _PLACEHOLDER_SIZE
            (index,) = _INDEX.unpack_from(encoded, hit + _TOKEN_SIZE)
            if (
                start < position
                or encoded[start:hit] != expected_prefix
                or index >= len(self._slots)
                or index in seen
            ):
                raise ValueError(f"records placeholder at byte {hit} is not a records field")
            seen.add(index)
            regions = self._slots[index]
            total = sum(region.length for region in regions)
            if total > _INT32_MAX:
                raise ValueError(f"{total} bytes of records do not fit one records field")
            parts.append(bytes(view[position:start]) + prefix_for(total))
            parts.extend(regions)
            position = end
        if len(seen) != len(self._slots):
            raise ValueError(
                f"{len(self._slots) - len(seen)} records placeholders are missing from the body"
            )
        parts.append(bytes(view[position:]))
        return parts


class FetchedPartition(NamedTuple, Generic[R]):
    """One partition of a Fetch answer as plain values (no diverging epoch, no current
    leader: those answers go through kio)."""

    partition: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: Sequence[tuple[int, int]] | None
    """(producer id, first offset) of each aborted transaction; None: null (read_uncommitted)."""
    regions: Sequence[R]


def pack_fetch_response(
    *,
    version: int,
    correlation_id: int,
    throttle_ms: int,
    error_code: int,
    session_id: int,
    topics: Sequence[tuple[str, uuid.UUID, Sequence[FetchedPartition[R]]]],
) -> list[bytes | R] | None:
    """Response header and body (no size prefix) as bytes parts and the regions, in order, as
    ``RecordsSplicer.encode`` gives them; None when kio must encode it (a version out of
    range, a topic name too long for the legacy format)."""
    if not _FIRST_VERSION <= version <= _LAST_VERSION:
        return None
    flexible = version >= _FIRST_FLEXIBLE
    by_id = version >= _FIRST_TOPIC_ID
    prefix_for = compact_length_prefix if flexible else legacy_length_prefix
    parts: list[bytes | R] = []
    out = bytearray(_INT32.pack(correlation_id))
    if flexible:
        out.append(0)  # the header's tagged fields
    if version >= 7:
        out += _TOP.pack(throttle_ms, error_code, session_id)
    else:
        out += _INT32.pack(throttle_ms)
    _array_length(out, len(topics), flexible)
    for name, topic_id, partitions in topics:
        if by_id:
            out += topic_id.bytes
        elif not _string(out, name, flexible):
            return None
        _array_length(out, len(partitions), flexible)
        for answer in partitions:
            if version >= 5:
                out += _PARTITION.pack(
                    answer.partition,
                    answer.error_code,
                    answer.high_watermark,
                    answer.last_stable_offset,
                    answer.log_start_offset,
                )
            else:
                out += _PARTITION_V4.pack(
                    answer.partition,
                    answer.error_code,
                    answer.high_watermark,
                    answer.last_stable_offset,
                )
            _aborted(out, answer.aborted, flexible)
            if version >= 11:
                out += _NO_READ_REPLICA
            regions = [region for region in answer.regions if region.length > 0]
            total = sum(region.length for region in regions)
            if total > _INT32_MAX:
                raise ValueError(f"{total} bytes of records do not fit one records field")
            out += prefix_for(total)
            if regions:
                parts.append(bytes(out))
                parts.extend(regions)
                out = bytearray()
            if flexible:
                out.append(0)  # the partition's tagged fields
        if flexible:
            out.append(0)  # the topic's tagged fields
    if flexible:
        out.append(0)  # the body's tagged fields
    parts.append(bytes(out))
    return parts


def _array_length(out: bytearray, length: int, flexible: bool) -> None:
    out += compact_length_prefix(length) if flexible else _INT32.pack(length)


def _string(out: bytearray, value: str, flexible: bool) -> bool:
    data = value.encode()
    if flexible:
        out += compact_length_prefix(len(data))
    elif len(data) > _LEGACY_STRING_MAX:
        return False
    else:
        out += _I16.pack(len(data))
    out += data
    return True


def _aborted(out: bytearray, aborted: Sequence[tuple[int, int]] | None, flexible: bool) -> None:
    if aborted is None:
        out += b"\x00" if flexible else _NULL_ARRAY
        return
    _array_length(out, len(aborted), flexible)
    for producer_id, first_offset in aborted:
        out += _ABORTED.pack(producer_id, first_offset)
        if flexible:
            out.append(0)
