"""The segments of one partition directory and their mechanics (Kafka's ``LocalLog``).

A :class:`LocalLog` knows the log end offset, the recovery point and the segment list; it
appends already validated batches to the active segment, rolls, reads raw bytes by offset,
looks up timestamps, truncates, removes the oldest segments, flushes and swaps cleaned
segments in. It knows nothing of producers, leader epochs, transactions, the log start offset
or the high watermark: :class:`strom.storage.partition_log.PartitionLog` owns those and
decides when each of these mechanics runs.

Invariants: segments are sorted by base offset and never overlap; only the last one (the
active segment) is appended to; ``recovery_point <= log_end_offset`` and everything below the
recovery point is fsynced. Not thread-safe (see ``NOTES.md``).
"""

from __future__ import annotations

import bisect
import shutil
import zlib
from collections.abc import Sequence
from pathlib import Path

from strom.common import Clock, ErrorCode, KafkaError
from strom.protocol.batch import BatchSummary
from strom.storage._files import fsync_directory
from strom.storage.file_region import FileRegion
from strom.storage.log_config import LONG_MAX, LogConfig
from strom.storage.log_reads import (
    ReadPiece,
    first_offset_by_timestamp,
    offset_of_max_timestamp,
    plan_read,
)
from strom.storage.segment import CLEANED_SUFFIX, SWAP_SUFFIX, LogSegment, OffsetTimestamp

__all__ = ["LocalLog", "offset_out_of_range"]


def offset_out_of_range(offset: int, low: int, high: int, name: str) -> KafkaError:
    """OFFSET_OUT_OF_RANGE for a read at ``offset`` outside ``[low, high]``."""
    return KafkaError(
        ErrorCode.offset_out_of_range,
        f"offset {offset} is out of range [{low}, {high}] of {name}",
    )


