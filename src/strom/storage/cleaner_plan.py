"""What of a log the cleaner may compact, and how (Kafka's ``LogToClean``,
``cleanableOffsets`` and ``groupSegmentsBySize``): the cleanable range of a log, a pass over
it as chosen on the owner thread, and the groups of segments each cleaned segment replaces.
:mod:`strom.storage.cleaner` has the rules (module doc, "What is cleanable").
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from strom.common import TopicPartition
from strom.storage.log_config import LONG_MAX
from strom.storage.partition_log import PartitionLog
from strom.storage.segment import LogSegment
from strom.storage.txn_index import AbortedTxn

__all__ = [
    "CleaningPass",
    "LogToClean",
    "cleaning_pass",
    "group_segments_by_size",
    "log_to_clean",
    "overlapping",
]

_INT32_MAX: Final = 2**31 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class LogToClean:
    """Kafka's ``LogToClean``: the cleanable range of one log and what it weighs."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    """A segment base offset; the map never goes past it."""
    clean_bytes: int
    cleanable_bytes: int
    max_compaction_delay_ms: int
    """How long past ``max.compaction.lag.ms`` the oldest dirty batch is (0: not past it)."""

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        total = self.total_bytes
        return self.cleanable_bytes / total if total else 0.0

    @property
    def needs_compaction_now(self) -> bool:
        return self.max_compaction_delay_ms > 0


@dataclass(frozen=True, slots=True, kw_only=True)
class CleaningPass:
    """A log chosen for cleaning, as it was when chosen (on the owner thread)."""

    partition: TopicPartition
    log: PartitionLog
    to_clean: LogToClean
    segments: tuple[LogSegment, ...]
    """The log's segments then: the pass reads no others and aborts if one of them is gone."""
    aborted: tuple[AbortedTxn, ...] = ()
    """The aborted transactions below the first uncleanable offset then."""


def _segment_index(segments: Sequence[LogSegment], offset: int) -> int:
    """The index of the segment holding ``offset`` (the last one with base <= it; 0 below)."""
    bases = [segment.base_offset for segment in segments]
    return max(bisect.bisect_right(bases, offset) - 1, 0)


def overlapping(segments: Sequence[LogSegment], start: int, end: int) -> list[LogSegment]:
    """Kafka's ``logSegments(from, to)``: the segments holding offsets in ``[start, end)``."""
    if start >= end:
        return []
    first = _segment_index(segments, start)
    return [segment for segment in segments[first:] if segment.base_offset < end]


def log_to_clean(
    log: PartitionLog, *, first_dirty_offset: int, now_ms: int, high_watermark: int
) -> LogToClean:
    """The cleanable range of ``log`` given where its dirty part starts (Kafka's
    ``cleanableOffsets`` and ``LogToClean``)."""
    segments = log.segments
    config = log.config
    active = segments[-1]
    dirty_inactive = segments[_segment_index(segments, first_dirty_offset) : -1]
    limit = min(active.base_offset, high_watermark)
    unstable = log.first_unstable_offset
    if unstable is not None:
        limit = min(limit, unstable)
    lag = max(config.min_compaction_lag_ms, 0)
    if lag > 0:
        for segment in dirty_inactive:
            if segment.largest_timestamp > now_ms - lag:
                limit = min(limit, segment.base_offset)
                break
    uncleanable = max(first_dirty_offset, limit)
    first_uncleanable = segments[_segment_index(segments, uncleanable)].base_offset
    clean_bytes = sum(s.size for s in segments if s.base_offset < first_dirty_offset)
    cleanable = overlapping(
        segments, max(first_dirty_offset, log.log_start_offset), first_uncleanable
    )
    delay = 0
    if config.max_compaction_lag_ms < LONG_MAX:
        firsts = [
            timestamp
            for segment in dirty_inactive
            if (timestamp := segment.first_batch_timestamp) is not None and timestamp > 0
        ]
        clean_until = now_ms - max(config.max_compaction_lag_ms, 0)
        if firsts and min(firsts) < clean_until:
            delay = clean_until - min(firsts)
    return LogToClean(
        first_dirty_offset=first_dirty_offset,
        first_uncleanable_offset=first_uncleanable,
        clean_bytes=clean_bytes,
        cleanable_bytes=sum(segment.size for segment in cleanable),
        max_compaction_delay_ms=delay,
    )


def group_segments_by_size(
    segments: Sequence[LogSegment], *, max_size: int, max_index_size: int, end_offset: int
) -> list[list[LogSegment]]:
    """Consecutive segments merged into groups that one cleaned segment can hold (Kafka's
    ``groupSegmentsBySize``): total log bytes <= ``max_size``, each index's bytes <=
    ``max_index_size``, and offsets within 2^31-1 of the group's base offset. ``end_offset``
    bounds the last segment's offsets (the next segment's base offset)."""
    groups: list[list[LogSegment]] = []
    i = 0
    while i < len(segments):
        first = segments[i]
        group = [first]
        size = first.size
        index_size = first.offset_index.size_in_bytes
        time_index_size = first.time_index.size_in_bytes
        i += 1
        while i < len(segments):
            segment = segments[i]
            upper = segments[i + 1].base_offset if i + 1 < len(segments) else end_offset
            if (
                size + segment.size > max_size
                or index_size + segment.offset_index.size_in_bytes > max_index_size
                or time_index_size + segment.time_index.size_in_bytes > max_index_size
                or (segment.size > 0 and upper - 1 - first.base_offset > _INT32_MAX)
            ):
                break
            group.append(segment)
            size += segment.size
            index_size += segment.offset_index.size_in_bytes
            time_index_size += segment.time_index.size_in_bytes
            i += 1
        groups.append(group)
    return groups


def cleaning_pass(
    log: PartitionLog, to_clean: LogToClean, partition: TopicPartition | None = None
) -> CleaningPass:
    """The pass over ``log`` as it is now (on the owner thread): its segments and the aborted
    transactions below the first uncleanable offset."""
    return CleaningPass(
        partition=partition or TopicPartition.from_dir_name(log.directory.name),
        log=log,
        to_clean=to_clean,
        segments=log.segments,
        aborted=tuple(
            log.collect_aborted_txns(log.segments[0].base_offset, to_clean.first_uncleanable_offset)
        ),
    )
