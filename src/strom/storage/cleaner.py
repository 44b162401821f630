"""Log compaction (``cleanup.policy=compact``): Kafka's log cleaner, one partition at a time.

Plain logic and file I/O, no asyncio: the owner of the logs calls
:meth:`LogCleaner.clean_logs` (or :meth:`LogCleaner.clean_if_needed`) every
``log.cleaner.backoff.ms``.

**Threads.** By default everything runs on the caller's thread, which must own the logs. To
clean off that thread, build the cleaner with ``run_on_owner`` (a function that runs a step on
the owner thread and waits for it), pick on the owner thread with
:meth:`LogCleaner.filthiest_logs`, and run :meth:`LogCleaner.clean_chosen` on another thread:
the pass then only *reads* segments there; every swap and checkpoint update is a step on the
owner thread, which first checks that the log is still open and still holds every segment the
pass was chosen with (or swapped in). If not (retention, DeleteRecords, truncation or deletion
got there first) the pass stops with :class:`CleaningAborted` and nothing changes.

**What is cleanable.** A log is, from its start, a *clean* part (already compacted; the
``cleaner-offset-checkpoint`` of its data directory remembers where it ends, the *first dirty
offset*) and a *dirty* part. Cleaning may not go past the *first uncleanable offset*: the
smallest of the active segment's base offset, the high watermark the caller passes, the log's
first unstable offset (an undecided transaction's records) and the first dirty segment younger than
``min.compaction.lag.ms``, rounded down to the base offset of the segment holding it, as Kafka
does (:func:`log_to_clean`). A log is cleaned when ``dirty bytes / (clean + dirty bytes)`` is
above ``min.cleanable.dirty.ratio`` (strictly, as Kafka's ``LogCleanerManager``), when its oldest
dirty batch is older than ``max.compaction.lag.ms``, or when tombstones it kept have reached
their delete horizon (Kafka's low-traffic tombstone pass).

**A pass** (:meth:`LogCleaner.clean`):

1. Build the :class:`~strom.storage.offset_map.OffsetMap` (key -> latest offset) over the dirty
   range; when it fills up the pass stops at a batch boundary and the rest waits for the next.
2. Group the segments from the log start to the end of the map (never the active segment) by
   ``segment.bytes`` and index size, as Kafka's ``groupSegmentsBySize``; each group becomes one
   ``.cleaned`` segment at the group's first base offset.
3. Filter each batch (:func:`filter_batch`): keep a record when its offset is at or above the
   map's end, or it is the latest of its key, unless it is a tombstone whose batch's delete
   horizon has passed. Records without a key are dropped, as Kafka's cleaner does (it counts
   them as invalid: compacted topics refuse them on produce). A batch that loses nothing is
   copied byte for byte; otherwise it is re-encoded with its base offset, last offset delta,
   producer fields, timestamp type, leader epoch and codec (decompressed, filtered,
   re-compressed). A batch left with no record is dropped, unless it is the last data batch of
   its producer id (kept empty, as Kafka keeps producer state).
4. Swap each group in through :meth:`PartitionLog.replace_segments` (fsync, ``.cleaned`` ->
   ``.swap``, delete the old segments, drop ``.swap``; the loader completes or undoes any
   crash), then write the checkpoint: the map's end becomes the first dirty offset.

**Tombstones** (KIP-534): the first pass that keeps a tombstone stamps its batch with a delete
horizon (``now + delete.retention.ms``, the batch's baseTimestamp with the delete-horizon
attribute); a later pass drops the tombstone once ``now >= horizon``. By then every older record
of its key is gone, since the pass that first mapped the tombstone removed them.

**Callers** tell the cleaner when a log is truncated (:meth:`LogCleaner.truncated`) or deleted
(:meth:`LogCleaner.forget`): a checkpoint left above records appended again would count them as
clean, and a tombstone among them could then expire over an older value it never superseded.

**Transactions** (:mod:`strom.storage.cleaner_txns`): the aborted transactions of the log, from
the segments' ``.txnindex`` (collected when the pass is chosen), mark the batches to drop whole
(kept empty when it is the producer's last data batch); they never enter the offset map, while
committed transactional records do. A marker is kept while its transaction has data in the
log; once a pass finds none, it is stamped with a delete horizon (``now +
delete.retention.ms``) and a later pass drops it after that. A cleaned segment's ``.txnindex``
holds every entry of the segments it replaces. Tombstones in transactional batches never
expire (more than Kafka keeps, never less).
"""

