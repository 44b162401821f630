"""Log compaction (``cleanup.policy=compact``): Kafka's log cleaner, one partition at a time.

Plain logic and file I/O, no asyncio: the owner of the logs calls
:meth:`LogCleaner.clean_logs` (or :meth:`LogCleaner.clean_if_needed`) every
``log.cleaner.backoff.ms``.

This module runs the passes; their parts are modules of their own: ``cleaner_plan`` (what is
cleanable, the segment groups), ``offset_map``, ``cleaner_filter`` (one batch's records),
``cleaner_segments`` (reading and writing segments), ``cleaner_txns`` (transactions) and
``cleaner_checkpoint`` (the first dirty offsets).

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
does (:func:`~strom.storage.cleaner_plan.log_to_clean`). A log is cleaned when
``dirty bytes / (clean + dirty bytes)`` is above ``min.cleanable.dirty.ratio`` (strictly, as
Kafka's ``LogCleanerManager``), when its oldest dirty batch is older than
``max.compaction.lag.ms``, or when tombstones it kept have reached their delete horizon
(Kafka's low-traffic tombstone pass).

**A pass** (:meth:`LogCleaner.clean`):

1. Build the :class:`~strom.storage.offset_map.OffsetMap` (key -> latest offset) over the dirty
   range; when it fills up the pass stops at a batch boundary and the rest waits for the next.
2. Group the segments from the log start to the end of the map (never the active segment) by
   ``segment.bytes`` and index size, as Kafka's ``groupSegmentsBySize``; each group becomes one
   ``.cleaned`` segment at the group's first base offset.
3. Filter each batch (:func:`~strom.storage.cleaner_filter.filter_batch`): keep a record when
   its offset is at or above the map's end, or it is the latest of its key, unless it is a
   tombstone whose batch's delete horizon has passed. Records without a key are dropped, as
   Kafka's cleaner does (it counts them as invalid: compacted topics refuse them on produce). A
   batch that loses nothing is copied byte for byte; otherwise it is re-encoded with its base
   offset, last offset delta, producer fields, timestamp type, leader epoch and codec
   (decompressed, filtered, re-compressed). A batch left with no record is dropped, unless it is
   the last data batch of its producer id (kept empty, as Kafka keeps producer state).
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

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from strom.common import TopicPartition
from strom.protocol.batch import BatchHeader
from strom.protocol.records import iter_records
from strom.storage.cleaner_checkpoint import CleanerCheckpoints
from strom.storage.cleaner_filter import FilterResult, filter_batch
from strom.storage.cleaner_plan import (
    CleaningPass,
    LogToClean,
    cleaning_pass,
    group_segments_by_size,
    log_to_clean,
    overlapping,
)
from strom.storage.cleaner_segments import (
    SegmentWriter,
    earliest_delete_horizon,
    last_data_batches,
    read_batches,
)
from strom.storage.cleaner_txns import CleanedTransactions
from strom.storage.offset_map import DEFAULT_MAX_ENTRIES, OffsetMap
from strom.storage.partition_log import PartitionLog
from strom.storage.segment import LogSegment

__all__ = [
    "DEFAULT_IO_BUFFER_BYTES",
    "CleanStats",
    "CleaningAborted",
    "LogCleaner",
]

DEFAULT_IO_BUFFER_BYTES: Final = 1024 * 1024

_log = logging.getLogger(__name__)

OwnerStep = Callable[[Callable[[], None]], None]
"""Runs a step on the logs' owner thread and returns when it is done (or raises what it did)."""


class CleaningAborted(Exception):
    """The log changed under a pass (segments removed, log closed); the pass left it alone."""


def _run_here(step: Callable[[], None]) -> None:
    step()


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
        self._checkpoints = CleanerCheckpoints()
        self._pending_horizons: dict[Path, int | None] = {}
        self._uncleanable: set[Path] = set()

    # --- checkpoints ---------------------------------------------------------------------

    def first_dirty_offset(self, log: PartitionLog) -> int:
        """Where the dirty part of ``log`` starts (its checkpoint, see
        :meth:`~strom.storage.cleaner_checkpoint.CleanerCheckpoints.first_dirty_offset`)."""
        return self._checkpoints.first_dirty_offset(log)

    def truncated(self, log: PartitionLog, offset: int) -> None:
        """The log was truncated to ``offset``: lower its checkpoint (Kafka's
        ``maybeTruncateCheckpoint``), so records appended again are seen as dirty.

        Truncation never splits a batch, so the log may end below ``offset``; the checkpoint
        goes down to wherever the log really ends.
        """
        self._checkpoints.lower(log, min(offset, log.log_end_offset))
        self._pending_horizons.pop(log.directory, None)

    def forget(self, log: PartitionLog) -> None:
        """The log is being deleted: drop its checkpoint entry and what is known of it."""
        self._checkpoints.remove(log)
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
            self._pending_horizons[log.directory] = earliest_delete_horizon(log.segments[:-1])
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
        return self._clean(cleaning_pass(log, to_clean), now_ms=now_ms)

    def clean(self, log: PartitionLog, *, now_ms: int, high_watermark: int) -> CleanStats:
        """One cleaning pass now, whatever the dirty ratio (the log must be compacted)."""
        if not log.config.compacts:
            raise ValueError(f"{log.directory.name} is not a compacted log")
        to_clean = self.log_to_clean(log, now_ms=now_ms, high_watermark=high_watermark)
        return self._clean(cleaning_pass(log, to_clean), now_ms=now_ms)

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
                chosen.append(cleaning_pass(log, to_clean, tp))
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
            producers = last_data_batches(segments)
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
            self._checkpoints.cleaned(log, end)

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
        for segment in overlapping(segments, start, end):
            position = 0
            if segment.base_offset < start:
                located = segment.translate_offset(start)
                if located is None:
                    continue
                position = located[0]
            for header, data in read_batches(
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
            writer = SegmentWriter(cleaned, chunk_bytes=self._io_buffer_bytes)
            for segment in group:
                stats.bytes_read += segment.size
                for header, data in read_batches(segment, chunk_bytes=self._io_buffer_bytes):
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


def _log_changed(log: PartitionLog, expected: Sequence[LogSegment]) -> bool:
    """Whether ``log`` was closed or lost a segment of ``expected`` (owner thread only)."""
    if log.closed:
        return True
    current = {id(segment) for segment in log.segments}
    return any(id(segment) not in current for segment in expected)
