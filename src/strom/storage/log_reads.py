"""Walks over a partition log's segments for reads: where a fetch's bytes are, and
ListOffsets' timestamp lookups. :class:`~strom.storage.local_log.LocalLog` checks the offsets
and calls these with its segments (sorted, non-overlapping, the last one active).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from strom.storage.segment import LogSegment, OffsetTimestamp

__all__ = ["ReadPiece", "first_offset_by_timestamp", "offset_of_max_timestamp", "plan_read"]


@dataclass(frozen=True, slots=True)
class ReadPiece:
    """The bytes of one segment a read returns: whole batches only."""

    segment: LogSegment
    position: int
    length: int


def plan_read(
    segments: Sequence[LogSegment],
    bases: Sequence[int],
    offset: int,
    *,
    max_bytes: int,
    limit: int,
    log_end_offset: int,
    min_one_message: bool,
) -> tuple[list[ReadPiece], int]:
    """Kafka's ``LogSegment.read``: find where the batch holding ``offset`` starts, then take
    bytes up to ``max_bytes`` or the position of offset ``limit``, whichever is first; continue
    into the next segments while the limit allows their first batch. Returns the pieces and
    the offset after the last whole batch (``offset`` when there is none).

    Unlike Kafka's, a piece ends after its last whole batch rather than inside the next one:
    clients drop a partial trailing batch, so its bytes (with large batches, a tenth or more
    of an answer) would only cost the broker and the client a copy each."""
    pieces: list[ReadPiece] = []
    next_offset = offset
    if offset >= limit:
        return pieces, next_offset
    remaining = max_bytes
    i = max(bisect.bisect_right(bases, offset) - 1, 0)
    target = offset
    while i < len(segments):
        segment = segments[i]
        located = segment.locate_batch(target)
        if located is not None:
            start = located.position
            if located.last_offset >= limit:
                break
            if located.size > remaining:
                if pieces or not min_one_message:
                    break
                remaining = located.size  # KIP-74: the first batch, whatever its size
            end = min(start + remaining, _limit_position(segments, bases, i, limit, log_end_offset))
            whole = segment.last_batch_end(start, end)
            assert whole is not None  # the first batch fits: checked above
            whole_end, next_offset = whole
            pieces.append(ReadPiece(segment, start, whole_end - start))
            remaining -= end - start
            if end < segment.size or remaining <= 0:
                break
        i += 1
        if i < len(segments):
            target = bases[i]
    return pieces, next_offset


def _limit_position(
    segments: Sequence[LogSegment], bases: Sequence[int], index: int, limit: int, end: int
) -> int:
    """Where the batches of segment ``index`` entirely below offset ``limit`` end."""
    segment = segments[index]
    if limit >= end or (index + 1 < len(bases) and limit >= bases[index + 1]):
        return segment.size
    located = segment.locate_batch(limit)
    return segment.size if located is None else located.position


def first_offset_by_timestamp(
    segments: Sequence[LogSegment], timestamp: int, *, log_start_offset: int
) -> OffsetTimestamp | None:
    """The first record at or above the log start with a timestamp >= ``timestamp`` (>= 0)."""
    for segment in segments:
        if segment.size == 0 or segment.next_offset <= log_start_offset:
            continue
        if segment.max_timestamp >= timestamp:
            found = segment.find_offset_by_timestamp(timestamp, starting_offset=log_start_offset)
            if found is not None:
                return found
    return None


def offset_of_max_timestamp(
    segments: Sequence[LogSegment], *, log_start_offset: int
) -> OffsetTimestamp | None:
    """The first record (at or above the log start) with the largest timestamp."""
    start = log_start_offset
    best: tuple[int, LogSegment] | None = None
    candidates = [s for s in segments if s.size and s.next_offset > start]
    for segment in candidates:
        if segment.base_offset >= start:
            top = segment.max_timestamp
        else:
            straddling = segment.find_max_timestamp(starting_offset=start)
            if straddling is None:
                continue
            top = straddling.timestamp
        if best is None or top > best[0]:
            best = (top, segment)
    if best is None:
        return None
    found = best[1].find_max_timestamp(starting_offset=start)
    if found is not None and found.timestamp == best[0]:
        return found
    # Rare: the largest batch timestamp belongs to no record (a batch compaction emptied, or a
    # producer's inconsistent header): compare every segment's exact answer.
    exact: OffsetTimestamp | None = None
    for segment in candidates:
        answer = segment.find_max_timestamp(starting_offset=start)
        if answer is not None and (exact is None or answer.timestamp > exact.timestamp):
            exact = answer
    return exact