class LocalLog:
    """The segments of one partition directory (see the module doc)."""

    def __init__(
        self,
        directory: Path,
        *,
        config: LogConfig,
        clock: Clock,
        segments: list[LogSegment],
        recovery_point: int,
    ) -> None:
        if not segments:
            raise ValueError("a partition log has at least one segment")
        self.directory = directory
        self.config = config
        """Settings; a new one applies from the next append, roll or flush."""
        self._clock = clock
        self._segments = segments
        self._bases = [segment.base_offset for segment in segments]
        self._next_offset = segments[-1].next_offset
        self._recovery_point = min(recovery_point, self._next_offset)
        self._last_flush_ms = clock.monotonic_ms()
        self._directory_dirty = False
        self._closed = False

    # --- state -----------------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def log_end_offset(self) -> int:
        return self._next_offset

    @property
    def recovery_point(self) -> int:
        """Everything below it is fsynced; recovery after a crash starts from its segment."""
        return self._recovery_point

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return tuple(self._segments)

    @property
    def first_base_offset(self) -> int:
        """The base offset of the oldest segment."""
        return self._bases[0]

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size(self) -> int:
        """Bytes in all segments."""
        return sum(segment.size for segment in self._segments)

    @property
    def closed(self) -> bool:
        """Closed (or deleted): its files are released."""
        return self._closed

    def check_open(self) -> None:
        """KAFKA_STORAGE_ERROR once closed."""
        if self._closed:
            raise KafkaError(ErrorCode.kafka_storage_error, f"log {self.directory} is closed")

    def segments_from(self, offset: int) -> list[LogSegment]:
        """The segment holding ``offset`` (the first one below it) and every later one."""
        first = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        return self._segments[first:]

    # --- append and roll -------------------------------------------------------------------

    def append(self, data: bytes | bytearray, batches: Sequence[BatchSummary]) -> None:
        """Write validated batches (offsets assigned, the first at or after the log end) to
        the active segment; roll first when :meth:`should_roll` says so, not here."""
        segment = self._segments[-1]
        segment.append_batches(data, batches)
        last_base_offset, _, last_offset_delta, _ = batches[-1]
        self._next_offset = last_base_offset + last_offset_delta + 1
        self._maybe_flush_after_append()

    def should_roll(self, *, size: int, max_timestamp: int, last_offset: int) -> bool:
        """Whether new batches need a new active segment (Kafka's ``LogSegment.shouldRoll``):
        ``size`` bytes would pass segment.bytes, an index is full, ``last_offset`` would not
        fit 32 bits, or segment.ms (with jitter) elapsed.

        segment.ms counts in record time, from the first batch's max timestamp to the new
        batches' (as Kafka since KIP-32), or in broker time since the segment was created when
        the first batch has no timestamp.
        """
        segment = self._segments[-1]
        if not segment.can_hold_offset(last_offset):
            return True
        segment_size = segment.size
        if segment_size == 0:
            return False
        config = self.config
        if segment_size > config.segment_bytes - size or segment.is_index_full:
            return True
        first_timestamp = segment.first_batch_timestamp
        if first_timestamp is not None and first_timestamp >= 0:
            waited = max_timestamp - first_timestamp
        else:
            waited = self._clock.now_ms() - segment.created_ms
        # The jitter is below segment_jitter_ms: hash it only when that much could matter.
        return waited > config.segment_ms - config.segment_jitter_ms and (
            waited > config.segment_ms - self.roll_jitter_ms(segment.base_offset)
        )

    def roll_jitter_ms(self, base_offset: int) -> int:
        """segment.jitter.ms for one segment: a stable hash instead of Kafka's random draw."""
        jitter = self.config.segment_jitter_ms
        if jitter <= 0:
            return 0
        key = f"{self.directory.name}:{base_offset}".encode()
        return zlib.crc32(key) % min(jitter, self.config.segment_ms)

    def roll(self, base_offset: int) -> bool:
        """Start a new active segment at ``base_offset`` (an empty active one is replaced, or
        kept when already there), fsync the previous ones and move the recovery point, as
        Kafka does (asynchronously). Whether a new segment was made."""
        old = self._segments[-1]
        if old.size == 0:
            if old.base_offset == base_offset:
                return False
            self._segments.pop()
            self._bases.pop()
            old.delete()
        else:
            old.on_become_inactive()
        segment = LogSegment.create(
            self.directory, base_offset, config=self.config, now_ms=self._clock.now_ms()
        )
        self._segments.append(segment)
        self._bases.append(base_offset)
        self._directory_dirty = True
        self.flush(up_to=base_offset)
        return True

    # --- read ------------------------------------------------------------------------------

    def plan_read(
        self, offset: int, *, max_bytes: int, max_offset: int, min_one_message: bool
    ) -> tuple[list[ReadPiece], int]:
        """Where the bytes of a read are (see :func:`strom.storage.log_reads.plan_read`) and
        the offset after its last whole batch; never past ``max_offset`` nor the log end."""
        self.check_open()
        if offset < self._bases[0] or offset > self._next_offset:
            raise offset_out_of_range(
                offset, self._bases[0], self._next_offset, self.directory.name
            )
        return plan_read(
            self._segments,
            self._bases,
            offset,
            max_bytes=max_bytes,
            limit=min(max_offset, self._next_offset),
            log_end_offset=self._next_offset,
            min_one_message=min_one_message,
        )

    def read(
        self, offset: int, *, max_bytes: int, max_offset: int, min_one_message: bool
    ) -> tuple[tuple[FileRegion, ...], int]:
        """The regions of :meth:`plan_read`'s pieces (the caller closes them) and the offset
        after the last whole batch."""
        pieces, next_offset = self.plan_read(
            offset, max_bytes=max_bytes, max_offset=max_offset, min_one_message=min_one_message
        )
        regions: list[FileRegion] = []
        try:
            for piece in pieces:
                regions.append(piece.segment.region(piece.position, piece.length))
        except BaseException:
            for region in regions:
                region.close()
            raise
        return tuple(regions), next_offset

    def readable_bytes(self, offset: int, *, max_bytes: int, max_offset: int) -> int:
        """How many bytes :meth:`read` would return (with ``min_one_message``)."""
        pieces, _ = self.plan_read(
            offset, max_bytes=max_bytes, max_offset=max_offset, min_one_message=True
        )
        return sum(piece.length for piece in pieces)

    def read_bytes(
        self, offset: int, *, max_bytes: int, max_offset: int, min_one_message: bool
    ) -> bytes:
        """The whole batches of what :meth:`read` would return, copied into memory."""
        pieces, _ = self.plan_read(
            offset, max_bytes=max_bytes, max_offset=max_offset, min_one_message=min_one_message
        )
        return b"".join(piece.segment.read(piece.position, piece.length) for piece in pieces)

    # --- timestamps ------------------------------------------------------------------------

    def offset_for_timestamp(self, timestamp: int, *, from_offset: int) -> OffsetTimestamp | None:
        """The first record at or above ``from_offset`` with a timestamp >= ``timestamp``."""
        self.check_open()
        return first_offset_by_timestamp(self._segments, timestamp, log_start_offset=from_offset)

    def offset_of_max_timestamp(self, *, from_offset: int) -> OffsetTimestamp | None:
        """The first record at or above ``from_offset`` with the largest timestamp."""
        self.check_open()
        return offset_of_max_timestamp(self._segments, log_start_offset=from_offset)

    # --- truncation and removal ------------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch with a record at or above ``offset``, which must lie in
        ``[first base offset, log end)``; the log end becomes the first removed batch's base
        offset. fsynced."""
        keep = bisect.bisect_right(self._bases, offset)
        for segment in reversed(self._segments[keep:]):
            segment.delete()
        del self._segments[keep:]
        del self._bases[keep:]
        active = self._segments[-1]
        active.truncate_to(offset, now_ms=self._clock.now_ms())
        active.make_active(max_index_size=self.config.segment_index_bytes)
        active.flush()
        fsync_directory(self.directory)
        self._directory_dirty = False
        self._next_offset = active.next_offset
        self._recovery_point = min(self._recovery_point, self._next_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start empty at ``offset`` (log end = recovery point = it)."""
        for segment in reversed(self._segments):
            segment.delete()
        segment = LogSegment.create(
            self.directory, offset, config=self.config, now_ms=self._clock.now_ms()
        )
        self._segments = [segment]
        self._bases = [offset]
        fsync_directory(self.directory)
        self._directory_dirty = False
        self._next_offset = self._recovery_point = offset

    def remove_oldest(self, count: int) -> None:
        """Delete the ``count`` oldest segments (never the last one); the recovery point moves
        up to the first remaining segment."""
        doomed = self._segments[:count]
        del self._segments[:count]
        del self._bases[:count]
        self._recovery_point = max(self._recovery_point, self._bases[0])
        for segment in doomed:
            segment.delete()
        self._directory_dirty = True

    # --- flush -----------------------------------------------------------------------------

    def flush(self, up_to: int | None = None) -> None:
        """fsync the segments holding ``[recovery point, up_to)`` and move the recovery point.

        ``up_to`` defaults to the log end offset.
        """
        self.check_open()
        target = self._next_offset if up_to is None else min(up_to, self._next_offset)
        if target > self._recovery_point:
            first = max(bisect.bisect_right(self._bases, self._recovery_point) - 1, 0)
            last = bisect.bisect_left(self._bases, target)
            for segment in self._segments[first:last]:
                segment.flush()
        if self._directory_dirty:
            fsync_directory(self.directory)
            self._directory_dirty = False
        self._recovery_point = max(self._recovery_point, target)
        self._last_flush_ms = self._clock.monotonic_ms()

    def _maybe_flush_after_append(self) -> None:
        config = self.config
        unflushed = self._next_offset - self._recovery_point
        if unflushed >= config.flush_messages or (
            config.flush_ms != LONG_MAX
            and self._clock.monotonic_ms() - self._last_flush_ms >= config.flush_ms
        ):
            self.flush()

    def maybe_flush(self) -> bool:
        """Flush if flush.messages or flush.ms says so; whether the recovery point moved."""
        self.check_open()
        if self._next_offset <= self._recovery_point:
            return False
        before = self._recovery_point
        self._maybe_flush_after_append()
        return self._recovery_point != before

    # --- compaction support ----------------------------------------------------------------

    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """An empty ``<base>.log.cleaned`` segment for the cleaner to fill with ``append``."""
        self.check_open()
        return LogSegment.create(
            self.directory,
            base_offset,
            config=self.config,
            now_ms=self._clock.now_ms(),
            suffix=CLEANED_SUFFIX,
        )

    def replace_segments(self, new: LogSegment, old: Sequence[LogSegment]) -> None:
        """Swap a cleaned segment in for consecutive inactive segments, crash-safely.

        ``new`` (from :meth:`new_cleaned_segment`) must start at ``old[0]``'s base offset and
        end before the segment after ``old``. Kafka's protocol: fsync ``new``; rename
        ``.cleaned`` -> ``.swap`` (and fsync the directory); swap the list; delete ``old``
        (renamed ``.deleted``, removed); drop the ``.swap`` suffix. A crash anywhere leaves
        files the loader completes or undoes without loss (see :mod:`strom.storage.loader`).
        """
        self.check_open()
        if not old:
            raise ValueError("nothing to replace")
        try:
            first = next(i for i, segment in enumerate(self._segments) if segment is old[0])
        except StopIteration:
            raise ValueError(f"segment {old[0].base_offset} is no longer in the log") from None
        end = first + len(old)
        if end >= len(self._segments) or any(
            self._segments[first + i] is not segment for i, segment in enumerate(old)
        ):
            raise ValueError("old segments must be consecutive, inactive segments of the log")
        if new.suffix != CLEANED_SUFFIX or new.base_offset != old[0].base_offset:
            raise ValueError(
                f"the replacement must be a .cleaned segment at base offset {old[0].base_offset}"
            )
        if new.size and new.next_offset > self._bases[end]:
            raise ValueError(
                f"the replacement ends at {new.next_offset}, past the next segment "
                f"{self._bases[end]}"
            )
        new.on_become_inactive()
        new.flush()
        new.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
        fsync_directory(self.directory)
        self._segments[first:end] = [new]
        self._bases[first:end] = [new.base_offset]
        for segment in old:
            segment.delete()
        new.change_file_suffixes(SWAP_SUFFIX, "")
        fsync_directory(self.directory)

    # --- life cycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Finish every segment (final time index entry, trimmed indexes) and release its
        files; :meth:`flush` first for a clean close."""
        if self._closed:
            return
        for segment in self._segments:
            segment.close()
        self._closed = True

    def close_without_flush(self) -> None:
        """Release the files as a crash would leave them (no fsync, nothing trimmed)."""
        if self._closed:
            return
        for segment in self._segments:
            segment.close_handles()
        self._closed = True

    def delete(self) -> None:
        """Remove the whole partition directory."""
        self.close_without_flush()
        shutil.rmtree(self.directory, ignore_errors=True)
