"""The log of one partition (Kafka's ``UnifiedLog``): a :class:`~strom.storage.local_log.LocalLog`
of segments plus everything that gives them meaning.

:class:`PartitionLog` owns the log start offset, the **high watermark**, the producer state,
the leader-epoch cache, the transaction index and markers, validation on append and the
retention decisions; the segment mechanics (append of validated bytes, roll, raw reads,
truncation, flush, cleaner swaps) are the local log's.

Invariants (``NOTES.md`` has the whole list): ``first segment's base offset <=
log_start_offset <= high_watermark <= log_end_offset``; ``recovery_point <= log_end_offset``
(everything below the recovery point is fsynced; it may lag the log start). Reads take a
:class:`~strom.storage.fetch_isolation.FetchIsolation` that says where they stop.

Plain logic and file I/O, no asyncio, not thread-safe: one owner (the event loop thread) calls
every method. See :mod:`strom.storage.file_region` for who closes what a read returns.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
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
from strom.storage.fetch_isolation import FetchIsolation
from strom.storage.leader_epoch_cache import EpochEndOffset, LeaderEpochCache, LeaderEpochFile
from strom.storage.loader import batches_from, load_log, load_state
from strom.storage.local_log import LocalLog, offset_out_of_range
from strom.storage.log_config import LogConfig
from strom.storage.log_results import AppendInfo, ReadResult, UnexpectedAppendOffsetError
from strom.storage.log_validator import needs_record_work, validate_records
from strom.storage.producer_snapshot import delete_snapshots_below, retain_latest_snapshots
from strom.storage.producer_state import AppendOrigin, ProducerStateManager
from strom.storage.retention import deletable_by_log_start, segments_to_delete
from strom.storage.segment import LogSegment, OffsetTimestamp
from strom.storage.txn_index import AbortedTxn
from strom.storage.txn_recovery import AbortedTxns

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AppendInfo",
    "FetchIsolation",
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
    """Append, read, look up, roll, truncate and retain one partition's log.

    Open with :meth:`open`; :class:`strom.storage.log_manager.LogManager` does it for a data
    directory and keeps the recovery point and log start offset checkpoints. The high
    watermark starts at the log start offset; its owner (the replica manager) sets it.
    """

    def __init__(
        self,
        local: LocalLog,
        *,
        log_start_offset: int,
        producer_state: ProducerStateManager | None = None,
        leader_epochs: LeaderEpochFile | None = None,
    ) -> None:
        """``producer_state`` and ``leader_epochs`` default to empty ones (a new log)."""
        self.directory = local.directory
        self._local = local
        self._log_start_offset = log_start_offset
        self._high_watermark = log_start_offset
        self._record_work = needs_record_work(local.config)
        self._producer_state = producer_state or ProducerStateManager(
            name=local.directory.name, map_end_offset=local.log_end_offset
        )
        self._epochs = leader_epochs or LeaderEpochFile(local.directory)

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
        """Load (or create) the partition directory; recover it unless shut down cleanly, and
        load the producer state and leader epochs to agree with it (:mod:`strom.storage.loader`).

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
        state = load_state(
            directory, loaded, now_ms=clock.now_ms(), had_clean_shutdown=had_clean_shutdown
        )
        local = LocalLog(
            directory,
            config=config,
            clock=clock,
            segments=loaded.segments,
            recovery_point=loaded.recovery_point,
        )
        return cls(
            local,
            log_start_offset=loaded.log_start_offset,
            producer_state=state.producer_state,
            leader_epochs=state.leader_epochs,
        )

    # --- state -----------------------------------------------------------------------------

    @property
    def config(self) -> LogConfig:
        return self._local.config

    def update_config(self, config: LogConfig) -> None:
        """New settings apply from the next append, roll, flush or retention run."""
        self._local.config = config
        self._record_work = needs_record_work(config)

    @property
    def clock(self) -> Clock:
        return self._local.clock

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._local.log_end_offset

    @property
    def recovery_point(self) -> int:
        """Everything below it is fsynced; recovery after a crash starts from its segment."""
        return self._local.recovery_point

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return self._local.segments

    @property
    def active_segment(self) -> LogSegment:
        return self._local.active_segment

    @property
    def size(self) -> int:
        """Bytes in all segments."""
        return self._local.size

    @property
    def closed(self) -> bool:
        """Closed (or deleted): its files are released."""
        return self._local.closed

    def _check_open(self) -> None:
        self._local.check_open()

    @property
    def leader_epochs(self) -> LeaderEpochCache:
        """Which leader epoch wrote from which offset (read it; only this log changes it)."""
        return self._epochs.cache

    def start_leader_epoch(self, epoch: int) -> None:
        """This log's replica leads from ``epoch`` on: the epoch starts at the log end."""
        self._epochs.assign(epoch, self.log_end_offset)

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset:
        """OffsetForLeaderEpoch: the largest epoch at most ``epoch`` and where it ended."""
        return self._epochs.cache.end_offset_for(epoch, self.log_end_offset)

    @property
    def producer_state(self) -> ProducerStateManager:
        """The idempotent producers' state (read it; only this log changes it)."""
        self._producer_state.update_map_end_offset(self.log_end_offset)
        return self._producer_state

    # --- high watermark and isolation ------------------------------------------------------

    @property
    def high_watermark(self) -> int:
        """The offset below which every in-sync replica has the log: consumers read below it.
        Always in ``[log start offset, log end offset]``."""
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark to ``offset`` clamped to ``[log start, log end]`` (Kafka's
        ``updateHighWatermark``: a checkpoint read back, a follower taking its leader's); the
        new high watermark."""
        self._high_watermark = min(max(offset, self._log_start_offset), self.log_end_offset)
        return self._high_watermark

    def maybe_increment_high_watermark(self, offset: int) -> bool:
        """Move the high watermark up to ``offset`` (a leader's, from its in-sync replicas);
        never down. Whether it moved. ValueError past the log end offset."""
        if offset > self.log_end_offset:
            raise ValueError(
                f"high watermark {offset} of {self.directory.name} is past the log end offset "
                f"{self.log_end_offset}"
            )
        if offset <= self._high_watermark:
            return False
        self._high_watermark = offset
        return True

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest ongoing transaction, None without any."""
        return self._producer_state.first_undecided_offset()

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest undecided transaction, at most the high watermark:
        read_committed consumers read below it."""
        unstable = self._producer_state.first_undecided_offset()
        if unstable is None:
            return self._high_watermark
        return min(unstable, self._high_watermark)

    def fetchable_offset(self, isolation: FetchIsolation) -> int:
        """Where a read with ``isolation`` stops: the log end offset, the high watermark or the
        last stable offset."""
        if isolation is FetchIsolation.HIGH_WATERMARK:
            return self._high_watermark
        if isolation is FetchIsolation.TXN_COMMITTED:
            return self.last_stable_offset
        return self.log_end_offset

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
        config = self._local.config
        buffer = bytearray(records)
        if self._record_work:
            buffer = validate_records(buffer, config=config, partition=self.directory.name)
        log_append_time = self.clock.now_ms() if config.log_append_time else NO_TIMESTAMP
        batches = assign_offsets(
            buffer,
            base_offset=self._local.log_end_offset,
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
        if first < self._local.log_end_offset:
            raise UnexpectedAppendOffsetError(
                f"{self.directory.name}: follower batches start at {first}, below the log end "
                f"offset {self._local.log_end_offset}",
                first_offset=first,
                log_end_offset=self._local.log_end_offset,
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
        offset, last stable offset after it)`` to the active segment's ``.txnindex``, as every
        append of a marker does, a follower's too. A marker
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
        marker = build_control_batch(
            ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp=self.clock.now_ms(),
            partition_leader_epoch=leader_epoch,
        )
        info = self.append(marker, leader_epoch=leader_epoch, origin=AppendOrigin.COORDINATOR)
        state.record_coordinator_epoch(producer_id, coordinator_epoch)
        return info

    def collect_aborted_txns(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping ``[fetch_offset, upper_bound)``, from the
        ``.txnindex`` of the segment holding ``fetch_offset`` and the later ones until one
        says no later segment can add any (Kafka's ``collectAbortedTransactions``)."""
        self._check_open()
        found: list[AbortedTxn] = []
        for segment in self._local.segments_from(fetch_offset):
            txns, complete = segment.txn_index.collect(fetch_offset, upper_bound)
            found.extend(txns)
            if complete:
                break
        return found

    def _check_size(self, size: int) -> None:
        if size > self._local.config.segment_bytes:
            raise KafkaError(
                ErrorCode.record_list_too_large,
                f"{size} bytes of batches exceed segment.bytes {self._local.config.segment_bytes}",
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
        positions: list[int] = []
        position = 0
        for batch in batches:
            headers.append(BatchHeader.read(data, position))
            positions.append(position)
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
        tracker = AbortedTxns(state.ongoing_transactions())
        aborted = [
            entry
            for start, header in zip(positions, headers, strict=True)
            if (entry := tracker.see(header, _slice_of(data, start, header.size))) is not None
        ]
        info = self._write_batches(data, batches, log_append_time=log_append_time)
        state.commit(plan, headers, now_ms=self.clock.now_ms())
        for entry in aborted:  # the batches went to the active segment, markers included
            self._local.active_segment.txn_index.append(entry)
        return info

    def _write_batches(
        self, data: bytes | bytearray, batches: Sequence[BatchSummary], *, log_append_time: int
    ) -> AppendInfo:
        first_offset = batches[0][0]
        last_base_offset, _, last_offset_delta, max_timestamp = batches[-1]
        last_offset = last_base_offset + last_offset_delta
        if len(batches) > 1:
            max_timestamp = max(batch[3] for batch in batches)
        local = self._local
        if local.should_roll(size=len(data), max_timestamp=max_timestamp, last_offset=last_offset):
            self._roll(first_offset)
        local.append(data, batches)
        self._record_epochs(data, batches)
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
        return self._local.roll_jitter_ms(base_offset)

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (nothing if the active is empty)."""
        self._check_open()
        self._roll(self.log_end_offset)
        return self._local.active_segment

    def _roll(self, base_offset: int) -> None:
        """A new active segment at ``base_offset`` (fsyncing the previous ones), then a
        producer state snapshot there."""
        if not self._local.roll(base_offset):
            return
        self._raise_log_start(self._local.first_base_offset)
        self._snapshot_producer_state()

    def _snapshot_producer_state(self) -> None:
        """``<log end>.snapshot`` (a roll's new base offset, or a clean close), keeping the
        newest few: a restart replays only the batches after the last one."""
        state = self._producer_state
        state.update_map_end_offset(self.log_end_offset)
        if state.take_snapshot(self.directory) is not None:
            retain_latest_snapshots(self.directory, _SNAPSHOTS_KEPT)

    # --- read ------------------------------------------------------------------------------

    def _max_offset(self, offset: int, isolation: FetchIsolation) -> int:
        """The read limit of ``isolation``; OFFSET_OUT_OF_RANGE for an ``offset`` outside
        ``[log start, log end]``."""
        self._check_open()
        if offset < self._log_start_offset or offset > self.log_end_offset:
            raise offset_out_of_range(
                offset, self._log_start_offset, self.log_end_offset, self.directory.name
            )
        return self.fetchable_offset(isolation)

    def read(
        self,
        offset: int,
        *,
        max_bytes: int,
        isolation: FetchIsolation = FetchIsolation.LOG_END,
        min_one_message: bool = True,
    ) -> ReadResult:
        """The log from the batch holding ``offset``, as :class:`FileRegion` objects (Fetch).

        Kafka's semantics: the regions start at the batch holding ``offset`` (or the first
        batch after it, past a compaction gap) and hold at most ``max_bytes``; they end after
        the last whole batch that fits (Kafka's may end inside the next one, which clients
        drop). With
        ``min_one_message`` a first batch larger than ``max_bytes`` comes whole (KIP-74);
        without it the result is then empty. The offset ``isolation`` gives (log end, high
        watermark or last stable offset) is never passed: only bytes of batches entirely
        below it. A read goes on into later segments while their first batch fits. ``offset``
        outside ``[log start, log end]`` raises OFFSET_OUT_OF_RANGE; at the log end (or
        at/after the isolation's offset) the result is empty.
        """
        max_offset = self._max_offset(offset, isolation)
        regions, next_offset = self._local.read(
            offset, max_bytes=max_bytes, max_offset=max_offset, min_one_message=min_one_message
        )
        return ReadResult(
            regions=regions,
            next_offset=next_offset,
            log_start_offset=self._log_start_offset,
            log_end_offset=self.log_end_offset,
        )

    def readable_bytes(self, offset: int, *, max_bytes: int, isolation: FetchIsolation) -> int:
        """How many bytes :meth:`read` would return (a waiting fetch's estimate)."""
        max_offset = self._max_offset(offset, isolation)
        return self._local.readable_bytes(offset, max_bytes=max_bytes, max_offset=max_offset)

    def read_bytes(
        self,
        offset: int,
        *,
        max_bytes: int,
        isolation: FetchIsolation = FetchIsolation.LOG_END,
        min_one_message: bool = True,
    ) -> bytes:
        """The bytes :meth:`read` would return, copied into memory."""
        max_offset = self._max_offset(offset, isolation)
        return self._local.read_bytes(
            offset, max_bytes=max_bytes, max_offset=max_offset, min_one_message=min_one_message
        )

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
            return OffsetTimestamp(self.log_end_offset, NO_TIMESTAMP)
        if timestamp == MAX_TIMESTAMP:
            return self.offset_of_max_timestamp()
        if timestamp < 0:
            raise ValueError(f"unsupported special timestamp {timestamp}")
        return self._local.offset_for_timestamp(timestamp, from_offset=self._log_start_offset)

    def offset_of_max_timestamp(self) -> OffsetTimestamp | None:
        """The first record (at or above the log start) with the largest timestamp."""
        return self._local.offset_of_max_timestamp(from_offset=self._log_start_offset)

    # --- truncation and log start ----------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch with a record at or above ``offset`` (replication's truncation).

        Batches are never split: when ``offset`` falls inside a batch, that whole batch goes
        and the log end offset becomes its base offset, which is what the data says and what a
        restart would find. The log start offset and the high watermark follow the log end
        down if needed. The change is fsynced, so a crash cannot bring the removed records
        back.
        """
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        local = self._local
        if offset >= local.log_end_offset:
            # Nothing to cut, but an epoch this replica began as leader and never appended to
            # starts at the log end: kept, it would be the follower's last fetched epoch, which
            # the new leader never had, and every fetch would diverge again (Kafka's
            # truncateTo trims the epoch cache here too).
            self._epochs.truncate_from_end(local.log_end_offset)
            return
        if offset < local.first_base_offset:
            self.truncate_fully_and_start_at(offset)
            return
        local.truncate_to(offset)
        end = local.log_end_offset
        self._log_start_offset = min(self._log_start_offset, end)
        self._high_watermark = min(self._high_watermark, end)
        self._epochs.truncate_from_end(end)
        state = self._producer_state
        if end >= state.map_end_offset:
            # Nothing with a producer id was cut: the state is already the truncated log's.
            state.update_map_end_offset(end)
        state.truncate_and_reload(
            self.directory,
            log_start_offset=self._log_start_offset,
            log_end_offset=end,
            batches_from=lambda start: batches_from(local.segments, start),
            now_ms=local.clock.now_ms(),
        )

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start empty at ``offset`` (log start = high watermark =
        log end = it)."""
        self._check_open()
        self._local.truncate_fully_and_start_at(offset)
        self._producer_state.truncate_fully_and_start_at(self.directory, offset)
        self._log_start_offset = self._high_watermark = offset
        self._epochs.clear()

    def advance_log_start_offset(self, offset: int, *, within_high_watermark: bool = False) -> bool:
        """DeleteRecords: move the log start up to ``offset`` and delete segments below it.

        ``offset`` may not pass the log end offset, nor the high watermark when
        ``within_high_watermark`` (a client's DeleteRecords): OFFSET_OUT_OF_RANGE. The high
        watermark rises with the start. Returns whether the start moved.
        """
        self._check_open()
        limit = self._high_watermark if within_high_watermark else self.log_end_offset
        if offset > limit:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"cannot move the log start of {self.directory.name} to {offset}, past "
                f"{limit} (high watermark / log end offset)",
            )
        if offset <= self._log_start_offset:
            return False
        self._raise_log_start(offset)
        self._epochs.truncate_from_start(offset)
        count = deletable_by_log_start(
            self._local.segments,
            log_start_offset=offset,
            log_end_offset=self.log_end_offset,
            high_watermark=limit,
        )
        if count:
            self._remove_oldest(count)
        return True

    def _raise_log_start(self, offset: int) -> None:
        """The log start moves up to ``offset`` (if above), and the high watermark with it."""
        self._log_start_offset = max(self._log_start_offset, offset)
        self._high_watermark = max(self._high_watermark, self._log_start_offset)

    # --- retention -------------------------------------------------------------------------

    def delete_old_segments(self, now_ms: int, high_watermark: int) -> int:
        """Apply retention (see :mod:`strom.storage.retention`); return the segments deleted.

        Nothing at or above ``high_watermark`` goes. If every segment is deletable the log
        first rolls a new empty active segment, as Kafka does. The log start offset moves up
        to the first remaining segment's base offset.
        """
        self._check_open()
        segments = self._local.segments
        doomed = segments_to_delete(
            segments,
            config=self._local.config,
            now_ms=now_ms,
            log_start_offset=self._log_start_offset,
            log_end_offset=self.log_end_offset,
            high_watermark=high_watermark,
        )
        if not doomed:
            return 0
        if len(doomed) == len(segments):
            self._roll(self.log_end_offset)
        self._remove_oldest(len(doomed))
        return len(doomed)

    def _remove_oldest(self, count: int) -> None:
        local = self._local
        local.remove_oldest(count)
        first = local.first_base_offset
        self._raise_log_start(first)
        self._epochs.truncate_from_start(self._log_start_offset)
        # Their snapshots go with them, as Kafka's: a replay from one would need them.
        delete_snapshots_below(self.directory, first)

    # --- flush -----------------------------------------------------------------------------

    def flush(self, up_to: int | None = None) -> None:
        """fsync the segments holding ``[recovery point, up_to)`` and move the recovery point.

        ``up_to`` defaults to the log end offset.
        """
        self._local.flush(up_to)

    def maybe_flush(self) -> bool:
        """Flush if flush.messages or flush.ms says so (a periodic task calls this)."""
        return self._local.maybe_flush()

    # --- compaction support ----------------------------------------------------------------

    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """An empty ``<base>.log.cleaned`` segment for the cleaner to fill with ``append``."""
        return self._local.new_cleaned_segment(base_offset)

    def replace_segments(self, new: LogSegment, old: Sequence[LogSegment]) -> None:
        """Swap a cleaned segment in for consecutive inactive segments, crash-safely (see
        :meth:`strom.storage.local_log.LocalLog.replace_segments`)."""
        self._local.replace_segments(new, old)

    # --- life cycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Flush everything, snapshot the producer state at the log end, finish the active
        segment (final time index entry, trimmed indexes) and release all files. The log end
        offset becomes the recovery point."""
        if self.closed:
            return
        self._local.flush()
        self._snapshot_producer_state()
        self._local.close()

    def close_without_flush(self) -> None:
        """Release the files as a crash would leave them (no fsync, nothing trimmed)."""
        self._local.close_without_flush()

    def delete(self) -> None:
        """Remove the whole partition directory."""
        self._local.delete()

    def remove_expired_producers(self, now_ms: int, *, expiration_ms: int) -> list[int]:
        """Forget producers idle for ``expiration_ms`` (``producer.id.expiration.ms``); their
        ids. Their next batch starts them afresh at any sequence (KIP-360)."""
        self._check_open()
        return self._producer_state.remove_expired(now_ms, expiration_ms=expiration_ms)

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.directory.name}, start={self._log_start_offset}, "
            f"hw={self._high_watermark}, end={self.log_end_offset}, "
            f"segments={len(self._local.segments)})"
        )


def _slice_of(data: bytes | bytearray, start: int, size: int) -> Callable[[], memoryview]:
    """The bytes of one batch of ``data``, when asked for."""
    return lambda: memoryview(data)[start : start + size]
