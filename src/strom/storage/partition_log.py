"""The log of one partition: a directory ``<topic>-<partition>`` of segments.

Invariants (``NOTES.md`` has the whole list): segments are sorted by base offset and never
overlap; only the last one (the active segment) is appended to; ``first segment's base offset
<= log_start_offset <= log_end_offset``; ``recovery_point <= log_end_offset`` (everything below
the recovery point is fsynced; it may lag the log start).

Plain logic and file I/O, no asyncio, not thread-safe: one owner (the event loop thread) calls
every method. See :mod:`strom.storage.file_region` for who closes what a read returns.
"""

from __future__ import annotations

import bisect
import itertools
import shutil
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final

from strom.common import Clock, ErrorCode, KafkaError
from strom.protocol.batch import (
    NO_TIMESTAMP,
    BatchHeader,
    BatchSummary,
    assign_offsets,
    summarize_batches,
)
from strom.storage._files import fsync_directory
from strom.storage.file_region import FileRegion
from strom.storage.loader import load_log
from strom.storage.log_config import LONG_MAX, LogConfig
from strom.storage.retention import deletable_by_log_start, segments_to_delete
from strom.storage.segment import (
    CLEANED_SUFFIX,
    SWAP_SUFFIX,
    LogSegment,
    OffsetTimestamp,
)

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AppendInfo",
    "OffsetTimestamp",
    "PartitionLog",
    "ReadResult",
    "UnexpectedAppendOffsetError",
]

LATEST_TIMESTAMP: Final = -1
EARLIEST_TIMESTAMP: Final = -2
MAX_TIMESTAMP: Final = -3
EARLIEST_LOCAL_TIMESTAMP: Final = -4
"""ListOffsets' special timestamps (KIP-734 and KIP-405 for the last two)."""

_FOLLOWER_MAX_BATCH: Final = 2**31 - 1


class UnexpectedAppendOffsetError(KafkaError):
    """A follower append whose first offset is below the log end offset (Kafka's
    ``UnexpectedAppendOffsetException``): the fetcher must truncate or refetch."""

    def __init__(self, message: str, *, first_offset: int, log_end_offset: int) -> None:
        super().__init__(ErrorCode.unknown_server_error, message)
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset


