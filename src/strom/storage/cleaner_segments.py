"""How the cleaner reads and writes segments: whole batches read a chunk at a time with their
CRC checked, cleaned batches appended a chunk at a time, and the header scans a pass needs
(each producer's last data batch, the earliest delete horizon still stamped).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from strom.protocol.batch import BatchHeader, validate_batch
from strom.storage.cleaner_filter import has_delete_horizon
from strom.storage.segment import LogSegment

__all__ = ["SegmentWriter", "earliest_delete_horizon", "last_data_batches", "read_batches"]

_ANY_BATCH_SIZE: Final = 2**31


def read_batches(
    segment: LogSegment, *, start: int = 0, chunk_bytes: int
) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Each batch of ``segment`` from position ``start`` with its bytes, CRC checked; the file
    is read in chunks of about ``chunk_bytes`` of whole batches."""
    pending: list[tuple[int, BatchHeader]] = []
    first = total = 0
    for position, header in segment.batches(start):
        if not pending:
            first = position
        pending.append((position, header))
        total += header.size
        if total >= chunk_bytes:
            yield from _slices(segment.read(first, total), first, pending)
            pending, total = [], 0
    if pending:
        yield from _slices(segment.read(first, total), first, pending)


def _slices(
    data: bytes, first: int, batches: list[tuple[int, BatchHeader]]
) -> Iterator[tuple[BatchHeader, memoryview]]:
    view = memoryview(data)
    for position, header in batches:
        at = position - first
        batch = view[at : at + header.size]
        validate_batch(batch, 0, header.size, max_batch_bytes=_ANY_BATCH_SIZE, from_client=False)
        yield header, batch


class SegmentWriter:
    """Buffers output batches and appends them to the cleaned segment in chunks."""

    def __init__(self, segment: LogSegment, *, chunk_bytes: int) -> None:
        self._segment = segment
        self._chunk_bytes = chunk_bytes
        self._parts: list[bytes | memoryview] = []
        self._headers: list[BatchHeader] = []
        self._buffered = 0
        self.written = 0

    def write(self, data: bytes | memoryview, header: BatchHeader) -> None:
        self._parts.append(data)
        self._headers.append(header)
        self._buffered += len(data)
        if self._buffered >= self._chunk_bytes:
            self.flush()

    def flush(self) -> None:
        if self._headers:
            self._segment.append(b"".join(self._parts), self._headers)
            self.written += self._buffered
        self._parts, self._headers, self._buffered = [], [], 0


def last_data_batches(segments: Sequence[LogSegment]) -> dict[int, int]:
    """Producer id -> last offset of its last data batch in the log (header scan only)."""
    last: dict[int, int] = {}
    for segment in segments:
        for _, header in segment.batches():
            if header.has_producer_id and not header.is_control:
                last[header.producer_id] = header.last_offset
    return last


def earliest_delete_horizon(segments: Sequence[LogSegment]) -> int | None:
    """The earliest delete horizon stamped on a data batch of ``segments`` (header scan)."""
    earliest: int | None = None
    for segment in segments:
        for _, header in segment.batches():
            if has_delete_horizon(header) and not header.is_control:
                stamp = header.base_timestamp
                earliest = stamp if earliest is None else min(earliest, stamp)
    return earliest
