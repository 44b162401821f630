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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

from strom.common import Clock, ErrorCode, KafkaError
from strom.protocol.batch import (
    CONTROL_FLAG,
    NO_TIMESTAMP,
    BatchHeader,
    BatchSummary,
    assign_offsets,
    summarize_batches,
)
from strom.protocol.records import ControlRecordType, build_control_batch
from strom.storage._files import fsync_directory
from strom.storage.file_region import FileRegion
from strom.storage.leader_epoch_cache import EpochEndOffset, LeaderEpochCache, LeaderEpochFile
from strom.storage.loader import load_log
from strom.storage.log_config import LONG_MAX, LogConfig
from strom.storage.log_reads import (
    ReadPiece,
    first_offset_by_timestamp,
    offset_of_max_timestamp,
    plan_read,
)
from strom.storage.log_results import AppendInfo, ReadResult, UnexpectedAppendOffsetError
from strom.storage.log_validator import needs_record_work, validate_records
from strom.storage.producer_snapshot import delete_snapshots_below, retain_latest_snapshots
from strom.storage.producer_state import AppendOrigin, ProducerStateManager
from strom.storage.retention import deletable_by_log_start, segments_to_delete
from strom.storage.segment import (
    CLEANED_SUFFIX,
    SWAP_SUFFIX,
    LogSegment,
    OffsetTimestamp,
)
from strom.storage.txn_index import AbortedTxn
from strom.storage.txn_recovery import rebuild_txn_indexes

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
_SNAPSHOTS_KEPT: Final = 3
"""Producer state snapshots kept (the newest, from the last rolls and the last close)."""
_LEADER_EPOCH: Final = 12
_ATTRIBUTES_LOW: Final = 22
_PRODUCER_ID: Final = 43


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
        producer_state: ProducerStateManager | None = None,
        leader_epochs: LeaderEpochFile | None = None,
    ) -> None:
        """``producer_state`` and ``leader_epochs`` default to empty ones (a new log)."""
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
        self._record_work = needs_record_work(config)
        self._producer_state = producer_state or ProducerStateManager(
            name=directory.name, map_end_offset=self._next_offset
        )
        self._epochs = leader_epochs or LeaderEpochFile(directory)

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
        The producer state comes from the latest snapshot at or below the log end, with the
        batches after it replayed (none after a clean shutdown, which left one at the end;
        a clean log without any snapshot predates them and is not scanned).
        """
        loaded = load_log(
            directory,
            config=config,
            now_ms=clock.now_ms(),
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
        )
        state = ProducerStateManager.load(
            directory,
            log_start_offset=loaded.log_start_offset,
            log_end_offset=loaded.log_end_offset,
            batches_from=lambda offset: _batches_from(loaded.segments, offset),
            now_ms=clock.now_ms(),
            had_clean_shutdown=had_clean_shutdown,
        )
        rebuild_txn_indexes(
            directory,
            loaded.segments,
            loaded.recovered,
            log_start_offset=loaded.log_start_offset,
        )
        epochs = LeaderEpochFile.load(
            directory,
            log_start_offset=loaded.log_start_offset,
            log_end_offset=loaded.log_end_offset,
            batch_epochs=lambda: (
                (header.base_offset, header.partition_leader_epoch)
                for segment in loaded.segments
                for _, header in segment.batches()
            ),
        )
        return cls(
            directory,
            config=config,
            clock=clock,
            segments=loaded.segments,
            log_start_offset=loaded.log_start_offset,
            recovery_point=loaded.recovery_point,
            producer_state=state,
            leader_epochs=epochs,
        )

    # --- state -----------------------------------------------------------------------------

    @property
    def config(self) -> LogConfig:
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """New settings apply from the next append, roll, flush or retention run."""
        self._config = config
        self._record_work = needs_record_work(config)

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
    def leader_epochs(self) -> LeaderEpochCache:
        """Which leader epoch wrote from which offset (read it; only this log changes it)."""
        return self._epochs.cache

    def start_leader_epoch(self, epoch: int) -> None:
        """This log's replica leads from ``epoch`` on: the epoch starts at the log end."""
        self._epochs.assign(epoch, self._next_offset)

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset:
        """OffsetForLeaderEpoch: the largest epoch at most ``epoch`` and where it ended."""
        return self._epochs.cache.end_offset_for(epoch, self._next_offset)

    @property
    def recovery_point(self) -> int:
        """Everything below it is fsynced; recovery after a crash starts from its segment."""
        return self._recovery_point

    @property
    def producer_state(self) -> ProducerStateManager:
        """The idempotent producers' state (read it; only this log changes it)."""
        self._producer_state.update_map_end_offset(self._next_offset)
        return self._producer_state

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest ongoing transaction, None without any; the last
        stable offset is the smaller of it and the high watermark."""
        return self._producer_state.first_undecided_offset()

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
        self,
        records: bytes | bytearray | memoryview,
        *,
        leader_epoch: int = 0,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> AppendInfo:
        """Validate a producer's batches, assign offsets from the log end, write them.

        The records are copied once; in that copy every batch is validated (magic, lengths,
        CRC, counts, max.message.bytes) and its header gets its base offset and leader epoch
        (outside the CRC) and, for LogAppendTime, the broker time (and a new CRC), in one pass
        (``protocol.batch.assign_offsets``). Compacted topics and a broker-side codec first
        need the records (:mod:`strom.storage.log_validator`). Batches with a producer id (or
        control batches) then pass the producer state's checks (``origin`` says which); a
        retry of one of a producer's last five batches is not written again: the answer is
        the original's offsets (``AppendInfo.size`` 0). Nothing is written before every batch
        passed, so a bad one raises its specific KafkaError and leaves the log unchanged.
        """
        self._check_open()
        config = self._config
        buffer = bytearray(records)
        if self._record_work:
            buffer = validate_records(buffer, config=config, partition=self.directory.name)
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
        return self._append_batches(buffer, batches, log_append_time=log_append_time, origin=origin)

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
        return self._append_batches(
            written, batches, log_append_time=NO_TIMESTAMP, origin=AppendOrigin.REPLICATION
        )

    def append_txn_marker(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        leader_epoch: int = 0,
    ) -> AppendInfo:
        """Append a COMMIT or ABORT marker (a control batch, coordinator origin) ending
        ``producer_id``'s transaction in this partition.

        Raises KafkaError INVALID_PRODUCER_EPOCH for an older producer epoch and
        TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch than the producer's last
        marker's. An ABORT of an ongoing transaction adds ``(producer id, first offset, marker
        offset, last stable offset after it)`` to the active segment's ``.txnindex``. A marker
        for a producer without an ongoing transaction here is written too (Kafka does), and
        indexes nothing.
        """
        self._check_open()
        state = self._producer_state
        state.check_txn_marker(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
        )
        first_offset = state.ongoing_transactions().get(producer_id)
        marker = build_control_batch(
            ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp=self._clock.now_ms(),
            partition_leader_epoch=leader_epoch,
        )
        info = self.append(marker, leader_epoch=leader_epoch, origin=AppendOrigin.COORDINATOR)
        state.record_coordinator_epoch(producer_id, coordinator_epoch)
        if not commit and first_offset is not None:
            stable = state.first_undecided_offset()
            self._segments[-1].txn_index.append(
                AbortedTxn(
                    producer_id,
                    first_offset,
                    info.last_offset,
                    info.last_offset + 1 if stable is None else stable,
                )
            )
        return info

    def collect_aborted_txns(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping ``[fetch_offset, upper_bound)``, from the
        ``.txnindex`` of the segment holding ``fetch_offset`` and the later ones until one
        says no later segment can add any (Kafka's ``collectAbortedTransactions``)."""
        self._check_open()
        found: list[AbortedTxn] = []
        first = max(bisect.bisect_right(self._bases, fetch_offset) - 1, 0)
        for segment in self._segments[first:]:
            txns, complete = segment.txn_index.collect(fetch_offset, upper_bound)
            found.extend(txns)
            if complete:
                break
        return found

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
        origin: AppendOrigin,
    ) -> AppendInfo:
        """Write validated batches, through the producer state when one of them has a producer
        id or is a control batch (two header bytes per batch tell; no header is decoded)."""
        position = 0
        for batch in batches:
            if (
                data[position + _PRODUCER_ID] < 0x80
                or data[position + _ATTRIBUTES_LOW] & CONTROL_FLAG
            ):
                return self._append_with_producer_state(data, batches, log_append_time, origin)
            position += batch[1]
        return self._write_batches(data, batches, log_append_time=log_append_time)

    def _append_with_producer_state(
        self,
        data: bytes | bytearray,
        batches: Sequence[BatchSummary],
        log_append_time: int,
        origin: AppendOrigin,
    ) -> AppendInfo:
        headers: list[BatchHeader] = []
        position = 0
        for batch in batches:
            headers.append(BatchHeader.read(data, position))
            position += batch[1]
        state = self._producer_state
        plan = state.prepare(headers, origin=origin)
        duplicate = plan.duplicate
        if duplicate is not None:
            return AppendInfo(
                base_offset=duplicate.base_offset,
                last_offset=duplicate.last_offset,
                log_append_time=NO_TIMESTAMP
                if log_append_time == NO_TIMESTAMP
                else duplicate.max_timestamp,
                max_timestamp=duplicate.max_timestamp,
                log_start_offset=self._log_start_offset,
                written=b"",
            )
        info = self._write_batches(data, batches, log_append_time=log_append_time)
        state.commit(plan, headers, now_ms=self._clock.now_ms())
        return info

    def _write_batches(
        self, data: bytes | bytearray, batches: Sequence[BatchSummary], *, log_append_time: int
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
        self._record_epochs(data, batches)
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

    def _record_epochs(self, data: bytes | bytearray, batches: Sequence[BatchSummary]) -> None:
        """A batch stamped with a newer leader epoch than the latest starts that epoch (one
        four-byte read per batch)."""
        latest = self._epochs.cache.latest_epoch
        position = 0
        for base_offset, size, _, _ in batches:
            epoch = int.from_bytes(data[position + _LEADER_EPOCH : position + _LEADER_EPOCH + 4])
            if epoch != latest and epoch < 0x80000000:
                self._epochs.assign(epoch, base_offset)
                latest = epoch
            position += size

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
        self._snapshot_producer_state()
        return segment

    def _snapshot_producer_state(self) -> None:
        """``<log end>.snapshot`` (a roll's new base offset, or a clean close), keeping the
        newest few: a restart replays only the batches after the last one."""
        state = self._producer_state
        state.update_map_end_offset(self._next_offset)
        if state.take_snapshot(self.directory) is not None:
            retain_latest_snapshots(self.directory, _SNAPSHOTS_KEPT)

    # --- read ------------------------------------------------------------------------------

    def _plan_read(
        self, offset: int, max_bytes: int, max_offset: int | None, min_one_message: bool
    ) -> tuple[list[ReadPiece], int]:
        self._check_open()
        if offset < self._log_start_offset or offset > self._next_offset:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"offset {offset} is out of range [{self._log_start_offset}, "
                f"{self._next_offset}] of {self.directory.name}",
            )
        limit = self._next_offset if max_offset is None else min(max_offset, self._next_offset)
        return plan_read(
            self._segments,
            self._bases,
            offset,
            max_bytes=max_bytes,
            limit=limit,
            log_end_offset=self._next_offset,
            min_one_message=min_one_message,
        )

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

    def readable_bytes(self, offset: int, *, max_bytes: int, max_offset: int) -> int:
        """How many bytes :meth:`read` would return (a waiting fetch's estimate)."""
        pieces, _ = self._plan_read(offset, max_bytes, max_offset, True)
        return sum(piece.length for piece in pieces)

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
        return first_offset_by_timestamp(
            self._segments, timestamp, log_start_offset=self._log_start_offset
        )

    def offset_of_max_timestamp(self) -> OffsetTimestamp | None:
        """The first record (at or above the log start) with the largest timestamp."""
        self._check_open()
        return offset_of_max_timestamp(self._segments, log_start_offset=self._log_start_offset)

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
        self._epochs.truncate_from_end(self._next_offset)
        state = self._producer_state
        if self._next_offset >= state.map_end_offset:
            # Nothing with a producer id was cut: the state is already the truncated log's.
            state.update_map_end_offset(self._next_offset)
        state.truncate_and_reload(
            self.directory,
            log_start_offset=self._log_start_offset,
            log_end_offset=self._next_offset,
            batches_from=lambda start: _batches_from(self._segments, start),
            now_ms=self._clock.now_ms(),
        )

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
        self._producer_state.truncate_fully_and_start_at(self.directory, offset)
        fsync_directory(self.directory)
        self._directory_dirty = False
        self._next_offset = self._log_start_offset = self._recovery_point = offset
        self._epochs.clear()

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
        self._epochs.truncate_from_start(offset)
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
        self._epochs.truncate_from_start(self._log_start_offset)
        self._recovery_point = max(self._recovery_point, self._bases[0])
        for segment in doomed:
            segment.delete()
        # Their snapshots go with them, as Kafka's: a replay from one would need them.
        delete_snapshots_below(self.directory, self._bases[0])
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
        indexes), snapshot the producer state at the log end and release all files. The log
        end offset becomes the recovery point."""
        if self._closed:
            return
        self.flush()
        self._snapshot_producer_state()
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

    def remove_expired_producers(self, now_ms: int, *, expiration_ms: int) -> list[int]:
        """Forget producers idle for ``expiration_ms`` (``producer.id.expiration.ms``); their
        ids. Their next batch starts them afresh at any sequence (KIP-360)."""
        self._check_open()
        return self._producer_state.remove_expired(now_ms, expiration_ms=expiration_ms)

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.directory.name}, start={self._log_start_offset}, "
            f"end={self._next_offset}, segments={len(self._segments)})"
        )


def _batches_from(segments: Sequence[LogSegment], offset: int) -> Iterator[BatchHeader]:
    """The batch headers of the segments holding ``offset`` and after (the producer state's
    ``batches_from``: it skips those ending below ``offset``)."""
    first = max(bisect.bisect_right([s.base_offset for s in segments], offset) - 1, 0)
    for segment in segments[first:]:
        for _, header in segment.batches():
            yield header
