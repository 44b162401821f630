"""A hypothesis state machine that drives one PartitionLog against a simple in-memory model.

Rules: append (1..n records per batch, 1..3 batches, every codec, keys from a small pool,
tombstones; idempotent batches sent twice, stored once), follower appends (offsets given,
gaps, holes), corrupt appends (refused, nothing changes), reads (bytes and file regions, byte
limits, KIP-74, high watermark), timestamp lookups (and ListOffsets' special values),
truncation, DeleteRecords, retention by time, size and log start, rolls, flushes, topic config
changes, compaction (below), clean restarts, and
crashes (torn batch, garbage, zeros, bad CRC, reused offsets, lost or ragged index files,
stale recovery point). After every step the invariants compare every batch and record on disk
with the model, check each segment's bookkeeping and both indexes, and read the whole log
(and sampled offsets) back through the read path.

The model is a list of batches (``ModelBatch``: offsets, records, size, codec...) plus the log
start and end offsets. Batches rather than records, because storage never splits a batch
(truncation drops the whole batch holding the offset, reads start at the batch holding the
offset), and the model mirrors that. It keeps every batch still *on disk*, also those below
the log start offset: invisible to readers, but truncation can make the log end fall among
them. Where storage's answer depends on the segment layout (which segment a truncation lands
in, how far a read goes, which segments retention deletes), the rule takes the segment base
offsets from the log and checks the rest.

Compaction, two ways: ``compact_segments`` plays a cleaner with storage's cleaner API
(``new_cleaned_segment``, ``replace_segments``), leaving gaps and empty batches and maybe
crashing after the ``.cleaned`` segment is written or after it was renamed ``.swap``;
``run_cleaner`` runs :class:`strom.storage.cleaner.LogCleaner` and adopts what it left once
``check_compaction_contract`` accepts it.

A second, smaller machine (``TransactionalLogMachine``) drives transactions: plain and
transactional appends, COMMIT/ABORT markers, rolls, truncation, restarts and crashes (a lost
or torn ``.txnindex``), and checks the first unstable offset, every ``.txnindex`` and the
aborted transactions a fetch collects against a replay of the batches.

Settings keep the default run near 10-15 s on two cores; to dig deeper, run the machine with
more examples (e.g. ``settings(max_examples=500, stateful_step_count=60)``).
"""

from __future__ import annotations

import enum
import functools
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from strom.common import ErrorCode, KafkaError
from strom.common.clock import ManualClock
from strom.protocol.batch import (
    DELETE_HORIZON_FLAG,
    NO_TIMESTAMP,
    BatchHeader,
    Compression,
    TimestampType,
    rewrite_crc,
)
from strom.protocol.records import Record, build_batch, iter_records
from strom.storage._files import fsync_directory
from strom.storage.cleaner import DEFAULT_IO_BUFFER_BYTES, CleanStats, LogCleaner
from strom.storage.fetch_isolation import FetchIsolation
from strom.storage.log_config import CREATE_TIME, LOG_APPEND_TIME, LONG_MAX, LogConfig
from strom.storage.offset_map import DEFAULT_MAX_ENTRIES
from strom.storage.partition_log import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    PartitionLog,
    UnexpectedAppendOffsetError,
)
from strom.storage.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    segment_file_name,
)
from strom.storage.txn_index import AbortedTxn

from .batches import headers_of, without_offset_and_epoch
from .scratch import scratch_directory

KEYS = (b"k0", b"k1", b"k2", b"k3", b"k4")
"""A small key pool, so compaction always has older values to remove."""

READ_ALL = 1 << 30


# --- the model ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelBatch:
    """A batch as the log should hold it. ``records`` may have gaps or be empty (compaction)."""

    base: int
    last: int
    max_timestamp: int
    records: tuple[Record, ...]
    codec: Compression
    size: int
    append_time: bool = False
    """LogAppendTime (the broker's time in maxTimestamp is every record's timestamp)."""
    delete_horizon: int | None = None
    """The cleaner's delete horizon stamp (KIP-534), for batches holding tombstones."""

    @property
    def next(self) -> int:
        return self.last + 1

    @classmethod
    def from_disk(cls, header: BatchHeader, data: bytes) -> ModelBatch:
        return cls(
            base=header.base_offset,
            last=header.last_offset,
            max_timestamp=header.max_timestamp,
            records=tuple(iter_records(data)),
            codec=header.compression,
            size=header.size,
            append_time=header.timestamp_type == TimestampType.LOG_APPEND_TIME,
            delete_horizon=(
                header.base_timestamp if header.attributes & DELETE_HORIZON_FLAG else None
            ),
        )

    def build(self) -> bytes:
        """The batch's bytes (as a cleaner writes it: offsets, timestamps and codec kept)."""
        return build_batch(
            self.records,
            base_offset=self.base,
            last_offset_delta=self.last - self.base,
            compression=self.codec,
            timestamp_type=(
                TimestampType.LOG_APPEND_TIME if self.append_time else TimestampType.CREATE_TIME
            ),
            delete_horizon_ms=self.delete_horizon if self.records else None,
            max_timestamp=self.max_timestamp,
        )