from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from strom.common import TopicPartition
from strom.protocol.batch import (
    DELETE_HORIZON_FLAG,
    BatchHeader,
    TimestampType,
    validate_batch,
)
from strom.protocol.records import Record, build_batch, iter_records
from strom.storage.checkpoint import (
    CheckpointError,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from strom.storage.cleaner_txns import CleanedTransactions
from strom.storage.log_config import LONG_MAX
from strom.storage.offset_map import DEFAULT_MAX_ENTRIES, OffsetMap
from strom.storage.partition_log import PartitionLog
from strom.storage.segment import LogSegment
from strom.storage.txn_index import AbortedTxn

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "CleanStats",
    "CleaningAborted",
    "CleaningPass",
    "FilterResult",
    "LogCleaner",
    "LogToClean",
    "filter_batch",
    "group_segments_by_size",
    "log_to_clean",
]

CLEANER_OFFSET_CHECKPOINT: Final = "cleaner-offset-checkpoint"
DEFAULT_IO_BUFFER_BYTES: Final = 1024 * 1024

_INT32_MAX: Final = 2**31 - 1
_ANY_BATCH_SIZE: Final = 2**31

_log = logging.getLogger(__name__)

OwnerStep = Callable[[Callable[[], None]], None]
"""Runs a step on the logs' owner thread and returns when it is done (or raises what it did)."""


class CleaningAborted(Exception):
    """The log changed under a pass (segments removed, log closed); the pass left it alone."""


def _run_here(step: Callable[[], None]) -> None:
    step()


# --- what is cleanable -----------------------------------------------------------------------


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