class AppendInfo:
    """What an append did (read-only; built once per append, its headers only when asked)."""

    __slots__ = (
        "_batches",
        "_written",
        "base_offset",
        "last_offset",
        "log_append_time",
        "log_start_offset",
        "max_timestamp",
        "size",
    )

    def __init__(
        self,
        *,
        base_offset: int,
        last_offset: int,
        log_append_time: int,
        max_timestamp: int,
        log_start_offset: int,
        written: bytes | bytearray,
    ) -> None:
        self.base_offset: Final = base_offset
        """The first offset assigned."""
        self.last_offset: Final = last_offset
        self.log_append_time: Final = log_append_time
        """The broker time written into LogAppendTime batches; -1 (NO_TIMESTAMP) for CreateTime."""
        self.max_timestamp: Final = max_timestamp
        self.log_start_offset: Final = log_start_offset
        self.size: Final = len(written)
        """Bytes appended."""
        self._written = written
        self._batches: tuple[BatchHeader, ...] | None = None

    @property
    def batches(self) -> tuple[BatchHeader, ...]:
        """The headers as written (offsets, epoch, timestamps, CRC), decoded on first use
        from the appended bytes (a private copy nobody else changes)."""
        if self._batches is None:
            headers: list[BatchHeader] = []
            position = 0
            while position < self.size:
                header = BatchHeader.read(self._written, position)
                headers.append(header)
                position += header.size
            self._batches = tuple(headers)
        return self._batches

    def __repr__(self) -> str:
        return (
            f"AppendInfo(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"log_append_time={self.log_append_time}, max_timestamp={self.max_timestamp}, "
            f"log_start_offset={self.log_start_offset}, size={self.size})"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResult:
    """The log's bytes from the batch holding the fetch offset, as file regions.

    As Kafka's fetch: the last batch may be cut short by the byte limit (clients drop a
    partial trailing batch); see :meth:`PartitionLog.read`. The regions belong to the caller:
    send them, then ``close()`` (or use ``with``). See :mod:`strom.storage.file_region` for
    why a region survives its segment's deletion.
    """

    regions: tuple[FileRegion, ...]
    next_offset: int
    """The offset after the last whole batch returned (the fetch offset when none is)."""
    log_start_offset: int
    log_end_offset: int

    @property
    def size(self) -> int:
        return sum(region.length for region in self.regions)

    def read(self) -> bytes:
        """All the regions' bytes (they stay open)."""
        return b"".join(region.read() for region in self.regions)

    def close(self) -> None:
        for region in self.regions:
            region.close()

    def __enter__(self) -> ReadResult:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class _Piece:
    segment: LogSegment
    position: int
    length: int
    whole_length: int
    """The bytes of the whole batches the piece starts with (all but a partial last batch)."""


class PartitionLog:
    """Append, read, look up, roll, truncate and retain one partition's segments.

    Open with :meth:`open`; :class:`strom.storage.log_manager.LogManager` does it for a data
    directory and keeps the recovery point and log start offset checkpoints.
    """

    def __init__(
        self,
        directory: Path,
        *,
        config: LogConfig,
        clock: Clock,
        segments: list[LogSegment],
        log_start_offset: int,
        recovery_point: int,
    ) -> None:
        if not segments:
            raise ValueError("a partition log has at least one segment")
        self.directory = directory
        self._config = config
        self._clock = clock
        self._segments = segments
        self._bases = [segment.base_offset for segment in segments]
        self._log_start_offset = log_start_offset
        self._next_offset = segments[-1].next_offset
        self._recovery_point = min(recovery_point, self._next_offset)
        self._last_flush_ms = clock.monotonic_ms()
        self._directory_dirty = False
        self._closed = False

    @classmethod
    def open(
        cls,
        directory: Path,
        *,
        config: LogConfig,
        clock: Clock,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
    ) -> PartitionLog:
        """Load (or create) the partition directory; recover it unless shut down cleanly.

        ``recovery_point`` and ``log_start_offset`` come from the data directory's checkpoints.
        """
        loaded = load_log(
            directory,
            config=config,
            now_ms=clock.now_ms(),
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
        )
        return cls(
            directory,
            config=config,
            clock=clock,
            segments=loaded.segments,
            log_start_offset=loaded.log_start_offset,
            recovery_point=loaded.recovery_point,
        )

    # --- state -----------------------------------------------------------------------------

    @property
    def config(self) -> LogConfig:
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """New settings apply from the next append, roll, flush or retention run."""
        self._config = config

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

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

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaError(ErrorCode.kafka_storage_error, f"log {self.directory} is closed")

    # --- append ----------------------------------------------------------------------------

    def append(
        self, records: bytes | bytearray | memoryview, *, leader_epoch: int = 0
    ) -> AppendInfo:
        """Validate a producer's batches, assign offsets from the log end, write them.

        The records are copied once; in that copy every batch is validated (magic, lengths,
        CRC, counts, max.message.bytes) and its header gets its base offset and leader epoch
        (outside the CRC) and, for LogAppendTime, the broker time (and a new CRC), in one pass
        (``protocol.batch.assign_offsets``). Nothing else changes. Nothing is written before
        every batch passed, so a bad one raises its specific KafkaError and leaves the log
        unchanged.
        """
        self._check_open()
        config = self._config
        buffer = bytearray(records)
        log_append_time = self._clock.now_ms() if config.log_append_time else NO_TIMESTAMP
        batches = assign_offsets(
            buffer,
            base_offset=self._next_offset,
            leader_epoch=leader_epoch,
            log_append_time=log_append_time,
            max_batch_bytes=config.max_message_bytes,
        )
        if not batches:
            raise KafkaError(ErrorCode.invalid_record, "produce request has no record batch")
        self._check_size(len(buffer))
        return self._append_batches(buffer, batches, log_append_time=log_append_time)

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> AppendInfo:
        """Append batches that already carry their offsets (replication, or a log copy).

        The first batch must start at or after the log end offset (after, only where
        compaction left a gap); batches must increase. Raises
        :class:`UnexpectedAppendOffsetError` when they start below it. The bytes are written
        unchanged (from a private copy when ``records`` is mutable). Batches already in a log
        pass with compaction's gaps and empty batches.
        """
        self._check_open()
        written = bytes(records)
        batches = summarize_batches(written, max_batch_bytes=_FOLLOWER_MAX_BATCH, from_client=False)
        if not batches:
            raise KafkaError(ErrorCode.invalid_record, "no record batch to append")
        for previous, batch in itertools.pairwise(batches):
            if batch[0] <= previous[0] + previous[2]:
                raise KafkaError(
                    ErrorCode.invalid_record,
                    f"batch at offset {batch[0]} is not after the previous batch's "
                    f"last offset {previous[0] + previous[2]}",
                )
        first = batches[0][0]
        if first < self._next_offset:
            raise UnexpectedAppendOffsetError(
                f"{self.directory.name}: follower batches start at {first}, below the log end "
                f"offset {self._next_offset}",
                first_offset=first,
                log_end_offset=self._next_offset,
            )
        self._check_size(len(written))
        return self._append_batches(written, batches, log_append_time=NO_TIMESTAMP)

    def _check_size(self, size: int) -> None:
        if size > self._config.segment_bytes:
            raise KafkaError(
                ErrorCode.record_list_too_large,
                f"{size} bytes of batches exceed segment.bytes {self._config.segment_bytes}",
            )

    def _append_batches(
        self,
        data: bytes | bytearray,
        batches: Sequence[BatchSummary],
        *,
        log_append_time: int,
    ) -> AppendInfo:
        first_offset = batches[0][0]
        last_base_offset, _, last_offset_delta, max_timestamp = batches[-1]
        last_offset = last_base_offset + last_offset_delta
        if len(batches) > 1:
            max_timestamp = max(batch[3] for batch in batches)
        segment = self._segment_for(
            size=len(data),
            max_timestamp=max_timestamp,
            first_offset=first_offset,
            last_offset=last_offset,
        )
        segment.append_batches(data, batches)
        self._next_offset = last_offset + 1
        self._maybe_flush_after_append()
        return AppendInfo(
            base_offset=first_offset,
            last_offset=last_offset,
            log_append_time=log_append_time,
            max_timestamp=max_timestamp,
            log_start_offset=self._log_start_offset,
            written=data,
        )

    # --- roll ------------------------------------------------------------------------------

    def roll_jitter_ms(self, base_offset: int) -> int:
        """segment.jitter.ms for one segment: a stable hash instead of Kafka's random draw."""
        jitter = self._config.segment_jitter_ms
        if jitter <= 0:
            return 0
        key = f"{self.directory.name}:{base_offset}".encode()
        return zlib.crc32(key) % min(jitter, self._config.segment_ms)

    def _segment_for(
        self, *, size: int, max_timestamp: int, first_offset: int, last_offset: int
    ) -> LogSegment:
        """The segment new batches go to: the active one, or a new one when Kafka's
        ``LogSegment.shouldRoll`` says so.

        segment.ms counts in record time, from the first batch's max timestamp to the new
        batches' (as Kafka since KIP-32), or in broker time since the segment was created when
        the first batch has no timestamp.
        """
        segment = self._segments[-1]
        if not segment.can_hold_offset(last_offset):
            return self._roll(first_offset)
        segment_size = segment.size
        if segment_size == 0:
            return segment
        config = self._config
        if segment_size > config.segment_bytes - size or segment.is_index_full:
            return self._roll(first_offset)
        first_timestamp = segment.first_batch_timestamp
        if first_timestamp is not None and first_timestamp >= 0:
            waited = max_timestamp - first_timestamp
        else:
            waited = self._clock.now_ms() - segment.created_ms
        # The jitter is below segment_jitter_ms: hash it only when that much could matter.
        if waited > config.segment_ms - config.segment_jitter_ms and (
            waited > config.segment_ms - self.roll_jitter_ms(segment.base_offset)
        ):
            return self._roll(first_offset)
        return segment

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (nothing if the active is empty)."""
        self._check_open()
        return self._roll(self._next_offset)

    def _roll(self, base_offset: int) -> LogSegment:
        old = self._segments[-1]
        if old.size == 0:
            if old.base_offset == base_offset:
                return old
            # An empty active segment is replaced rather than left behind.
            self._segments.pop()
            self._bases.pop()
            old.delete()
        else:
            old.on_become_inactive()
        segment = LogSegment.create(
            self.directory, base_offset, config=self._config, now_ms=self._clock.now_ms()
        )
        self._segments.append(segment)
        self._bases.append(base_offset)
        self._log_start_offset = max(self._log_start_offset, self._bases[0])
        self._directory_dirty = True
        # Kafka flushes the rolled segment (asynchronously) and moves the recovery point.
        self.flush(up_to=base_offset)
        return segment

    # --- read ------------------------------------------------------------------------------

    def _plan_read(
        self, offset: int, max_bytes: int, max_offset: int | None, min_one_message: bool
    ) -> tuple[list[_Piece], int]:
        """Kafka's ``LogSegment.read``: find where the batch holding ``offset`` starts, then
        take bytes up to the byte limit or the position of ``max_offset``, whichever is first;
        continue into the next segments while the limit allows their first batch."""
        self._check_open()
        if offset < self._log_start_offset or offset > self._next_offset:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"offset {offset} is out of range [{self._log_start_offset}, "
                f"{self._next_offset}] of {self.directory.name}",
            )
        limit = self._next_offset if max_offset is None else min(max_offset, self._next_offset)
        pieces: list[_Piece] = []
        next_offset = offset
        if offset >= limit:
            return pieces, next_offset
        remaining = max_bytes
        segments, bases = self._segments, self._bases
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
                end = min(start + remaining, self._limit_position(i, limit))
                whole = segment.last_batch_end(start, end)
                assert whole is not None  # the first batch fits: checked above
                whole_end, next_offset = whole
                pieces.append(_Piece(segment, start, end - start, whole_end - start))
                remaining -= end - start
                if end < segment.size or remaining <= 0:
                    break
            i += 1
            if i < len(segments):
                target = bases[i]
        return pieces, next_offset

    def _limit_position(self, index: int, limit: int) -> int:
        """Where the batches of segment ``index`` entirely below offset ``limit`` end."""
        segment = self._segments[index]
        if limit >= self._next_offset or (
            index + 1 < len(self._bases) and limit >= self._bases[index + 1]
        ):
            return segment.size
        located = segment.locate_batch(limit)
        return segment.size if located is None else located.position

    def read(
        self,
        offset: int,
        *,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_message: bool = True,
    ) -> ReadResult:
        """The log from the batch holding ``offset``, as :class:`FileRegion` objects (Fetch).

        Kafka's semantics: the regions start at the batch holding ``offset`` (or the first
        batch after it, past a compaction gap) and hold at most ``max_bytes``, so the last
        batch may be cut short (clients drop a partial trailing batch). With
        ``min_one_message`` a first batch larger than ``max_bytes`` comes whole (KIP-74);
        without it the result is then empty. ``max_offset`` (high watermark or last stable
        offset) is never passed: only bytes of batches entirely below it. A read goes on into
        later segments while their first batch fits. ``offset`` outside ``[log start, log
        end]`` raises OFFSET_OUT_OF_RANGE; at the log end (or at/after ``max_offset``) the
        result is empty.
        """
        pieces, next_offset = self._plan_read(offset, max_bytes, max_offset, min_one_message)
        regions: list[FileRegion] = []
        try:
            for piece in pieces:
                regions.append(piece.segment.region(piece.position, piece.length))
        except BaseException:
            for region in regions:
                region.close()
            raise
        return ReadResult(
            regions=tuple(regions),
            next_offset=next_offset,
            log_start_offset=self._log_start_offset,
            log_end_offset=self._next_offset,
        )

    def read_bytes(
        self,
        offset: int,
        *,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_message: bool = True,
    ) -> bytes:
        """The whole batches of what :meth:`read` would return, copied into memory.

        Unlike :meth:`read`, never a partial batch: the bytes end after the last whole one.
        """
        pieces, _ = self._plan_read(offset, max_bytes, max_offset, min_one_message)
        return b"".join(piece.segment.read(piece.position, piece.whole_length) for piece in pieces)

    # --- timestamps ------------------------------------------------------------------------

    def offset_for_timestamp(self, timestamp: int) -> OffsetTimestamp | None:
        """ListOffsets: the first record at or above the log start with a timestamp >= it.

        Also takes ListOffsets' special values: EARLIEST_TIMESTAMP (-2) and
        EARLIEST_LOCAL_TIMESTAMP (-4) give the log start offset, LATEST_TIMESTAMP (-1) the log
        end offset (all with timestamp -1), MAX_TIMESTAMP (-3) :meth:`offset_of_max_timestamp`;
        other negative values raise ValueError. None when no record qualifies.
        """
        self._check_open()
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return OffsetTimestamp(self._log_start_offset, NO_TIMESTAMP)
        if timestamp == LATEST_TIMESTAMP:
            return OffsetTimestamp(self._next_offset, NO_TIMESTAMP)
        if timestamp == MAX_TIMESTAMP:
            return self.offset_of_max_timestamp()
        if timestamp < 0:
            raise ValueError(f"unsupported special timestamp {timestamp}")
        start = self._log_start_offset
        for segment in self._segments:
            if segment.size == 0 or segment.next_offset <= start:
                continue
            if segment.max_timestamp >= timestamp:
                found = segment.find_offset_by_timestamp(timestamp, starting_offset=start)
                if found is not None:
                    return found
        return None

    def offset_of_max_timestamp(self) -> OffsetTimestamp | None:
        """The first record (at or above the log start) with the largest timestamp."""
        self._check_open()
        start = self._log_start_offset
        best: tuple[int, LogSegment] | None = None
        candidates = [s for s in self._segments if s.size and s.next_offset > start]
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
        # Rare: the largest batch timestamp belongs to no record (a batch compaction emptied,
        # or a producer's inconsistent header): compare every segment's exact answer.
        exact: OffsetTimestamp | None = None
        for segment in candidates:
            answer = segment.find_max_timestamp(starting_offset=start)
            if answer is not None and (exact is None or answer.timestamp > exact.timestamp):
                exact = answer
        return exact

    # --- truncation and log start ----------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch with a record at or above ``offset`` (replication's truncation).

        Batches are never split: when ``offset`` falls inside a batch, that whole batch goes
        and the log end offset becomes its base offset, which is what the data says and what a
        restart would find. The log start offset follows the log end down if needed. The
        change is fsynced, so a crash cannot bring the removed records back.
        """
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self._next_offset:
            return
        if offset < self._bases[0]:
            self.truncate_fully_and_start_at(offset)
            return
        keep = bisect.bisect_right(self._bases, offset)
        for segment in reversed(self._segments[keep:]):
            segment.delete()
        del self._segments[keep:]
        del self._bases[keep:]
        active = self._segments[-1]
        active.truncate_to(offset, now_ms=self._clock.now_ms())
        active.make_active(max_index_size=self._config.segment_index_bytes)
        active.flush()
        fsync_directory(self.directory)
        self._directory_dirty = False
        self._next_offset = active.next_offset
        self._recovery_point = min(self._recovery_point, self._next_offset)
        self._log_start_offset = min(self._log_start_offset, self._next_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start empty at ``offset`` (log start = log end = it)."""
        self._check_open()
        for segment in reversed(self._segments):
            segment.delete()
        segment = LogSegment.create(
            self.directory, offset, config=self._config, now_ms=self._clock.now_ms()
        )
        self._segments = [segment]
        self._bases = [offset]
        fsync_directory(self.directory)
        self._directory_dirty = False
        self._next_offset = self._log_start_offset = self._recovery_point = offset

    def advance_log_start_offset(self, offset: int, *, high_watermark: int | None = None) -> bool:
        """DeleteRecords: move the log start up to ``offset`` and delete segments below it.

        ``offset`` may not pass the high watermark (when given) nor the log end offset:
        OFFSET_OUT_OF_RANGE. Returns whether the start moved.
        """
        self._check_open()
        limit = (
            self._next_offset if high_watermark is None else min(high_watermark, self._next_offset)
        )
        if offset > limit:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"cannot move the log start of {self.directory.name} to {offset}, past "
                f"{limit} (high watermark / log end offset)",
            )
        if offset <= self._log_start_offset:
            return False
        self._log_start_offset = offset
        count = deletable_by_log_start(
            self._segments,
            log_start_offset=offset,
            log_end_offset=self._next_offset,
            high_watermark=limit,
        )
        if count:
            self._remove_oldest(count)
        return True

    # --- retention -------------------------------------------------------------------------

    def delete_old_segments(self, now_ms: int, high_watermark: int) -> int:
        """Apply retention (see :mod:`strom.storage.retention`); return the segments deleted.

        Nothing at or above ``high_watermark`` goes. If every segment is deletable the log
        first rolls a new empty active segment, as Kafka does. The log start offset moves up
        to the first remaining segment's base offset.
        """
        self._check_open()
        doomed = segments_to_delete(
            self._segments,
            config=self._config,
            now_ms=now_ms,
            log_start_offset=self._log_start_offset,
            log_end_offset=self._next_offset,
            high_watermark=high_watermark,
        )
        if not doomed:
            return 0
        if len(doomed) == len(self._segments):
            self._roll(self._next_offset)
        self._remove_oldest(len(doomed))
        return len(doomed)

    def _remove_oldest(self, count: int) -> None:
        doomed = self._segments[:count]
        del self._segments[:count]
        del self._bases[:count]
        self._log_start_offset = max(self._log_start_offset, self._bases[0])
        self._recovery_point = max(self._recovery_point, self._bases[0])
        for segment in doomed:
            segment.delete()
        self._directory_dirty = True

    # --- flush -----------------------------------------------------------------------------

    def flush(self, up_to: int | None = None) -> None:
        """fsync the segments holding ``[recovery point, up_to)`` and move the recovery point.

        ``up_to`` defaults to the log end offset.
        """
        self._check_open()
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
        config = self._config
        unflushed = self._next_offset - self._recovery_point
        if unflushed >= config.flush_messages or (
            config.flush_ms != LONG_MAX
            and self._clock.monotonic_ms() - self._last_flush_ms >= config.flush_ms
        ):
            self.flush()

    def maybe_flush(self) -> bool:
        """Flush if flush.messages or flush.ms says so (a periodic task calls this)."""
        self._check_open()
        if self._next_offset <= self._recovery_point:
            return False
        before = self._recovery_point
        self._maybe_flush_after_append()
        return self._recovery_point != before

    # --- compaction support ----------------------------------------------------------------

    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """An empty ``<base>.log.cleaned`` segment for the cleaner to fill with ``append``."""
        self._check_open()
        return LogSegment.create(
            self.directory,
            base_offset,
            config=self._config,
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
        self._check_open()
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
        """Flush everything, finish the active segment (final time index entry, trimmed
        indexes) and release all files. The log end offset becomes the recovery point."""
        if self._closed:
            return
        self.flush()
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

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.directory.name}, start={self._log_start_offset}, "
            f"end={self._next_offset}, segments={len(self._segments)})"
        )