@dataclass(slots=True)
class Model:
    batches: list[ModelBatch] = field(default_factory=list)
    """Every batch on disk, in offset order (also those below the log start offset)."""
    log_start: int = 0
    log_end: int = 0
    high_watermark: int = 0
    """Follows the log start up and the log end down (a new log object starts at the start)."""
    deleted_below: int = 0
    """The highest log start offset since the log end last fell below it: the records under it
    were deleted (DeleteRecords, retention), even when a stale log start checkpoint brought
    them back into view after a crash, as in Kafka."""

    def move_log_start(self, offset: int) -> None:
        self.log_start = offset
        self.high_watermark = max(self.high_watermark, offset)
        self.deleted_below = max(self.deleted_below, offset)

    def truncated(self) -> None:
        self.log_start = min(self.log_start, self.log_end)
        self.high_watermark = min(self.high_watermark, self.log_end)
        self.deleted_below = min(self.deleted_below, self.log_end)

    def set_high_watermark(self, offset: int) -> int:
        """Kafka's ``updateHighWatermark``: clamped to ``[log start, log end]``."""
        self.high_watermark = min(max(offset, self.log_start), self.log_end)
        return self.high_watermark

    def batches_from(self, offset: int) -> list[ModelBatch]:
        """The batches a read at ``offset`` walks: from the first whose last offset >= it."""
        return [batch for batch in self.batches if batch.last >= offset]

    def records_from(self, offset: int) -> list[Record]:
        return [r for batch in self.batches for r in batch.records if r.offset >= offset]

    def visible_records(self) -> list[Record]:
        return self.records_from(self.log_start)

    def drop_below(self, first_base: int, *, high_watermark: int) -> None:
        """Forget the batches of deleted segments (everything below ``first_base``)."""
        dropped = [batch for batch in self.batches if batch.base < first_base]
        for batch in dropped:
            assert batch.last < first_base, f"a deletion split batch {batch.base}..{batch.last}"
            assert batch.last < high_watermark, (
                f"batch {batch.base}..{batch.last} deleted at/above the high watermark "
                f"{high_watermark}"
            )
        self.batches = [batch for batch in self.batches if batch.base >= first_base]
        self.move_log_start(max(self.log_start, first_base))


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What retention looks at, captured before it runs."""

    base: int
    size: int
    largest_timestamp: int


def predicted_deletions(
    segments: Sequence[SegmentInfo],
    *,
    config: LogConfig,
    now_ms: int,
    log_start: int,
    log_end: int,
    high_watermark: int,
    by_log_start_only: bool = False,
) -> int:
    """How many of the oldest segments retention should delete (the spec in NOTES.md).

    A segment may go only when everything in it is below the high watermark and every older
    segment goes too; the active segment may go (unless empty). The reasons: wholly below the
    log start offset; ``retention.ms``; ``retention.bytes`` (the last two with ``delete``).
    """
    bound = min(high_watermark, log_end)
    last = len(segments) - 1

    def prefix(deletable: Callable[[int], bool]) -> int:
        count = 0
        for i, segment in enumerate(segments):
            upper = log_end if i == last else segments[i + 1].base
            if (i == last and segment.size == 0) or upper > bound or not deletable(i):
                break
            count += 1
        return count

    count = prefix(lambda i: i < last and segments[i + 1].base <= log_start)
    if by_log_start_only or not config.deletes:
        return count
    if config.retention_ms >= 0:
        count = max(
            count,
            prefix(lambda i: now_ms - segments[i].largest_timestamp > config.retention_ms),
        )
    if config.retention_bytes >= 0:
        total = sum(segment.size for segment in segments)
        count = max(
            count,
            prefix(
                lambda i: total - sum(s.size for s in segments[: i + 1]) >= config.retention_bytes
            ),
        )
    return count


def predicted_read(
    batches: Sequence[ModelBatch],
    bases: Sequence[int],
    *,
    offset: int,
    max_bytes: int,
    limit: int,
    min_one_message: bool,
) -> tuple[list[ModelBatch], int]:
    """What a read at ``offset`` returns, as Kafka's fetch: the whole batches, and the bytes
    of the file regions (those batches: unlike Kafka's, never part of the next one).

    The read starts at the first batch whose last offset is >= ``offset`` and takes at most
    ``max_bytes`` of the segment from there, never a batch reaching ``limit`` (the high
    watermark); a first batch larger than ``max_bytes`` comes whole with ``min_one_message``,
    not at all without. It goes on into the next segment only when it used the whole of this
    one and the next segment's first batch fits in what is left.
    """
    if offset >= limit:
        return [], 0
    by_segment: dict[int, list[ModelBatch]] = {}
    for batch in batches:
        if batch.last >= offset:
            segment = max(b for b in bases if b <= batch.base)
            by_segment.setdefault(segment, []).append(batch)
    whole: list[ModelBatch] = []
    size = 0
    remaining = max_bytes
    for group in by_segment.values():
        first = group[0]
        if first.last >= limit:
            break
        if first.size > remaining:
            if whole or not min_one_message:
                break
            remaining = first.size  # KIP-74: the first batch, whatever its size
        below_limit = [b for b in group if b.last < limit]
        taken = min(remaining, sum(b.size for b in below_limit))
        used = 0
        for batch in below_limit:
            if used + batch.size > taken:
                break
            whole.append(batch)
            used += batch.size
        size += used
        remaining -= taken
        if taken < sum(b.size for b in group) or remaining <= 0:
            break
    return whole, size


def check_compaction_contract(
    before: Sequence[Record],
    after: Sequence[Record],
    *,
    log_start: int,
    cleanable_below: int,
    tombstone_may_go: Callable[[Record], bool],
) -> None:
    """What any cleaner must guarantee, checked on the records before and after it ran.

    Only what readers see counts: records below ``log_start`` are deleted already, and a
    tombstone there may expire over an older value there (truncation never makes them visible
    again: it lowers the log start only to the new log end).

    Offsets are preserved and stay in order; no record appears that was not there; nothing at
    or above ``cleanable_below`` (the active segment, the high watermark) changes. A record goes
    only when a later record of its key below ``cleanable_below`` supersedes it, or when it is
    a tombstone that ``tombstone_may_go`` (its delete horizon passed), and then no older value
    of its key may be left to resurface. So every key's latest value is still there.
    """
    before = [r for r in before if r.offset >= log_start]
    after = [r for r in after if r.offset >= log_start]
    offsets = [r.offset for r in after]
    assert offsets == sorted(set(offsets)), "compaction reordered or duplicated offsets"
    by_offset = {r.offset: r for r in before}
    for record in after:
        assert by_offset.get(record.offset) == record, f"compaction made up {record}"
    assert [r for r in before if r.offset >= cleanable_below] == [
        r for r in after if r.offset >= cleanable_below
    ], "compaction changed the uncleanable part of the log"
    kept = set(offsets)
    superseding: dict[bytes | None, int] = {}  # key -> latest offset below cleanable_below
    for record in before:
        if record.offset < cleanable_below:
            superseding[record.key] = record.offset
    for record in before:
        if record.offset in kept or record.offset < superseding.get(record.key, -1):
            continue  # kept, or superseded within the cleanable range
        assert record.value is None and tombstone_may_go(record), (
            f"compaction removed {record}, the latest of its key below {cleanable_below}"
        )
        assert all(r.key != record.key or r.offset > record.offset for r in after), (
            f"tombstone {record} removed while an older value of its key is left"
        )


# --- helpers --------------------------------------------------------------------------------


def disk_batches(log: PartitionLog) -> list[ModelBatch]:
    """Every batch in every segment of ``log``, as the model describes batches."""
    return [
        ModelBatch.from_disk(header, segment.read(position, header.size))
        for segment in log.segments
        for position, header in segment.batches()
    ]


def parse_read(data: bytes) -> list[tuple[BatchHeader, list[Record]]]:
    out = []
    position = 0
    for header in headers_of(data):
        out.append((header, list(iter_records(data[position : position + header.size]))))
        position += header.size
    return out


def spread(values: Sequence[int], count: int) -> list[int]:
    """At most ``count`` values spread evenly over ``values`` (first and last included)."""
    if len(values) <= count:
        return list(values)
    step = (len(values) - 1) / (count - 1)
    return [values[round(i * step)] for i in range(count)]


class Damage(enum.Enum):
    """What a crash leaves at the end of the active segment's ``.log`` (or in an index)."""

    NONE = "none"
    GARBAGE = "garbage"
    ZEROS = "zeros"
    TORN_BATCH = "torn batch"
    BAD_CRC = "bad crc"
    OLD_OFFSET = "valid batch with an offset already used"
    LOST_INDEX = "an index file missing"
    ODD_INDEX = "an index file of a length that is not whole entries"


class CleanerCrash(enum.Enum):
    NONE = "none"
    CLEANED_WRITTEN = "crash after the .cleaned segment was written"
    SWAP_RENAMED = "crash after the .cleaned segment was renamed .swap"
    OLD_DELETED = "crash after the .swap rename and some of the old segments' deletion"


BatchSpec = tuple[Compression, list[tuple[int, bytes, bytes | None]]]
"""A batch to append: its codec and its records' (timestamp - now, key, value)."""

CODECS = st.sampled_from(list(Compression))
RECORD_SPECS = st.tuples(
    st.integers(-300, 300),  # timestamp relative to the clock
    st.sampled_from(KEYS),
    st.one_of(st.none(), st.binary(max_size=30), st.binary(max_size=30), st.binary(max_size=30)),
)
BATCH_SPECS = st.tuples(CODECS, st.lists(RECORD_SPECS, min_size=1, max_size=6))

CONFIGS = st.builds(
    LogConfig,
    segment_bytes=st.sampled_from([300, 700, 2_000]),
    segment_ms=st.sampled_from([400, 7 * 24 * 3600 * 1000]),
    segment_jitter_ms=st.sampled_from([0, 150]),
    index_interval_bytes=st.sampled_from([0, 100, 4_096]),
    segment_index_bytes=st.sampled_from([24, 60, 4_096]),
    max_message_bytes=st.sampled_from([250, 1_048_588]),
    message_timestamp_type=st.sampled_from([CREATE_TIME, LOG_APPEND_TIME]),
    retention_ms=st.sampled_from([-1, 300, 3_000]),
    retention_bytes=st.sampled_from([-1, 600, 2_500]),
    cleanup_policy=st.sampled_from(
        [frozenset({"delete"}), frozenset({"compact"}), frozenset({"compact", "delete"})]
    ),
    delete_retention_ms=st.sampled_from([0, 500, 24 * 3600 * 1000]),
    min_compaction_lag_ms=st.sampled_from([0, 500]),
    max_compaction_lag_ms=st.sampled_from([1_000, LONG_MAX]),
    min_cleanable_dirty_ratio=st.sampled_from([0.0, 0.5]),
    flush_messages=st.sampled_from([LONG_MAX, 4]),
    flush_ms=st.sampled_from([LONG_MAX, 700]),
    preallocate=st.booleans(),
)


# --- the machine ----------------------------------------------------------------------------


class PartitionLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = scratch_directory("strom-log-model-")
        self.directory = self.tmp / "orders-0"
        self.clock = ManualClock(now_ms=1_700_000_000_000)
        self.model = Model()
        self.config = LogConfig()
        self._log: PartitionLog | None = None
        self.new_cleaner: Callable[[], LogCleaner] = LogCleaner
        self.cleaner_high_watermark = 0
        self.cleaner = LogCleaner()
        self.next_producer_id = 0

    @property
    def log(self) -> PartitionLog:
        assert self._log is not None
        return self._log

    def teardown(self) -> None:
        if self._log is not None:
            self._log.close_without_flush()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _open(self, *, recovery_point: int, log_start_offset: int, clean: bool) -> None:
        self._log = PartitionLog.open(
            self.directory,
            config=self.config,
            clock=self.clock,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=clean,
        )
        # The broker restarted: so did its cleaner (it reads its checkpoint file again).
        self.cleaner = self.new_cleaner()

    @initialize(
        config=CONFIGS,
        prefill=st.lists(st.lists(BATCH_SPECS, min_size=1, max_size=2), max_size=8),
        map_entries=st.sampled_from([2, 4, DEFAULT_MAX_ENTRIES]),
        io_buffer_bytes=st.sampled_from([100, DEFAULT_IO_BUFFER_BYTES]),
    )
    def open_log(
        self,
        config: LogConfig,
        prefill: list[list[BatchSpec]],
        map_entries: int,
        io_buffer_bytes: int,
    ) -> None:
        """Open an empty log, then append a few batches so that the steps start with segments.
        A small offset map makes the cleaner stop part way, as a full map does."""
        self.config = config
        self.new_cleaner = functools.partial(
            LogCleaner, max_map_entries=map_entries, io_buffer_bytes=io_buffer_bytes
        )
        self._open(recovery_point=0, log_start_offset=0, clean=True)
        for specs in prefill:
            self._append(specs)
            self.clock.advance(100)

    # --- append ------------------------------------------------------------------------------

    @rule(specs=st.lists(BATCH_SPECS, min_size=1, max_size=3))
    def append(self, specs: list[BatchSpec]) -> None:
        self._append(specs)

    @rule(spec=BATCH_SPECS)
    def append_one(self, spec: BatchSpec) -> None:
        self._append([spec])

    @rule(spec=BATCH_SPECS)
    def append_idempotent_and_retry(self, spec: BatchSpec) -> None:
        """A new idempotent producer's first batch, sent twice: stored once."""
        self.next_producer_id += 1
        self._append([spec], producer_id=self.next_producer_id)

    def _append(self, specs: list[BatchSpec], *, producer_id: int = -1) -> None:
        now = self.clock.now_ms()
        built = [
            (
                codec,
                build_batch(
                    [
                        Record(i, now + delta, key, value)
                        for i, (delta, key, value) in enumerate(records)
                    ],
                    compression=codec,
                    producer_id=producer_id,
                    producer_epoch=0 if producer_id >= 0 else -1,
                    base_sequence=0 if producer_id >= 0 else -1,
                ),
                records,
            )
            for codec, records in specs
        ]
        data = b"".join(batch for _, batch, _ in built)
        expected_error: ErrorCode | None = None
        if any(len(batch) > self.config.max_message_bytes for _, batch, _ in built):
            expected_error = ErrorCode.message_too_large
        elif len(data) > self.config.segment_bytes:
            expected_error = ErrorCode.record_list_too_large
        if expected_error is not None:
            with pytest.raises(KafkaError) as raised:
                self.log.append(data)
            assert raised.value.error_code == expected_error
            event(f"append rejected: {expected_error.name}")
            return  # the invariants check that nothing changed

        info = self.log.append(data)
        log_append_time = self.config.log_append_time
        assert info.base_offset == self.model.log_end
        assert (info.log_append_time == now) if log_append_time else info.log_append_time == -1
        offset = self.model.log_end
        for (codec, batch, records), header in zip(built, info.batches, strict=True):
            timestamps = [now if log_append_time else now + delta for delta, _, _ in records]
            assert (header.base_offset, header.last_offset) == (offset, offset + len(records) - 1)
            assert header.max_timestamp == max(timestamps)
            stored = self.log.read_bytes(offset, max_bytes=1)
            assert len(stored) == len(batch)
            if not log_append_time:  # byte for byte as produced, apart from offset and epoch
                assert without_offset_and_epoch(stored) == without_offset_and_epoch(batch)
            self.model.batches.append(
                ModelBatch(
                    base=offset,
                    last=offset + len(records) - 1,
                    max_timestamp=max(timestamps),
                    records=tuple(
                        Record(offset + i, timestamp, key, value)
                        for i, (timestamp, (_, key, value)) in enumerate(
                            zip(timestamps, records, strict=True)
                        )
                    ),
                    codec=codec,
                    size=len(batch),
                    append_time=log_append_time,
                )
            )
            offset += len(records)
        self.model.log_end = offset
        if producer_id >= 0:
            retry = self.log.append(data)
            assert (retry.base_offset, retry.last_offset, retry.size) == (
                info.base_offset,
                info.last_offset,
                0,
            )
            event("idempotent retry answered")

    @rule(
        spec=BATCH_SPECS,
        corruption=st.sampled_from(["crc", "length", "magic", "count"]),
        where=st.integers(0, 10_000),
    )
    def append_corrupt(
        self,
        spec: BatchSpec,
        corruption: str,
        where: int,
    ) -> None:
        codec, records = spec
        now = self.clock.now_ms()
        batch = bytearray(
            build_batch(
                [Record(i, now + d, k, v) for i, (d, k, v) in enumerate(records)],
                compression=codec,
            )
        )
        if corruption == "crc":  # a flipped byte anywhere the CRC covers
            position = 21 + where % (len(batch) - 21)
            batch[position] ^= 0x55
        elif corruption == "length":
            batch[8:12] = (len(batch) - 12 + 1 + where % 50).to_bytes(4, "big")
        elif corruption == "magic":
            batch[16] = 1
        else:  # the record count disagrees with the last offset delta (CRC fixed up)
            batch[57:61] = (len(records) + 1).to_bytes(4, "big")
            rewrite_crc(batch, 0)
        with pytest.raises(KafkaError):
            self.log.append(bytes(batch))

    @rule(
        spec=BATCH_SPECS,
        gap=st.integers(-1, 3),
        holes=st.booleans(),
        append_time=st.booleans(),
    )
    def append_as_follower(self, spec: BatchSpec, gap: int, holes: bool, append_time: bool) -> None:
        """Replication: a batch that already has its offsets (maybe past a gap, maybe with
        compaction's holes) is written byte for byte; below the log end it is refused."""
        codec, specs = spec
        now = self.clock.now_ms()
        base = self.model.log_end + gap
        if base < 0:
            return
        records = [
            Record(base + i, now + delta, key, value)
            for i, (delta, key, value) in enumerate(specs)
            if not holes or i % 2 == 0 or i == len(specs) - 1
        ]
        raw = build_batch(
            records,
            base_offset=base,
            last_offset_delta=len(specs) - 1,
            compression=codec,
            timestamp_type=(
                TimestampType.LOG_APPEND_TIME if append_time else TimestampType.CREATE_TIME
            ),
            max_timestamp=now if append_time else None,
            partition_leader_epoch=7,
        )
        if gap < 0:
            with pytest.raises(UnexpectedAppendOffsetError):
                self.log.append_as_follower(raw)
            return
        if len(raw) > self.config.segment_bytes:
            with pytest.raises(KafkaError) as raised:
                self.log.append_as_follower(raw)
            assert raised.value.error_code == ErrorCode.record_list_too_large
            return
        info = self.log.append_as_follower(raw)
        assert (info.base_offset, info.last_offset) == (base, base + len(specs) - 1)
        assert self.log.read_bytes(base, max_bytes=1) == raw
        self.model.batches.append(ModelBatch.from_disk(BatchHeader.read(raw), raw))
        self.model.log_end = base + len(specs)
        event(f"follower append: gap {gap}{', holes' if holes else ''}")

    @rule(config=CONFIGS)
    def update_config(self, config: LogConfig) -> None:
        """A topic configuration change: applies from the next append, roll or retention run."""
        self.config = config
        self.log.update_config(config)

    # --- read ----------------------------------------------------------------------------------

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        model = self.model
        offset = data.draw(st.integers(max(0, model.log_start - 2), model.log_end + 2), "offset")
        max_bytes = data.draw(st.integers(0, 300) | st.integers(0, 3_000), "max_bytes")
        min_one = data.draw(st.booleans(), "min_one_message")
        high_watermark = data.draw(st.integers(model.log_start - 1, model.log_end + 1), "hw")
        assert self.log.update_high_watermark(high_watermark) == model.set_high_watermark(
            high_watermark
        )
        isolation = data.draw(st.sampled_from(FetchIsolation), "isolation")
        as_regions = data.draw(st.booleans(), "as_regions")

        if not model.log_start <= offset <= model.log_end:
            with pytest.raises(KafkaError) as raised:
                self.log.read_bytes(offset, max_bytes=max_bytes)
            assert raised.value.error_code == ErrorCode.offset_out_of_range
            return

        bases = [segment.base_offset for segment in self.log.segments]
        expected, expected_size = predicted_read(
            model.batches,
            bases,
            offset=offset,
            max_bytes=max_bytes,
            limit=model.log_end if isolation is FetchIsolation.LOG_END else model.high_watermark,
            min_one_message=min_one,
        )
        whole = self.log.read_bytes(
            offset, max_bytes=max_bytes, isolation=isolation, min_one_message=min_one
        )
        parsed = parse_read(whole)
        assert [(h.base_offset, h.last_offset) for h, _ in parsed] == [
            (b.base, b.last) for b in expected
        ]
        assert [records for _, records in parsed] == [list(b.records) for b in expected]
        if as_regions:
            with self.log.read(
                offset, max_bytes=max_bytes, isolation=isolation, min_one_message=min_one
            ) as result:
                got = result.read()
                assert result.next_offset == (expected[-1].next if expected else offset)
                assert result.size == len(got) == expected_size
                assert result.log_start_offset == model.log_start
                assert result.log_end_offset == model.log_end
            # The regions are the whole batches, never the start of the next one.
            assert got == whole

    # --- timestamps --------------------------------------------------------------------------

    @rule(data=st.data())
    def offset_for_timestamp(self, data: st.DataObject) -> None:
        model = self.model
        now = self.clock.now_ms()
        seen = sorted({r.timestamp for r in model.records_from(0)} | {now})
        target = data.draw(
            st.one_of(
                st.sampled_from(seen).flatmap(lambda t: st.integers(t - 1, t + 1)),
                st.integers(now - 5_000, now + 500),
                st.sampled_from(
                    [LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, MAX_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP]
                ),
            ),
            "timestamp",
        )
        visible = model.visible_records()
        expected: tuple[int, int] | None
        if target in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            expected = (model.log_start, NO_TIMESTAMP)
        elif target == LATEST_TIMESTAMP:
            expected = (model.log_end, NO_TIMESTAMP)
        elif target == MAX_TIMESTAMP:
            top = max((r.timestamp for r in visible), default=None)
            expected = next(((r.offset, r.timestamp) for r in visible if r.timestamp == top), None)
        else:
            expected = next(
                ((r.offset, r.timestamp) for r in visible if r.timestamp >= target), None
            )
        found = self.log.offset_for_timestamp(target)
        assert (None if found is None else tuple(found)) == expected, target

    # --- truncation and log start ------------------------------------------------------------

    @rule(data=st.data())
    def truncate_to(self, data: st.DataObject) -> None:
        model = self.model
        offset = data.draw(st.integers(max(0, model.log_start - 3), model.log_end + 2), "offset")
        bases = [segment.base_offset for segment in self.log.segments]
        self.log.truncate_to(offset)
        if offset >= model.log_end:
            return
        self.cleaner.truncated(self.log, offset)  # as Kafka's LogManager.truncateTo does
        self.cleaner_high_watermark = min(self.cleaner_high_watermark, self.log.log_end_offset)
        event(
            "truncate: below the first segment"
            if offset < bases[0]
            else "truncate: inside a batch"
            if any(b.base < offset <= b.last for b in model.batches)
            else "truncate: at a batch boundary"
        )
        if offset < bases[0]:
            model.batches.clear()
            model.log_end = offset
            model.truncated()
            return
        # Batches are never split: every batch with a record at or above the offset goes, and
        # the log end becomes what the data says: the end of the last batch kept in the segment
        # holding the offset, or that segment's base when none is left in it.
        model.batches = [batch for batch in model.batches if batch.last < offset]
        segment_base = max(base for base in bases if base <= offset)
        kept_end = model.batches[-1].next if model.batches else segment_base
        model.log_end = max(segment_base, kept_end)
        assert model.log_end <= offset
        model.truncated()

    def _segment_infos(self) -> list[SegmentInfo]:
        return [SegmentInfo(s.base_offset, s.size, s.largest_timestamp) for s in self.log.segments]

    def _adopt_deletions(self, before: Sequence[SegmentInfo], count: int, bound: int) -> None:
        """Check that exactly the ``count`` oldest segments went, then update the model."""
        bases_before = [s.base for s in before]
        bases_after = [s.base_offset for s in self.log.segments]
        if count == len(before):  # everything went: the log rolled an empty segment first
            assert bases_after == [self.model.log_end]
        else:
            assert bases_after == bases_before[count:]
        self.model.drop_below(bases_after[0], high_watermark=bound)

    @rule(data=st.data())
    def advance_log_start_offset(self, data: st.DataObject) -> None:
        model = self.model
        offset = data.draw(st.integers(max(0, model.log_start - 2), model.log_end + 2), "offset")
        high_watermark = data.draw(st.none() | st.integers(model.log_start, model.log_end), "hw")
        bounded = high_watermark is not None
        if high_watermark is not None:
            self.log.update_high_watermark(high_watermark)
            model.set_high_watermark(high_watermark)
        limit = model.high_watermark if bounded else model.log_end
        if offset > limit:
            with pytest.raises(KafkaError) as raised:
                self.log.advance_log_start_offset(offset, within_high_watermark=bounded)
            assert raised.value.error_code == ErrorCode.offset_out_of_range
            return
        before = self._segment_infos()
        moved = self.log.advance_log_start_offset(offset, within_high_watermark=bounded)
        assert moved == (offset > model.log_start)
        if not moved:
            assert len(self.log.segments) == len(before)
            return
        model.move_log_start(offset)
        count = predicted_deletions(
            before,
            config=self.config,
            now_ms=self.clock.now_ms(),
            log_start=offset,
            log_end=model.log_end,
            high_watermark=limit,
            by_log_start_only=True,
        )
        self._adopt_deletions(before, count, limit)

    # --- retention -----------------------------------------------------------------------------

    @rule(data=st.data())
    def delete_old_segments(self, data: st.DataObject) -> None:
        model = self.model
        high_watermark = data.draw(st.integers(model.log_start, model.log_end), "hw")
        now = self.clock.now_ms()
        before = self._segment_infos()
        expected = predicted_deletions(
            before,
            config=self.config,
            now_ms=now,
            log_start=model.log_start,
            log_end=model.log_end,
            high_watermark=high_watermark,
        )
        deleted = self.log.delete_old_segments(now, high_watermark)
        assert deleted == expected
        event(f"retention deleted {min(deleted, 3)}{'+' if deleted >= 3 else ''} segments")
        self._adopt_deletions(before, deleted, high_watermark)

    # --- time, rolls, flushes ------------------------------------------------------------------

    @rule(ms=st.integers(0, 2_000))
    def tick(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule()
    def roll(self) -> None:
        before = [s.base_offset for s in self.log.segments]
        self.log.roll()
        after = [s.base_offset for s in self.log.segments]
        assert after[-1] == self.model.log_end
        assert after[:-1] == [b for b in before if b < self.model.log_end] or after == before

    @rule()
    def flush(self) -> None:
        self.log.flush()
        assert self.log.recovery_point == self.model.log_end

    # --- compaction ----------------------------------------------------------------------------

    @precondition(lambda self: len(self.log.segments) >= 2)
    @rule(data=st.data())
    def compact_segments(self, data: st.DataObject) -> None:
        """Play the cleaner on a run of inactive segments through storage's cleaner API
        (``new_cleaned_segment``, ``LogSegment.append``, ``replace_segments``), maybe crashing
        half way, to check gaps, empty batches and swaps everywhere else in the log."""
        segments = self.log.segments
        inactive = len(segments) - 1
        first = data.draw(st.integers(0, inactive - 1), "first")
        end = data.draw(st.integers(first + 1, inactive), "end")
        drop_tombstones = data.draw(st.booleans(), "drop tombstones")
        crash = data.draw(st.sampled_from(list(CleanerCrash)), "crash")
        event(f"compact: {crash.value}")
        old = list(segments[first:end])
        low, high = old[0].base_offset, segments[end].base_offset
        cleanable_below = self.log.active_segment.base_offset

        model = self.model
        before = model.records_from(0)
        latest: dict[bytes | None, int] = {}
        for record in before:
            if record.offset < cleanable_below:
                latest[record.key] = record.offset
        droppable: set[int] = set()
        if drop_tombstones:  # latest tombstones whose older values all go in this pass
            for record in before:
                if (
                    record.value is None
                    and latest.get(record.key) == record.offset
                    and all(
                        low <= r.offset < high
                        for r in before
                        if r.key == record.key and r.offset != record.offset
                    )
                    and low <= record.offset < high
                ):
                    droppable.add(record.offset)
        cleaned: list[ModelBatch] = []
        for n, batch in enumerate(b for b in model.batches if low <= b.base < high):
            kept = tuple(
                r for r in batch.records if latest[r.key] == r.offset and r.offset not in droppable
            )
            if not kept and n % 2:  # a batch left empty goes, or stays empty: both shapes
                continue
            max_timestamp = (
                batch.max_timestamp
                if batch.append_time or not kept
                else max(r.timestamp for r in kept)
            )
            raw = replace(batch, records=kept, max_timestamp=max_timestamp).build()
            cleaned.append(ModelBatch.from_disk(BatchHeader.read(raw), raw))

        new = self.log.new_cleaned_segment(low)
        if cleaned:
            buffer = b"".join(batch.build() for batch in cleaned)
            new.append(buffer, headers_of(buffer))
        if crash is CleanerCrash.NONE:
            self.log.replace_segments(new, old)
            replaced_end = high
        else:
            new.on_become_inactive()
            new.flush()
            if crash is not CleanerCrash.CLEANED_WRITTEN:
                new.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
                fsync_directory(self.directory)
            new.close_handles()
            gone: set[int] = set()
            if crash is CleanerCrash.OLD_DELETED:  # the first few renamed .deleted, one unlinked
                for n, segment in enumerate(old[: data.draw(st.integers(1, len(old)), "gone")]):
                    for kind in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                        path = self.directory / segment_file_name(segment.base_offset, kind)
                        if n == 0:
                            path.unlink()
                        else:
                            path.rename(path.with_name(path.name + DELETED_SUFFIX))
                    gone.add(segment.base_offset)
            self._crash()
            self._reopen_after_crash(self.log.recovery_point)
            if crash is CleanerCrash.CLEANED_WRITTEN:
                return  # the loader removed the .cleaned files: nothing changed
            # The loader completes the swap: it replaces the segments whose base offsets are
            # in [swap base, swap end); later ones (their records all removed) are kept as
            # they were, which loses nothing, unless their deletion had begun.
            swap_end = max(cleaned[-1].next if cleaned else low, low + 1)
            gone |= {s.base_offset for s in old if s.base_offset < swap_end}
            low_bases = [s.base_offset for s in segments]
            kept_old = {base for base in low_bases if low <= base < high and base not in gone}
            cleaned = cleaned + [
                b for b in model.batches if max(x for x in low_bases if x <= b.base) in kept_old
            ]
            replaced_end = high
        model.batches = (
            [b for b in model.batches if b.base < low]
            + cleaned
            + [b for b in model.batches if b.base >= replaced_end]
        )
        check_compaction_contract(
            before,
            model.records_from(0),
            log_start=model.deleted_below,
            cleanable_below=cleanable_below,
            tombstone_may_go=lambda r: r.offset in droppable,
        )

    @precondition(lambda self: self.config.compacts)
    @rule(data=st.data())
    def run_cleaner(self, data: st.DataObject) -> None:
        """strom's LogCleaner: a forced pass, or clean_if_needed (retention first for
        ``compact,delete``); what it leaves must keep the compaction contract."""
        model = self.model
        # The high watermark only moves up (records below it are committed), except when a
        # truncation takes the log end below it.
        self.cleaner_high_watermark = high_watermark = data.draw(
            st.integers(max(model.log_start, self.cleaner_high_watermark), model.log_end), "hw"
        )
        force = data.draw(st.booleans(), "force")
        now = self.clock.now_ms()
        segments_before = self._segment_infos()
        cleanable_below = min(self.log.active_segment.base_offset, high_watermark)
        retention = 0
        if not force and self.config.deletes:
            retention = predicted_deletions(
                segments_before,
                config=self.config,
                now_ms=now,
                log_start=model.log_start,
                log_end=model.log_end,
                high_watermark=high_watermark,
            )
        stats: CleanStats | None
        if force:
            stats = self.cleaner.clean(self.log, now_ms=now, high_watermark=high_watermark)
        else:
            stats = self.cleaner.clean_if_needed(
                self.log, now_ms=now, high_watermark=high_watermark
            )
        event(
            "cleaner: no pass"
            if stats is None
            else f"cleaner: removed {'some' if stats.records_removed else 'no'} records"
            + (", tombstones" if stats.tombstones_removed else "")
        )
        first_base = self.log.segments[0].base_offset
        if retention < len(segments_before):
            assert first_base == segments_before[retention].base
        else:
            assert first_base == model.log_end
        model.drop_below(first_base, high_watermark=high_watermark)

        after = disk_batches(self.log)
        horizons = {
            r.offset: b.delete_horizon
            for b in model.batches
            if b.delete_horizon is not None
            for r in b.records
        }

        def tombstone_may_go(record: Record) -> bool:
            horizon = horizons.get(record.offset)
            return horizon is not None and horizon <= now

        check_compaction_contract(
            model.records_from(0),
            [r for b in after for r in b.records],
            log_start=model.deleted_below,
            cleanable_below=cleanable_below,
            tombstone_may_go=tombstone_may_go,
        )
        boundaries = {(b.base, b.last) for b in model.batches}
        assert all((b.base, b.last) in boundaries for b in after), "a batch was split or merged"
        model.batches = after

    # --- restarts ------------------------------------------------------------------------------

    @rule(data=st.data())
    def clean_restart(self, data: st.DataObject) -> None:
        """What LogManager does: close (flush), checkpoint, reopen with the marker. Maybe an
        index file went missing meanwhile: it is rebuilt."""
        log = self.log
        log.close()
        recovery_point, log_start = log.recovery_point, log.log_start_offset
        assert recovery_point == self.model.log_end
        if data.draw(st.booleans(), "lose an index"):
            segment = data.draw(st.sampled_from(log.segments), "segment")
            kind = data.draw(st.sampled_from([INDEX_SUFFIX, TIME_INDEX_SUFFIX]), "kind")
            (self.directory / segment_file_name(segment.base_offset, kind)).unlink()
        self._open(recovery_point=recovery_point, log_start_offset=log_start, clean=True)
        assert self.log.recovery_point == self.model.log_end
        self.model.high_watermark = self.model.log_start  # its owner sets it again

    @rule(damage=st.sampled_from(list(Damage)), data=st.data())
    def crash_and_recover(self, damage: Damage, data: st.DataObject) -> None:
        """kill -9 or power loss: nothing flushed or trimmed, maybe a torn or garbage tail, maybe
        a lost index file, and a recovery point checkpoint that may be stale."""
        log = self.log
        checkpoint = data.draw(st.integers(0, log.recovery_point), "recovery point checkpoint")
        # The log start checkpoint may be stale too (DeleteRecords since the last one): the
        # log start goes back as far as the first segment allows, which the model follows.
        stale_start = data.draw(st.integers(0, self.model.log_start), "log start checkpoint")
        event(f"crash: {damage.value}")
        event(f"crash with {min(len(log.segments), 5)} segments")
        active = log.active_segment
        tail_path, tail_position, active_end = active.log_path, active.size, active.next_offset
        segments = log.segments
        self._crash()

        tail = b""
        if damage is Damage.GARBAGE:
            tail = data.draw(st.binary(min_size=1, max_size=100), "garbage")
        elif damage is Damage.ZEROS:
            tail = bytes(data.draw(st.integers(1, 100), "zeros"))
        elif damage in (Damage.TORN_BATCH, Damage.BAD_CRC, Damage.OLD_OFFSET):
            # OLD_OFFSET: a whole, valid batch, but its offsets overlap the segment's last batch
            # (or its base offset): recovery requires increasing offsets.
            base = max(active_end - 1, 0) if damage is Damage.OLD_OFFSET else active_end
            records = [Record(base + i, self.clock.now_ms(), b"k0", b"x" * 20) for i in range(3)]
            batch = bytearray(build_batch(records, base_offset=base))
            if damage is Damage.TORN_BATCH:
                cut = data.draw(st.integers(1, len(batch) - 1), "cut")
                # Cut before a non-zero byte: zeros would "complete" the batch in a
                # preallocated file (whose tail is zeros), and then it is not torn.
                while not any(batch[cut:]):
                    cut -= 1
                tail = bytes(batch[:cut])
            elif damage is Damage.BAD_CRC:
                batch[data.draw(st.integers(21, len(batch) - 1), "flip")] ^= 0x01
                tail = bytes(batch)
            elif active_end > 0:  # (at offset 0 there is no earlier offset to reuse)
                tail = bytes(batch)
        elif damage in (Damage.LOST_INDEX, Damage.ODD_INDEX):
            segment = data.draw(st.sampled_from(segments), "segment")
            kind = data.draw(st.sampled_from([INDEX_SUFFIX, TIME_INDEX_SUFFIX]), "kind")
            index_path = self.directory / segment_file_name(segment.base_offset, kind)
            if damage is Damage.LOST_INDEX:
                index_path.unlink()
            else:
                with index_path.open("ab") as file:
                    file.write(b"\x00\x01\x02")
        if tail:
            with tail_path.open("r+b") as file:
                file.seek(tail_position)
                file.write(tail)

        # Everything fully written survives; the torn tail is gone (the invariants check it).
        self._reopen_after_crash(checkpoint, log_start_checkpoint=stale_start)

    def _crash(self) -> None:
        self.log.close_without_flush()

    def _reopen_after_crash(
        self, checkpoint: int, *, log_start_checkpoint: int | None = None
    ) -> None:
        model = self.model
        log_start = model.log_start if log_start_checkpoint is None else log_start_checkpoint
        self._open(recovery_point=checkpoint, log_start_offset=log_start, clean=False)
        assert self.log.recovery_point == min(checkpoint, model.log_end)
        first_base = self.log.segments[0].base_offset
        model.log_start = model.high_watermark = max(log_start, first_base)

    # --- invariants ----------------------------------------------------------------------------

    @invariant()
    def offsets_agree(self) -> None:
        log, model = self.log, self.model
        assert log.log_end_offset == model.log_end
        assert log.log_start_offset == model.log_start
        assert log.high_watermark == model.high_watermark
        assert log.log_start_offset <= log.high_watermark <= log.log_end_offset
        assert 0 <= log.recovery_point <= log.log_end_offset
        assert log.segments[0].base_offset <= log.log_start_offset

    @invariant()
    def disk_agrees(self) -> None:
        """Every segment, batch by batch and record by record, is what the model holds; each
        segment's bookkeeping and indexes agree with its batches."""
        got: list[ModelBatch] = []
        segments = self.log.segments
        for i, segment in enumerate(segments):
            batches = list(segment.batches())
            if i + 1 < len(segments):
                assert segment.next_offset <= segments[i + 1].base_offset
            if batches:
                assert batches[0][1].base_offset >= segment.base_offset
                assert segment.next_offset == batches[-1][1].next_offset
            else:
                assert segment.next_offset == segment.base_offset
            expected_max = max((h.max_timestamp for _, h in batches), default=NO_TIMESTAMP)
            assert segment.max_timestamp == expected_max
            self._check_indexes(segment, batches)
            got.extend(
                ModelBatch.from_disk(header, segment.read(position, header.size))
                for position, header in batches
            )
        assert got == self.model.batches

    @staticmethod
    def _check_indexes(segment: LogSegment, batches: list[tuple[int, BatchHeader]]) -> None:
        by_position = dict(batches)
        offset_index = segment.offset_index
        previous = (-1, -1)
        for n in range(offset_index.entries):
            entry = offset_index.entry(n)
            header = by_position.get(entry.position)
            assert header is not None, f"{segment}: index entry {entry} is not at a batch"
            assert header.last_offset == entry.offset, f"{segment}: index entry {entry}"
            assert entry.offset > previous[0] and entry.position > previous[1]
            previous = entry
        time_index = segment.time_index
        last_offsets = {header.last_offset: header for _, header in batches}
        previous_timestamp = NO_TIMESTAMP
        for n in range(time_index.entries):
            timestamp, offset = time_index.entry(n)
            header = last_offsets.get(offset)
            assert header is not None, f"{segment}: time index entry at {offset}, not a batch end"
            assert header.max_timestamp == timestamp
            so_far = max(h.max_timestamp for _, h in batches if h.last_offset <= offset)
            assert so_far == timestamp, f"{segment}: time index entry ({timestamp}, {offset})"
            assert timestamp > previous_timestamp
            previous_timestamp = timestamp

    @invariant()
    def readers_see_the_model(self) -> None:
        """A read of everything from the log start gives exactly the model's records, and reads
        at sampled offsets land on the batch holding them (the offset index is right)."""
        model = self.model
        if model.log_start == model.log_end:
            assert self.log.read_bytes(model.log_start, max_bytes=READ_ALL) == b""
            return
        everything = parse_read(self.log.read_bytes(model.log_start, max_bytes=READ_ALL))
        expected = model.batches_from(model.log_start)
        assert [(h.base_offset, h.last_offset) for h, _ in everything] == [
            (b.base, b.last) for b in expected
        ]
        records = [r for _, batch in everything for r in batch if r.offset >= model.log_start]
        assert records == model.visible_records()
        offsets = spread(range(model.log_start, model.log_end), 6)
        for offset in offsets:
            holder = next((b for b in model.batches if b.last >= offset), None)
            got = headers_of(self.log.read_bytes(offset, max_bytes=1))
            if holder is None:  # past the last batch: compaction removed the log's tail
                assert got == []
            else:
                assert [(h.base_offset, h.last_offset) for h in got] == [(holder.base, holder.last)]


PartitionLogMachine.TestCase.settings = settings(
    max_examples=75,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestPartitionLogModel = PartitionLogMachine.TestCase


# --- what the machine found, as focused tests -------------------------------------------------


def _all_records(log: PartitionLog) -> list[Record]:
    return [r for batch in disk_batches(log) for r in batch.records]


def test_cleaner_checkpoint_after_truncation_inside_a_batch(tmp_path: Path) -> None:
    """Found by the machine. Truncating inside a batch leaves the log end at the batch's base
    offset, below the target; a cleaner checkpoint lowered only to the target called the
    records appended again in between "clean", so a tombstone there expired over an older value
    of its key, which came back. ``LogCleaner.truncated`` now lowers it to the log end."""
    clock = ManualClock()
    config = LogConfig(
        cleanup_policy=frozenset({"compact"}), delete_retention_ms=0, min_cleanable_dirty_ratio=0
    )
    log = PartitionLog.open(tmp_path / "t-0", config=config, clock=clock, had_clean_shutdown=True)
    cleaner = LogCleaner()

    def append(*pairs: tuple[bytes, bytes | None]) -> None:
        log.append(build_batch([Record(i, clock.now_ms(), k, v) for i, (k, v) in enumerate(pairs)]))

    append((b"a", b"1"), (b"a", b"2"))  # 0..1
    append(*[(b"b", b"%d" % i) for i in range(6)])  # 2..7
    log.roll()
    assert cleaner.clean(log, now_ms=clock.now_ms(), high_watermark=8).end_offset == 8
    log.truncate_to(7)  # the batch 2..7 goes whole: the log end is 2
    cleaner.truncated(log, 7)
    assert log.log_end_offset == 2
    append((b"x", b"old"), (b"x", None))  # 2, 3: x is deleted
    append(*[(b"c", b"%d" % i) for i in range(4)])  # 4..7
    append((b"d", b"1"))  # 8
    log.roll()
    try:
        for _ in range(3):  # stamp the tombstone's delete horizon, then drop it
            clock.advance(10)
            cleaner.clean(log, now_ms=clock.now_ms(), high_watermark=log.log_end_offset)
        assert [r for r in _all_records(log) if r.key == b"x"] in (
            [],
            [Record(3, clock.now_ms() - 30, b"x", None)],
        )
    finally:
        log.close()


# --- transactions: markers, the last stable offset, the .txnindex ---------------------------


@dataclass(frozen=True, slots=True)
class TxnBatch:
    """A batch of the transactional machine's log: data (plain or transactional) or a marker."""

    base: int
    last: int
    producer_id: int
    """-1 for a plain batch."""
    marker: bool | None = None
    """None for data; True for COMMIT, False for ABORT."""


def replay_txns(history: Sequence[TxnBatch]) -> tuple[dict[int, int], list[AbortedTxn]]:
    """The model's transactions: ongoing (producer -> first offset) and aborted (in marker
    order, with the last stable offset after each marker)."""
    ongoing: dict[int, int] = {}
    aborted: list[AbortedTxn] = []
    for batch in history:
        if batch.producer_id < 0:
            continue
        if batch.marker is None:
            ongoing.setdefault(batch.producer_id, batch.base)
            continue
        first = ongoing.pop(batch.producer_id, None)
        if first is not None and batch.marker is False:
            stable = min(ongoing.values(), default=batch.last + 1)
            aborted.append(AbortedTxn(batch.producer_id, first, batch.last, stable))
    return ongoing, aborted


TXN_PRODUCERS = (11, 12, 13)


class TransactionalLogMachine(RuleBasedStateMachine):
    """Plain and transactional appends, COMMIT/ABORT markers, rolls, truncation, clean
    restarts and crashes (maybe with a lost or torn ``.txnindex``) against a list of batches:
    the first unstable offset, every segment's ``.txnindex`` and ``collect_aborted_txns`` must
    be what a replay of the batches says."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = scratch_directory("strom-txn-model-")
        self.directory = self.tmp / "payments-0"
        self.clock = ManualClock(now_ms=1_700_000_000_000)
        self.config = LogConfig(segment_bytes=400, index_interval_bytes=100)
        self.history: list[TxnBatch] = []
        self._log: PartitionLog | None = PartitionLog.open(
            self.directory, config=self.config, clock=self.clock, had_clean_shutdown=True
        )

    @property
    def log(self) -> PartitionLog:
        assert self._log is not None
        return self._log

    def teardown(self) -> None:
        if self._log is not None:
            self._log.close_without_flush()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _next_sequence(self, producer_id: int) -> int:
        return sum(
            b.last - b.base + 1
            for b in self.history
            if b.producer_id == producer_id and b.marker is None
        )

    @rule(count=st.integers(1, 3), producer=st.sampled_from((-1, *TXN_PRODUCERS)))
    def append(self, count: int, producer: int) -> None:
        now = self.clock.now_ms()
        records = [Record(i, now, b"k", b"v" * 20) for i in range(count)]
        if producer < 0:
            data = build_batch(records)
        else:
            data = build_batch(
                records,
                producer_id=producer,
                producer_epoch=0,
                base_sequence=self._next_sequence(producer),
                is_transactional=True,
            )
        info = self.log.append(data)
        self.history.append(TxnBatch(info.base_offset, info.last_offset, producer))

    @rule(producer=st.sampled_from(TXN_PRODUCERS), commit=st.booleans())
    def end_transaction(self, producer: int, commit: bool) -> None:
        info = self.log.append_txn_marker(
            producer_id=producer, producer_epoch=0, commit=commit, coordinator_epoch=0
        )
        event("marker ends a transaction" if producer in self.ongoing else "marker, no txn")
        self.history.append(TxnBatch(info.base_offset, info.last_offset, producer, commit))

    @property
    def ongoing(self) -> dict[int, int]:
        return replay_txns(self.history)[0]

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @precondition(lambda self: self.history)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(0, self.log.log_end_offset), "offset")
        self.log.truncate_to(offset)
        self.history = [b for b in self.history if b.last < offset]
        # Batches are contiguous from 0 and never split: the log ends after the last one kept.
        assert self.log.log_end_offset == (self.history[-1].last + 1 if self.history else 0)

    @rule()
    def clean_restart(self) -> None:
        self.log.close()
        self._log = PartitionLog.open(
            self.directory,
            config=self.config,
            clock=self.clock,
            recovery_point=self.log.log_end_offset,
            had_clean_shutdown=True,
        )

    @rule(data=st.data(), damage=st.sampled_from(["none", "lost", "torn"]))
    def crash(self, data: st.DataObject, damage: str) -> None:
        log = self.log
        recovery_point = data.draw(st.integers(0, log.recovery_point), "recovery point")
        bases = [s.base_offset for s in log.segments]
        first_recovered = max(b for b in bases if b <= recovery_point)
        log.close_without_flush()
        indexes = sorted(self.directory.glob("*.txnindex"))
        if damage != "none" and indexes:
            path = data.draw(st.sampled_from(indexes), "index")
            if damage == "torn":
                with path.open("ab") as file:
                    file.write(b"\x00\x01\x02")
            elif int(path.name.split(".")[0]) >= first_recovered:
                path.unlink()  # only what recovery rescans may be lost: the rest was fsynced
        event(f"crash: {damage}")
        self._log = PartitionLog.open(
            self.directory,
            config=self.config,
            clock=self.clock,
            recovery_point=recovery_point,
        )

    @rule(data=st.data())
    def move_high_watermark(self, data: st.DataObject) -> None:
        """The replica manager sets the log's high watermark (clamped to the log)."""
        log = self.log
        offset = data.draw(st.integers(0, log.log_end_offset + 1), "high watermark")
        assert log.update_high_watermark(offset) == min(offset, log.log_end_offset)

    @invariant()
    def transactions_agree(self) -> None:
        log = self.log
        ongoing, aborted = replay_txns(self.history)
        first_unstable = min(ongoing.values(), default=None)
        assert log.first_unstable_offset == first_unstable
        high_watermark = log.high_watermark
        stable = high_watermark if first_unstable is None else min(first_unstable, high_watermark)
        assert log.last_stable_offset == log.fetchable_offset(FetchIsolation.TXN_COMMITTED)
        assert log.last_stable_offset == stable
        committed = log.read_bytes(0, max_bytes=10**6, isolation=FetchIsolation.TXN_COMMITTED)
        assert all(h.last_offset < stable for h, _ in parse_read(committed))
        assert [t for s in log.segments for t in s.txn_index.entries] == aborted
        end = log.log_end_offset
        for fetch_offset in spread(range(end + 1), 4):
            for upper in spread(range(fetch_offset, end + 1), 3):
                assert log.collect_aborted_txns(fetch_offset, upper) == [
                    t for t in aborted if t.last_offset >= fetch_offset and t.first_offset < upper
                ], (fetch_offset, upper)


TransactionalLogMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestTransactionalLogModel = TransactionalLogMachine.TestCase