def _overlapping(segments: Sequence[LogSegment], start: int, end: int) -> list[LogSegment]:
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
    cleanable = _overlapping(
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


# --- filtering one batch ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class FilterResult:
    """What :func:`filter_batch` made of one batch."""

    data: bytes | memoryview | None
    """The batch to write (the input itself when ``copied``), or None when it is dropped."""
    header: BatchHeader | None
    copied: bool
    """Written byte for byte as it was."""
    records_read: int
    records_removed: int
    invalid_records: int
    """Records without a key (part of ``records_removed``)."""
    tombstones_removed: int
    """Tombstones past their delete horizon (part of ``records_removed``)."""
    tombstone_horizon: int | None
    """The delete horizon of the tombstones the written batch still holds, if any."""


def _has_delete_horizon(header: BatchHeader) -> bool:
    return bool(header.attributes & DELETE_HORIZON_FLAG)


def filter_batch(
    data: bytes | memoryview,
    header: BatchHeader,
    *,
    offset_map: OffsetMap,
    now_ms: int,
    delete_retention_ms: int,
    retain_empty: bool,
    aborted: bool = False,
    discardable_marker: bool = False,
) -> FilterResult:
    """Apply the cleaner's record rules to one whole batch (see the module doc).

    ``retain_empty``: keep the batch, emptied, if every record goes (the last data batch of its
    producer id). Records at or above ``offset_map.end_offset`` are kept as they are.
    ``aborted``: a data batch of an aborted transaction (every record goes).
    ``discardable_marker``: a control batch whose transaction has no data left (stamped with a
    delete horizon, dropped once it passed).
    """
    if header.is_control:
        return _filter_marker(
            data,
            header,
            now_ms=now_ms,
            delete_retention_ms=delete_retention_ms,
            discardable=discardable_marker,
        )
    horizon = header.base_timestamp if _has_delete_horizon(header) else None
    tombstones_expire = horizon is not None and now_ms >= horizon and not header.is_transactional
    end = offset_map.end_offset
    retained: list[Record] = []
    read = superseded = invalid = expired = 0
    holds_tombstone = False
    for record in iter_records(data):
        read += 1
        if aborted:
            superseded += 1
            continue
        if record.offset < end:
            key = record.key
            if key is None:
                invalid += 1
                continue
            if record.offset < offset_map.get(key):
                superseded += 1
                continue
            if record.value is None and tombstones_expire:
                expired += 1
                continue
        if record.value is None:
            holds_tombstone = True
        retained.append(record)
    removed = superseded + invalid + expired
    stamp = holds_tombstone and horizon is None and not header.is_transactional
    if stamp:
        horizon = now_ms + delete_retention_ms
    tombstone_horizon = horizon if holds_tombstone and not header.is_transactional else None
    new: bytes | memoryview | None
    new_header: BatchHeader | None
    if not retained and not retain_empty:  # also a batch emptied by an earlier pass
        new, new_header = None, None
    elif not removed and not stamp:
        new, new_header = data, header
    else:
        new = _rebuild(header, retained, delete_horizon_ms=horizon)
        new_header = BatchHeader.read(new)
    return FilterResult(
        data=new,
        header=new_header,
        copied=new is data,
        records_read=read,
        records_removed=removed,
        invalid_records=invalid,
        tombstones_removed=expired,
        tombstone_horizon=tombstone_horizon,
    )


def _filter_marker(
    data: bytes | memoryview,
    header: BatchHeader,
    *,
    now_ms: int,
    delete_retention_ms: int,
    discardable: bool,
) -> FilterResult:
    """A control batch: copied, stamped with a delete horizon, or dropped after it."""
    new: bytes | memoryview | None = data
    new_header: BatchHeader | None = header
    removed = 0
    if discardable and _has_delete_horizon(header):
        if now_ms >= header.base_timestamp:
            new, new_header, removed = None, None, header.record_count
    elif discardable:
        new = _rebuild(
            header, list(iter_records(data)), delete_horizon_ms=now_ms + delete_retention_ms
        )
        new_header = BatchHeader.read(new)
    return FilterResult(
        data=new,
        header=new_header,
        copied=new is data,
        records_read=header.record_count,
        records_removed=removed,
        invalid_records=0,
        tombstones_removed=0,
        tombstone_horizon=None,
    )


def _rebuild(
    header: BatchHeader, records: Sequence[Record], *, delete_horizon_ms: int | None
) -> bytes:
    """Re-encode a filtered batch as Kafka's ``buildRetainedRecordsInto`` and
    ``writeEmptyHeader`` do: same base offset, last offset (so the last sequence stays), producer
    fields, timestamp type, leader epoch and codec; an empty batch keeps its max timestamp."""
    log_append_time = header.timestamp_type == TimestampType.LOG_APPEND_TIME
    return build_batch(
        records,
        base_offset=header.base_offset,
        last_offset_delta=header.last_offset_delta,
        compression=header.compression,
        timestamp_type=header.timestamp_type,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        is_control=header.is_control,
        partition_leader_epoch=header.partition_leader_epoch,
        delete_horizon_ms=delete_horizon_ms if records else None,
        max_timestamp=header.max_timestamp if log_append_time or not records else None,
    )


# --- reading and writing segments ------------------------------------------------------------


def _batches(
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


class _SegmentWriter:
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


def _last_data_batches(segments: Sequence[LogSegment]) -> dict[int, int]:
    """Producer id -> last offset of its last data batch in the log (header scan only)."""
    last: dict[int, int] = {}
    for segment in segments:
        for _, header in segment.batches():
            if header.has_producer_id and not header.is_control:
                last[header.producer_id] = header.last_offset
    return last


def _earliest_delete_horizon(segments: Sequence[LogSegment]) -> int | None:
    """The earliest delete horizon stamped on a data batch of ``segments`` (header scan)."""
    earliest: int | None = None
    for segment in segments:
        for _, header in segment.batches():
            if _has_delete_horizon(header) and not header.is_control:
                stamp = header.base_timestamp
                earliest = stamp if earliest is None else min(earliest, stamp)
    return earliest


# --- the cleaner -----------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class CleanStats:
    """What one cleaning pass did."""

    first_dirty_offset: int
    end_offset: int = 0
    """Everything below it is clean now (the new checkpoint)."""
    map_records: int = 0
    """Keyed records of the dirty range put into the offset map."""
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_removed: int = 0
    invalid_records: int = 0
    tombstones_removed: int = 0
    batches_removed: int = 0
    batches_emptied: int = 0
    """Batches kept with no record, for their producer's state."""
    segments_cleaned: int = 0
    """Segments replaced by cleaned ones."""
    segments_written: int = 0


class LogCleaner:
    """Compacts the logs it is handed, one at a time, and keeps their cleaner checkpoints.

    One instance serves every data directory: the checkpoint of a log lives in
    ``<log directory>/../cleaner-offset-checkpoint``, keyed by the log's topic-partition (its
    directory name). ``max_map_entries`` bounds the offset map; ``io_buffer_bytes`` is how much
    is read or written at a time. ``run_on_owner``: see the module doc ("Threads"); every method
    but :meth:`clean_chosen` is called on the owner thread, and one pass runs at a time.
    """

    def __init__(
        self,
        *,
        max_map_entries: int = DEFAULT_MAX_ENTRIES,
        io_buffer_bytes: int = DEFAULT_IO_BUFFER_BYTES,
        run_on_owner: OwnerStep = _run_here,
    ) -> None:
        self._map = OffsetMap(max_map_entries)
        self._run_on_owner = run_on_owner
        self._io_buffer_bytes = io_buffer_bytes
        self._checkpoints: dict[Path, dict[TopicPartition, int]] = {}
        self._pending_horizons: dict[Path, int | None] = {}
        self._uncleanable: set[Path] = set()

    # --- checkpoints -----------------------------------------------------------------------

    def _checkpoint(self, data_dir: Path) -> dict[TopicPartition, int]:
        offsets = self._checkpoints.get(data_dir)
        if offsets is None:
            try:
                offsets = read_offset_checkpoint(data_dir / CLEANER_OFFSET_CHECKPOINT)
            except CheckpointError as error:
                # Every log is then dirty from its start: more work, never a loss.
                _log.warning("ignoring unreadable cleaner checkpoint: %s", error)
                offsets = {}
            self._checkpoints[data_dir] = offsets
        return offsets

    def _write_checkpoint(self, data_dir: Path) -> None:
        write_offset_checkpoint(data_dir / CLEANER_OFFSET_CHECKPOINT, self._checkpoint(data_dir))

    def first_dirty_offset(self, log: PartitionLog) -> int:
        """Where the dirty part of ``log`` starts: its checkpoint, or the log start offset when
        there is none or it is out of ``[log start, log end]`` (Kafka resets it the same way)."""
        checkpoint = self._checkpoint(log.directory.parent).get(_partition(log))
        if checkpoint is None or not log.log_start_offset <= checkpoint <= log.log_end_offset:
            return log.log_start_offset
        return checkpoint

    def truncated(self, log: PartitionLog, offset: int) -> None:
        """The log was truncated to ``offset``: lower its checkpoint (Kafka's
        ``maybeTruncateCheckpoint``), so records appended again are seen as dirty.

        Truncation never splits a batch, so the log may end below ``offset``; the checkpoint
        goes down to wherever the log really ends.
        """
        offset = min(offset, log.log_end_offset)
        data_dir = log.directory.parent
        offsets = self._checkpoint(data_dir)
        tp = _partition(log)
        if offsets.get(tp, -1) > offset:
            offsets[tp] = offset
            self._write_checkpoint(data_dir)
        self._pending_horizons.pop(log.directory, None)

    def forget(self, log: PartitionLog) -> None:
        """The log is being deleted: drop its checkpoint entry and what is known of it."""
        data_dir = log.directory.parent
        offsets = self._checkpoint(data_dir)
        if offsets.pop(_partition(log), None) is not None:
            self._write_checkpoint(data_dir)
        self._pending_horizons.pop(log.directory, None)
        self._uncleanable.discard(log.directory)

    # --- deciding ---------------------------------------------------------------------------

    def log_to_clean(self, log: PartitionLog, *, now_ms: int, high_watermark: int) -> LogToClean:
        return log_to_clean(
            log,
            first_dirty_offset=self.first_dirty_offset(log),
            now_ms=now_ms,
            high_watermark=high_watermark,
        )

    def _pending_horizon(self, log: PartitionLog) -> int | None:
        if log.directory not in self._pending_horizons:
            # Not known since start: the stamped batches tell (one extra pass at most).
            self._pending_horizons[log.directory] = _earliest_delete_horizon(log.segments[:-1])
        return self._pending_horizons[log.directory]

    def needs_cleaning(
        self, log: PartitionLog, *, now_ms: int, high_watermark: int
    ) -> LogToClean | None:
        """The cleanable range when ``log`` should be cleaned now, else None."""
        if not log.config.compacts:
            return None
        to_clean = self.log_to_clean(log, now_ms=now_ms, high_watermark=high_watermark)
        if to_clean.cleanable_ratio > log.config.min_cleanable_dirty_ratio or (
            to_clean.needs_compaction_now and to_clean.cleanable_bytes > 0
        ):
            return to_clean
        pending = self._pending_horizon(log)
        if pending is not None and pending <= now_ms and len(log.segments) > 1:
            return to_clean
        return None

    # --- cleaning ---------------------------------------------------------------------------

    def clean_if_needed(
        self, log: PartitionLog, *, now_ms: int, high_watermark: int
    ) -> CleanStats | None:
        """Clean ``log`` if it needs it; return what the pass did, or None without a pass.

        For ``compact,delete`` it applies retention first, as Kafka's cleaner threads do for
        such logs.
        """
        if not log.config.compacts:
            return None
        if log.config.deletes:
            deleted = log.delete_old_segments(now_ms, high_watermark)
            if deleted:
                _log.info("%s: retention deleted %d segments", log.directory.name, deleted)
        to_clean = self.needs_cleaning(log, now_ms=now_ms, high_watermark=high_watermark)
        if to_clean is None:
            return None
        return self._clean(_chosen(log, to_clean), now_ms=now_ms)

    def clean(self, log: PartitionLog, *, now_ms: int, high_watermark: int) -> CleanStats:
        """One cleaning pass now, whatever the dirty ratio (the log must be compacted)."""
        if not log.config.compacts:
            raise ValueError(f"{log.directory.name} is not a compacted log")
        to_clean = self.log_to_clean(log, now_ms=now_ms, high_watermark=high_watermark)
        return self._clean(_chosen(log, to_clean), now_ms=now_ms)

    def clean_logs(
        self,
        logs: Mapping[TopicPartition, PartitionLog],
        *,
        now_ms: int,
        high_watermarks: Mapping[TopicPartition, int],
        max_logs: int | None = None,
    ) -> dict[TopicPartition, CleanStats]:
        """The periodic entry point: clean every compacted log that needs it, filthiest first
        (at most ``max_logs``). Logs without a high watermark are skipped. A log whose cleaning
        fails is logged and left alone from then on (Kafka's "uncleanable partitions")."""
        done: dict[TopicPartition, CleanStats] = {}
        for chosen in self.filthiest_logs(logs, now_ms=now_ms, high_watermarks=high_watermarks)[
            :max_logs
        ]:
            stats = self.clean_chosen(chosen, now_ms=now_ms)
            if stats is not None:
                done[chosen.partition] = stats
        return done

    def filthiest_logs(
        self,
        logs: Mapping[TopicPartition, PartitionLog],
        *,
        now_ms: int,
        high_watermarks: Mapping[TopicPartition, int],
    ) -> list[CleaningPass]:
        """The compacted logs that need cleaning now, filthiest first (Kafka's
        ``grabFilthiestCompactedLog``); applies retention to ``compact,delete`` logs first.
        Logs without a high watermark, and uncleanable ones, are skipped."""
        chosen: list[CleaningPass] = []
        for tp, log in logs.items():
            high_watermark = high_watermarks.get(tp)
            if not log.config.compacts or high_watermark is None:
                continue
            if log.directory in self._uncleanable:
                continue
            try:
                if log.config.deletes:
                    log.delete_old_segments(now_ms, high_watermark)
                to_clean = self.needs_cleaning(log, now_ms=now_ms, high_watermark=high_watermark)
            except Exception:
                self._mark_uncleanable(log)
                continue
            if to_clean is not None:
                chosen.append(_chosen(log, to_clean, tp))
        chosen.sort(key=lambda item: item.to_clean.cleanable_ratio, reverse=True)
        return chosen

    def clean_chosen(self, chosen: CleaningPass, *, now_ms: int) -> CleanStats | None:
        """One pass over a log :meth:`filthiest_logs` chose (any thread, see the module doc).
        None when the pass was aborted (the log changed) or failed (the log is then marked
        uncleanable)."""
        try:
            return self._clean(chosen, now_ms=now_ms)
        except CleaningAborted as aborted:
            _log.info("%s: cleaning aborted: %s", chosen.log.directory.name, aborted)
        except Exception:
            self._mark_uncleanable(chosen.log)
        return None

    def _mark_uncleanable(self, log: PartitionLog) -> None:
        _log.exception("cannot clean %s; leaving it uncleaned", log.directory)
        self._uncleanable.add(log.directory)

    @property
    def uncleanable(self) -> frozenset[Path]:
        """Directories of logs whose cleaning failed (``clean_logs`` skips them)."""
        return frozenset(self._uncleanable)

    def _clean(self, chosen: CleaningPass, *, now_ms: int) -> CleanStats:
        """A pass; off the owner thread, a failure after the log changed is CleaningAborted."""
        expected = list(chosen.segments)
        try:
            return self._clean_pass(chosen, expected, now_ms=now_ms)
        except CleaningAborted:
            raise
        except Exception as error:
            changed: list[bool] = []
            self._run_on_owner(lambda: changed.append(_log_changed(chosen.log, expected)))
            if changed[0]:
                raise CleaningAborted(f"the log changed during the pass ({error!r})") from error
            raise

    def _on_owner(
        self, log: PartitionLog, expected: Sequence[LogSegment], step: Callable[[], None]
    ) -> None:
        """Run ``step`` on the owner thread unless the log changed since the pass began."""

        def checked() -> None:
            if _log_changed(log, expected):
                raise CleaningAborted("segments were removed or the log was closed")
            step()

        self._run_on_owner(checked)

    def _clean_pass(
        self, chosen: CleaningPass, expected: list[LogSegment], *, now_ms: int
    ) -> CleanStats:
        log, to_clean = chosen.log, chosen.to_clean
        config = log.config
        stats = CleanStats(first_dirty_offset=to_clean.first_dirty_offset)
        offset_map = self._map
        txns = CleanedTransactions(chosen.aborted)
        self._build_offset_map(
            chosen.segments,
            start=to_clean.first_dirty_offset,
            end=to_clean.first_uncleanable_offset,
            stats=stats,
            txns=txns,
        )
        end = offset_map.end_offset
        segments = chosen.segments
        cleanable = [segment for segment in segments[:-1] if segment.base_offset < end]
        pending: int | None = None
        if cleanable:
            groups = group_segments_by_size(
                cleanable,
                max_size=config.segment_bytes,
                max_index_size=config.segment_index_bytes,
                end_offset=segments[len(cleanable)].base_offset,
            )
            producers = _last_data_batches(segments)
            for group in groups:
                horizon = self._clean_group(
                    log,
                    group,
                    expected,
                    now_ms=now_ms,
                    producers=producers,
                    stats=stats,
                    txns=txns,
                )
                if horizon is not None:
                    pending = horizon if pending is None else min(pending, horizon)
        stats.end_offset = end

        def checkpoint() -> None:
            if cleanable:
                self._pending_horizons[log.directory] = pending
            data_dir = log.directory.parent
            self._checkpoint(data_dir)[_partition(log)] = end
            self._write_checkpoint(data_dir)

        self._on_owner(log, expected, checkpoint)
        _log.info(
            "%s: cleaned [%d, %d): %d of %d records removed, %d -> %d bytes in %d segments",
            log.directory.name,
            segments[0].base_offset,
            end,
            stats.records_removed,
            stats.records_read,
            stats.bytes_read,
            stats.bytes_written,
            stats.segments_written,
        )
        return stats

    def _build_offset_map(
        self,
        segments: Sequence[LogSegment],
        *,
        start: int,
        end: int,
        stats: CleanStats,
        txns: CleanedTransactions,
    ) -> None:
        """Kafka's ``buildOffsetMap`` over ``[start, end)``, stopping at a batch boundary when
        the map is full (but always mapping at least one batch, so every pass progresses)."""
        offset_map = self._map
        offset_map.clear(start)
        for segment in _overlapping(segments, start, end):
            position = 0
            if segment.base_offset < start:
                located = segment.translate_offset(start)
                if located is None:
                    continue
                position = located[0]
            for header, data in _batches(
                segment, start=position, chunk_bytes=self._io_buffer_bytes
            ):
                if header.base_offset >= end:
                    return
                if header.last_offset < start:
                    continue
                if not (header.is_control or txns.is_aborted(header)):
                    mapped_some = offset_map.latest_offset >= start
                    for record in iter_records(data):
                        key = record.key
                        if key is None or record.offset < start:
                            continue
                        if mapped_some and offset_map.is_full and key not in offset_map:
                            return
                        offset_map.put(key, record.offset)
                        stats.map_records += 1
                offset_map.latest_offset = min(header.last_offset, end - 1)

    def _clean_group(
        self,
        log: PartitionLog,
        group: Sequence[LogSegment],
        expected: list[LogSegment],
        *,
        now_ms: int,
        producers: Mapping[int, int],
        stats: CleanStats,
        txns: CleanedTransactions,
    ) -> int | None:
        """Write one cleaned segment for ``group`` and swap it in; return the earliest delete
        horizon still ahead among the tombstones it keeps."""
        delete_retention_ms = log.config.delete_retention_ms
        cleaned = log.new_cleaned_segment(group[0].base_offset)
        changed = len(group) > 1
        pending: int | None = None
        try:
            writer = _SegmentWriter(cleaned, chunk_bytes=self._io_buffer_bytes)
            for segment in group:
                stats.bytes_read += segment.size
                for header, data in _batches(segment, chunk_bytes=self._io_buffer_bytes):
                    discardable = header.is_control and txns.on_marker(header)
                    if not header.is_control:
                        txns.on_data_batch(header)
                    result = filter_batch(
                        data,
                        header,
                        offset_map=self._map,
                        now_ms=now_ms,
                        delete_retention_ms=delete_retention_ms,
                        retain_empty=header.has_producer_id
                        and producers.get(header.producer_id) == header.last_offset,
                        aborted=txns.is_aborted(header),
                        discardable_marker=discardable,
                    )
                    _account(stats, header, result)
                    changed = changed or not result.copied
                    if result.data is not None and result.header is not None:
                        writer.write(result.data, result.header)
                    horizon = result.tombstone_horizon
                    if horizon is not None and horizon > now_ms:
                        pending = horizon if pending is None else min(pending, horizon)
            writer.flush()
            for segment in group:
                cleaned.txn_index.extend(segment.txn_index.entries)
        except BaseException:
            cleaned.delete()
            raise
        if not changed:  # one segment, nothing to remove or stamp: keep the original
            cleaned.delete()
            return pending
        modified_ns = group[-1].log_path.stat().st_mtime_ns

        def swap() -> None:
            log.replace_segments(cleaned, group)
            # Kafka keeps the last replaced segment's modification time (retention uses it).
            os.utime(cleaned.log_path, ns=(modified_ns, modified_ns))
            first = next(i for i, segment in enumerate(expected) if segment is group[0])
            expected[first : first + len(group)] = [cleaned]

        try:
            self._on_owner(log, expected, swap)
        except (ValueError, CleaningAborted):
            cleaned.delete()
            raise
        stats.bytes_written += writer.written
        stats.segments_cleaned += len(group)
        stats.segments_written += 1
        return pending


def _account(stats: CleanStats, header: BatchHeader, result: FilterResult) -> None:
    stats.records_read += result.records_read
    stats.records_removed += result.records_removed
    stats.invalid_records += result.invalid_records
    stats.tombstones_removed += result.tombstones_removed
    if result.data is None:
        stats.batches_removed += 1
    elif result.header is not None and result.header.record_count == 0 < header.record_count:
        stats.batches_emptied += 1


def _partition(log: PartitionLog) -> TopicPartition:
    return TopicPartition.from_dir_name(log.directory.name)


def _chosen(
    log: PartitionLog, to_clean: LogToClean, partition: TopicPartition | None = None
) -> CleaningPass:
    return CleaningPass(
        partition=partition or _partition(log),
        log=log,
        to_clean=to_clean,
        segments=log.segments,
        aborted=tuple(
            log.collect_aborted_txns(log.segments[0].base_offset, to_clean.first_uncleanable_offset)
        ),
    )


def _log_changed(log: PartitionLog, expected: Sequence[LogSegment]) -> bool:
    """Whether ``log`` was closed or lost a segment of ``expected`` (owner thread only)."""
    if log.closed:
        return True
    current = {id(segment) for segment in log.segments}
    return any(id(segment) not in current for segment in expected)
