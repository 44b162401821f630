"""Which segments retention deletes: Kafka's three rules, as pure functions.

Each rule returns how many of the oldest segments it may delete; retention deletes the longest
such prefix. As in Kafka's ``UnifiedLog.deletableSegments``, a segment is deletable only when
everything in it is below the high watermark (the next segment's base offset, or the log end
offset for the last segment, is <= the high watermark) and the walk stops at the first segment
that is not. The last (active) segment can qualify when it is not empty: the log then rolls a
new empty active segment before deleting it, which is how Kafka applies ``retention.ms`` to a
quiet partition whose active segment would otherwise live until ``segment.ms``.

* ``retention.ms`` (>= 0, ``delete`` policy): ``now - segment.largest_timestamp > retention.ms``;
* ``retention.bytes`` (>= 0, ``delete`` policy): oldest first while
  ``total size - segment size >= retention.bytes``;
* log start offset (any policy): the next segment's base offset is <= the log start offset,
  i.e. DeleteRecords or an earlier deletion moved the start past the whole segment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from strom.storage.log_config import LogConfig

__all__ = [
    "RetentionSegment",
    "deletable_by_log_start",
    "deletable_by_retention_bytes",
    "deletable_by_retention_ms",
    "segments_to_delete",
]


class RetentionSegment(Protocol):
    """What retention needs to know of a segment (``LogSegment`` has it)."""

    @property
    def base_offset(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def largest_timestamp(self) -> int: ...


S = TypeVar("S", bound=RetentionSegment)


def _deletable_prefix(
    segments: Sequence[RetentionSegment],
    *,
    log_end_offset: int,
    high_watermark: int,
    predicate: Callable[[int], bool],
) -> int:
    count = 0
    last = len(segments) - 1
    for i, segment in enumerate(segments):
        upper = segments[i + 1].base_offset if i < last else log_end_offset
        if i == last and segment.size == 0:
            break
        if high_watermark < upper or not predicate(i):
            break
        count += 1
    return count


def deletable_by_retention_ms(
    segments: Sequence[RetentionSegment],
    *,
    retention_ms: int,
    now_ms: int,
    log_end_offset: int,
    high_watermark: int,
) -> int:
    if retention_ms < 0:
        return 0
    return _deletable_prefix(
        segments,
        log_end_offset=log_end_offset,
        high_watermark=high_watermark,
        predicate=lambda i: now_ms - segments[i].largest_timestamp > retention_ms,
    )


def deletable_by_retention_bytes(
    segments: Sequence[RetentionSegment],
    *,
    retention_bytes: int,
    log_end_offset: int,
    high_watermark: int,
) -> int:
    if retention_bytes < 0:
        return 0
    excess = sum(segment.size for segment in segments) - retention_bytes
    if excess < 0:
        return 0

    def fits(i: int) -> bool:
        nonlocal excess
        size = segments[i].size
        if excess - size < 0:
            return False
        excess -= size
        return True

    return _deletable_prefix(
        segments, log_end_offset=log_end_offset, high_watermark=high_watermark, predicate=fits
    )


def deletable_by_log_start(
    segments: Sequence[RetentionSegment],
    *,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int,
) -> int:
    last = len(segments) - 1
    return _deletable_prefix(
        segments,
        log_end_offset=log_end_offset,
        high_watermark=high_watermark,
        predicate=lambda i: i < last and segments[i + 1].base_offset <= log_start_offset,
    )


def segments_to_delete(
    segments: Sequence[S],
    *,
    config: LogConfig,
    now_ms: int,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int,
) -> list[S]:
    """The oldest segments retention deletes now (a prefix of ``segments``, maybe all of them).

    ``high_watermark`` bounds it: nothing at or above it is deleted (pass the log end offset
    for a log without replication).
    """
    bound = min(high_watermark, log_end_offset)
    count = deletable_by_log_start(
        segments,
        log_start_offset=log_start_offset,
        log_end_offset=log_end_offset,
        high_watermark=bound,
    )
    if config.deletes:
        count = max(
            count,
            deletable_by_retention_ms(
                segments,
                retention_ms=config.retention_ms,
                now_ms=now_ms,
                log_end_offset=log_end_offset,
                high_watermark=bound,
            ),
            deletable_by_retention_bytes(
                segments,
                retention_bytes=config.retention_bytes,
                log_end_offset=log_end_offset,
                high_watermark=bound,
            ),
        )
    return list(segments[:count])
