"""The log cleaner: latest value per key, tombstones, codecs, producer batches, crash safety."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from strom.common import TopicPartition
from strom.common.clock import ManualClock
from strom.protocol.batch import (
    DELETE_HORIZON_FLAG,
    BatchHeader,
    Compression,
    TimestampType,
    scan_batches,
)
from strom.protocol.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    iter_records,
)
from strom.storage.checkpoint import read_offset_checkpoint
from strom.storage.cleaner import CleanStats, LogCleaner
from strom.storage.cleaner_checkpoint import CLEANER_OFFSET_CHECKPOINT
from strom.storage.cleaner_plan import CleaningPass, group_segments_by_size
from strom.storage.log_config import LOG_APPEND_TIME, LogConfig
from strom.storage.partition_log import PartitionLog
from strom.storage.producer_state import AppendOrigin
from strom.storage.segment import LogSegment

from .conftest import OpenLog
from .scratch import scratch_directory

COMPACT = frozenset({"compact"})
Entry = tuple[bytes | None, bytes | None]
"""key, value"""


def config(**overrides: Any) -> LogConfig:
    settings_: dict[str, Any] = {
        "cleanup_policy": COMPACT,
        "segment_bytes": 4096,
        "index_interval_bytes": 64,
        "delete_retention_ms": 1000,
        "min_cleanable_dirty_ratio": 0.5,
    }
    settings_.update(overrides)
    return LogConfig(**settings_)


def batch(
    entries: Sequence[Entry],
    *,
    timestamp: int,
    compression: Compression = Compression.NONE,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    base_offset: int = 0,
) -> bytes:
    return build_batch(
        [
            Record(base_offset + i, timestamp + i, key, value)
            for i, (key, value) in enumerate(entries)
        ],
        base_offset=base_offset,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=transactional,
    )


@dataclass
class Model:
    """What was appended, by offset."""

    appended: dict[int, Entry] = field(default_factory=dict)

    def append(self, log: PartitionLog, entries: Sequence[Entry], **kwargs: Any) -> int:
        """Write a batch as replication does: the cleaner gets whatever a log may hold (keyless
        records from before the topic was compacted, producer batches without sequences)."""
        now = log.clock.now_ms()
        data = batch(entries, timestamp=now, base_offset=log.log_end_offset, **kwargs)
        info = log.append_as_follower(data)
        for i, entry in enumerate(entries):
            self.appended[info.base_offset + i] = entry
        return info.base_offset

    def latest(self) -> dict[bytes, tuple[int, bytes | None]]:
        latest: dict[bytes, tuple[int, bytes | None]] = {}
        for offset in sorted(self.appended):
            key, value = self.appended[offset]
            if key is not None:
                latest[key] = (offset, value)
        return latest


def read_all(log: PartitionLog) -> tuple[list[BatchHeader], list[Record]]:
    data = log.read_bytes(log.log_start_offset, max_bytes=1 << 30)
    found, end = scan_batches(data)
    assert end == len(data)
    records = [r for position, h in found for r in iter_records(data[position : position + h.size])]
    return [h for _, h in found], records


def check_against(log: PartitionLog, model: Model) -> list[Record]:
    """Offsets read back were appended (same key and value), strictly increase, and each key's
    last record read back is its latest appended one (a latest tombstone may be gone)."""
    headers, records = read_all(log)
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets))
    assert [h.base_offset for h in headers] == sorted({h.base_offset for h in headers})
    last_read: dict[bytes, Record] = {}
    for record in records:
        assert model.appended[record.offset] == (record.key, record.value)
        if record.key is not None:
            last_read[record.key] = record
    for key, (offset, value) in model.latest().items():
        got = last_read.get(key)
        if value is None and got is None:
            continue
        assert got is not None, f"key {key!r} lost its latest value"
        assert (got.offset, got.value) == (offset, value)
    return records


def log_file_bytes(log_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(log_dir.iterdir()) if p.suffix == ".log"}


def fill(log: PartitionLog, model: Model, *, batches: int, keys: int, per_batch: int = 4) -> None:
    n = 0
    for _ in range(batches):
        entries: list[Entry] = []
        for _ in range(per_batch):
            entries.append((b"k%d" % (n % keys), b"v%d" % n))
            n += 1
        model.append(log, entries)


# --- the basics ------------------------------------------------------------------------------


def test_keeps_latest_per_key_with_offsets_preserved(
    open_log: OpenLog, log_dir: Path, tmp_path: Path
) -> None:
    log = open_log(config(segment_bytes=600))
    model = Model()
    fill(log, model, batches=40, keys=7)
    assert len(log.segments) > 3
    active_before = log.active_segment.read(0, log.active_segment.size)
    cleaner = LogCleaner()
    stats = cleaner.clean_if_needed(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
    assert stats is not None
    end = log.active_segment.base_offset
    assert stats.end_offset == end
    assert stats.records_removed > 0
    records = check_against(log, model)
    # Below the end of the pass, exactly the latest record of each key; everything after it.
    latest_below = {
        key: offset for offset, (key, _) in sorted(model.appended.items()) if offset < end
    }
    expected = sorted(set(latest_below.values())) + [o for o in model.appended if o >= end]
    assert [r.offset for r in records] == expected
    assert log.active_segment.read(0, log.active_segment.size) == active_before
    # The checkpoint remembers where the dirty part starts; nothing more to do.
    assert read_offset_checkpoint(tmp_path / CLEANER_OFFSET_CHECKPOINT) == {
        TopicPartition("orders", 0): end
    }
    assert cleaner.clean_if_needed(log, now_ms=log.clock.now_ms(), high_watermark=10**9) is None
    # Reading from an offset that went reads from the next one kept.
    gone = next(o for o in range(end) if o not in set(expected))
    data = log.read_bytes(gone, max_bytes=1)
    assert next(iter_records(data)).offset > gone


def test_second_pass_uses_the_checkpoint(open_log: OpenLog, tmp_path: Path) -> None:
    log = open_log(config(segment_bytes=600))
    model = Model()
    fill(log, model, batches=30, keys=5)
    cleaner = LogCleaner()
    first = cleaner.clean(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
    fill(log, model, batches=30, keys=5)
    second = LogCleaner().clean_if_needed(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
    assert second is not None
    assert second.first_dirty_offset == first.end_offset  # read back from the file
    check_against(log, model)
    _, records = read_all(log)
    below = [r for r in records if r.offset < second.end_offset]
    assert len(below) == len({r.key for r in below}) == 5


def test_group_segments_by_size(open_log: OpenLog) -> None:
    log = open_log(config(segment_bytes=10_000))
    model = Model()
    for _ in range(6):
        fill(log, model, batches=2, keys=3)
        log.roll()
    segments = log.segments[:-1]
    size = segments[0].size
    groups = group_segments_by_size(
        segments, max_size=2 * size, max_index_size=10**6, end_offset=log.log_end_offset
    )
    assert [len(g) for g in groups] == [2, 2, 2]
    groups = group_segments_by_size(
        segments, max_size=10**6, max_index_size=10**6, end_offset=log.log_end_offset
    )
    assert [len(g) for g in groups] == [6]
    stats = LogCleaner().clean(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
    assert (stats.segments_cleaned, stats.segments_written) == (6, 1)
    assert len(log.segments) == 2
    check_against(log, model)


# --- tombstones ------------------------------------------------------------------------------


def test_tombstones_kept_until_the_delete_horizon(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(config(delete_retention_ms=1000))
    model = Model()
    model.append(log, [(b"a", b"1"), (b"b", b"1")])
    model.append(log, [(b"a", None), (b"c", b"1")])
    log.roll()
    model.append(log, [(b"d", b"1")])
    cleaner = LogCleaner()
    first = cleaner.clean_if_needed(log, now_ms=clock.now_ms(), high_watermark=10**9)
    assert first is not None and first.tombstones_removed == 0
    headers, records = read_all(log)
    assert [(r.key, r.value) for r in records] == [
        (b"b", b"1"),
        (b"a", None),
        (b"c", b"1"),
        (b"d", b"1"),
    ]
    stamped = headers[1]
    assert stamped.attributes & DELETE_HORIZON_FLAG
    assert stamped.base_timestamp == clock.now_ms() + 1000
    assert (stamped.base_offset, stamped.last_offset) == (2, 3)
    # Record timestamps survive the horizon taking the batch's base timestamp.
    assert [r.timestamp for r in records[1:3]] == [clock.now_ms(), clock.now_ms() + 1]
    clock.advance(999)
    assert cleaner.needs_cleaning(log, now_ms=clock.now_ms(), high_watermark=10**9) is None
    clock.advance(1)
    # No dirty byte at all: the expired horizon alone makes the log cleanable.
    assert LogCleaner().needs_cleaning(log, now_ms=clock.now_ms(), high_watermark=10**9)
    second = cleaner.clean_if_needed(log, now_ms=clock.now_ms(), high_watermark=10**9)
    assert second is not None and second.tombstones_removed == 1
    _, records = read_all(log)
    assert [(r.key, r.value) for r in records] == [(b"b", b"1"), (b"c", b"1"), (b"d", b"1")]
    check_against(log, model)
    assert cleaner.needs_cleaning(log, now_ms=clock.now_ms() + 10**6, high_watermark=10**9) is None


def test_tombstone_superseding_older_values(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(config(delete_retention_ms=0, segment_bytes=300))
    model = Model()
    for i in range(10):
        model.append(log, [(b"x", b"v%d" % i), (b"y", b"w%d" % i)])
    model.append(log, [(b"x", None)])
    log.roll()
    cleaner = LogCleaner()
    cleaner.clean(log, now_ms=clock.now_ms(), high_watermark=10**9)
    _, records = read_all(log)
    assert [(r.key, r.value) for r in records] == [(b"y", b"w9"), (b"x", None)]
    clock.advance(1)
    cleaner.clean(log, now_ms=clock.now_ms(), high_watermark=10**9)
    _, records = read_all(log)
    assert [(r.key, r.value) for r in records] == [(b"y", b"w9")]
    check_against(log, model)


def test_transactional_tombstones_never_expire(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(config(delete_retention_ms=0))
    model = Model()
    model.append(log, [(b"k", b"old")])
    model.append(log, [(b"k", None)], producer_id=3, producer_epoch=0, transactional=True)
    log.roll()
    cleaner = LogCleaner()
    cleaner.clean(log, now_ms=clock.now_ms(), high_watermark=10**9)
    # Undecided: nothing of the transaction, nor after it, is cleaned.
    _, records = read_all(log)
    assert [(r.key, r.value) for r in records] == [(b"k", b"old"), (b"k", None)]
    log.append_txn_marker(producer_id=3, producer_epoch=0, commit=True, coordinator_epoch=0)
    log.roll()
    for _ in range(3):
        cleaner.clean(log, now_ms=clock.now_ms(), high_watermark=10**9)
        clock.advance(10)
    # Committed: the tombstone supersedes the old value, and stays (strom keeps more than Kafka).
    _, records = read_all(log)
    assert [(r.key, r.value) for r in records if r.key == b"k"] == [(b"k", None)]


# --- batches ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
)
def test_compressed_batches_are_recompressed_with_their_codec(
    open_log: OpenLog, codec: Compression
) -> None:
    log = open_log(config())
    model = Model()
    entries: list[Entry] = [(b"a", b"1" * 50), (b"b", b"2" * 50), (b"a", b"3" * 50)]
    model.append(log, [*entries, (b"c", b"4" * 50), (b"b", b"5" * 50)], compression=codec)
    model.append(log, [(b"d", b"6" * 50), (b"e", b"7" * 50)], compression=codec)
    log.append(batch([(b"z", b"keep")], timestamp=0))  # a batch to stay as it is
    untouched = log.read_bytes(5, max_bytes=1)
    log.roll()
    LogCleaner().clean(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
    headers, records = read_all(log)
    assert [h.compression for h in headers] == [codec, codec, Compression.NONE]
    assert [(h.base_offset, h.last_offset, h.record_count) for h in headers] == [
        (0, 4, 3),
        (5, 6, 2),
        (7, 7, 1),
    ]
    assert [r.offset for r in records] == [2, 3, 4, 5, 6, 7]
    assert log.read_bytes(5, max_bytes=1) == untouched  # copied byte for byte
    model.appended[7] = (b"z", b"keep")
    check_against(log, model)


def test_rewritten_batch_keeps_its_header_fields(open_log: OpenLog) -> None:
    log = open_log(config(message_timestamp_type=LOG_APPEND_TIME))
    produced = batch(
        [(b"a", b"1"), (b"a", b"2"), (b"b", b"3")],
        timestamp=5,
        producer_id=42,
        producer_epoch=3,
        base_sequence=17,
    )
    log.append(produced, leader_epoch=9)
    before = read_all(log)[0][0]
    log.append(
        batch([(b"b", b"4")], timestamp=5, producer_id=42, producer_epoch=3, base_sequence=20)
    )
    log.roll()
    LogCleaner().clean(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
    headers, records = read_all(log)
    after = headers[0]
    assert after.record_count == 1 and records[0].offset == 1
    for name in (
        "base_offset",
        "last_offset_delta",
        "partition_leader_epoch",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "max_timestamp",
    ):
        assert getattr(after, name) == getattr(before, name), name
    assert after.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert after.last_sequence == before.last_sequence


def test_producer_batches_left_empty_are_kept(open_log: OpenLog) -> None:
    log = open_log(config())
    model = Model()
    model.append(log, [(b"x", b"1")], producer_id=7, producer_epoch=1, base_sequence=0)
    model.append(
        log, [(b"y", b"1"), (b"x", b"2")], producer_id=7, producer_epoch=1, base_sequence=1
    )
    model.append(log, [(b"z", b"1")])
    model.append(log, [(b"x", b"3"), (b"y", b"3"), (b"z", b"3")])
    log.roll()
    stats = LogCleaner().clean(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
    headers, _ = read_all(log)
    # The producer's earlier batch and the batch without a producer go; its last batch stays,
    # emptied, with its last offset and sequence, so producer state can be rebuilt.
    assert [(h.base_offset, h.last_offset, h.record_count) for h in headers] == [
        (1, 2, 0),
        (4, 6, 3),
    ]
    empty = headers[0]
    assert (empty.producer_id, empty.producer_epoch, empty.base_sequence) == (7, 1, 1)
    assert (empty.compression, empty.last_sequence) == (Compression.NONE, 2)
    assert (stats.batches_removed, stats.batches_emptied) == (2, 1)
    check_against(log, model)
    # Once the producer writes again, its emptied batch is no longer its last: it goes.
    model.append(log, [(b"w", b"1")], producer_id=7, producer_epoch=1, base_sequence=3)
    log.roll()
    LogCleaner().clean(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
    headers, _ = read_all(log)
    assert [(h.base_offset, h.record_count) for h in headers] == [(4, 3), (7, 1)]
    check_against(log, model)


def test_records_without_a_key_are_dropped(open_log: OpenLog) -> None:
    log = open_log(config())
    model = Model()
    model.append(log, [(None, b"a"), (b"k", b"1"), (None, b"b")])
    log.roll()
    model.append(log, [(None, b"c")])
    stats = LogCleaner().clean(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
    assert stats.invalid_records == 2
    _, records = read_all(log)
    assert [(r.key, r.value) for r in records] == [(b"k", b"1"), (None, b"c")]


def test_control_batches_are_copied(open_log: OpenLog) -> None:
    log = open_log(config())
    marker = build_control_batch(
        ControlRecordType.COMMIT, producer_id=5, producer_epoch=0, coordinator_epoch=1, timestamp=1
    )
    log.append(batch([(b"k", b"1")], timestamp=1, producer_id=5, producer_epoch=0, base_sequence=0))
    log.append(marker, origin=AppendOrigin.COORDINATOR)
    log.append(batch([(b"k", b"2")], timestamp=1))
    log.roll()
    LogCleaner().clean(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
    headers, _ = read_all(log)
    assert [(h.base_offset, h.record_count, h.is_control) for h in headers] == [
        (0, 0, False),
        (1, 1, True),
        (2, 1, False),
    ]


# --- what may be cleaned ---------------------------------------------------------------------


def test_the_active_segment_is_never_touched(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(config())
    model = Model()
    fill(log, model, batches=10, keys=2)
    assert len(log.segments) == 1
    before = log_file_bytes(log_dir)
    stats = LogCleaner().clean(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
    assert (stats.end_offset, stats.segments_written, stats.records_read) == (0, 0, 0)
    assert log_file_bytes(log_dir) == before


def test_nothing_at_or_above_the_high_watermark_segment(open_log: OpenLog) -> None:
    log = open_log(config())
    model = Model()
    fill(log, model, batches=3, keys=2)
    log.roll()
    high_watermark = log.log_end_offset + 2
    fill(log, model, batches=3, keys=2)
    log.roll()
    fill(log, model, batches=1, keys=2)
    stats = LogCleaner().clean(log, now_ms=log.clock.now_ms(), high_watermark=high_watermark)
    assert stats.end_offset == log.segments[1].base_offset == 12
    _, records = read_all(log)
    assert len([r for r in records if r.offset < 12]) == 2
    assert len([r for r in records if r.offset >= 12]) == 16


def test_min_compaction_lag(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(config(min_compaction_lag_ms=10_000))
    model = Model()
    fill(log, model, batches=5, keys=2)
    log.roll()
    fill(log, model, batches=1, keys=2)
    cleaner = LogCleaner()
    assert cleaner.needs_cleaning(log, now_ms=clock.now_ms(), high_watermark=10**9) is None
    assert cleaner.clean(log, now_ms=clock.now_ms(), high_watermark=10**9).end_offset == 0
    clock.advance(10_010)
    stats = cleaner.clean_if_needed(log, now_ms=clock.now_ms(), high_watermark=10**9)
    assert stats is not None and stats.end_offset == 20
    check_against(log, model)


def test_dirty_ratio_and_max_compaction_lag(
    open_log: OpenLog, clock: ManualClock, tmp_path: Path
) -> None:
    log = open_log(config(min_cleanable_dirty_ratio=0.5, segment_bytes=1000))
    model = Model()
    fill(log, model, batches=20, keys=50)  # unique keys: cleaning removes nothing
    log.roll()
    cleaner = LogCleaner()
    assert cleaner.clean_if_needed(log, now_ms=clock.now_ms(), high_watermark=10**9)
    fill(log, model, batches=2, keys=50)
    log.roll()
    to_clean = cleaner.log_to_clean(log, now_ms=clock.now_ms(), high_watermark=10**9)
    assert 0 < to_clean.cleanable_ratio < 0.5
    assert cleaner.clean_if_needed(log, now_ms=clock.now_ms(), high_watermark=10**9) is None
    fill(log, model, batches=30, keys=50)
    log.roll()
    assert cleaner.clean_if_needed(log, now_ms=clock.now_ms(), high_watermark=10**9)
    # A ratio of 1 is never passed; max.compaction.lag.ms forces the pass instead.
    lagging = PartitionLog.open(
        tmp_path / "lagging-0",
        config=config(min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=5000),
        clock=clock,
    )
    fill(lagging, Model(), batches=2, keys=1)
    lagging.roll()
    assert cleaner.needs_cleaning(lagging, now_ms=clock.now_ms(), high_watermark=10**9) is None
    clock.advance(5010)
    forced = cleaner.needs_cleaning(lagging, now_ms=clock.now_ms(), high_watermark=10**9)
    assert forced is not None and forced.needs_compaction_now
    stats = cleaner.clean_if_needed(lagging, now_ms=clock.now_ms(), high_watermark=10**9)
    assert stats is not None and stats.records_removed == 7
    assert cleaner.needs_cleaning(lagging, now_ms=clock.now_ms(), high_watermark=10**9) is None
    lagging.close()


def test_compact_delete_also_applies_retention(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(config(cleanup_policy=frozenset({"compact", "delete"}), retention_ms=60_000))
    model = Model()
    fill(log, model, batches=3, keys=2)
    log.roll()
    clock.advance(120_000)
    fill(log, model, batches=3, keys=2)
    log.roll()
    fill(log, model, batches=1, keys=2)
    stats = LogCleaner().clean_if_needed(log, now_ms=clock.now_ms(), high_watermark=10**9)
    assert log.log_start_offset == 12
    assert stats is not None and stats.first_dirty_offset == 12
    _, records = read_all(log)
    assert [r.offset for r in records] == [22, 23, 24, 25, 26, 27]


def test_a_small_offset_map_takes_several_passes(open_log: OpenLog, tmp_path: Path) -> None:
    log = open_log(config(segment_bytes=800))
    model = Model()
    fill(log, model, batches=30, keys=20)
    log.roll()
    cleaner = LogCleaner(max_map_entries=6)
    ends: list[int] = []
    while True:
        stats = cleaner.clean(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
        check_against(log, model)
        if ends and stats.end_offset == ends[-1]:
            break
        ends.append(stats.end_offset)
    assert len(ends) > 3 and ends == sorted(ends) and ends[-1] == 120
    _, records = read_all(log)
    assert len(records) == 20


def test_clean_logs_skips_and_marks_uncleanable(
    open_log: OpenLog, log_dir: Path, tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(config())
    fill(log, Model(), batches=4, keys=2)
    log.roll()
    other = PartitionLog.open(tmp_path / "orders-1", config=config(), clock=clock)
    fill(other, Model(), batches=4, keys=2)
    other.roll()
    plain = PartitionLog.open(tmp_path / "plain-0", config=LogConfig(), clock=clock)
    fill(plain, Model(), batches=4, keys=2)
    plain.roll()
    # Corrupt one record of orders-1's inactive segment: its CRC no longer matches.
    path = other.segments[0].log_path
    raw = bytearray(path.read_bytes())
    raw[70] ^= 0xFF
    path.write_bytes(bytes(raw))
    logs = {
        TopicPartition("orders", 0): log,
        TopicPartition("orders", 1): other,
        TopicPartition("plain", 0): plain,
    }
    hws = dict.fromkeys(logs, 10**9)
    cleaner = LogCleaner()
    done = cleaner.clean_logs(logs, now_ms=clock.now_ms(), high_watermarks=hws)
    assert set(done) == {TopicPartition("orders", 0)}
    assert cleaner.uncleanable == {other.directory}
    assert not any(".cleaned" in p.name for p in other.directory.iterdir())
    assert cleaner.clean_logs(logs, now_ms=clock.now_ms(), high_watermarks=hws) == {}
    other.close()
    plain.close()


# --- crashes during the swap -----------------------------------------------------------------


class Crash(BaseException):
    """A simulated power cut (BaseException: nothing catches it on the way out)."""


CrashSetup = Callable[[pytest.MonkeyPatch], None]


def _crash_when_renaming(old: str, *, after: bool) -> CrashSetup:
    def setup(monkeypatch: pytest.MonkeyPatch) -> None:
        real = LogSegment.change_file_suffixes

        def change(self: LogSegment, old_suffix: str, new_suffix: str) -> None:
            if old_suffix == old and not after:
                raise Crash
            real(self, old_suffix, new_suffix)
            if old_suffix == old and after:
                raise Crash

        monkeypatch.setattr(LogSegment, "change_file_suffixes", change)

    return setup


def _crash_after_deleting(count: int) -> CrashSetup:
    def setup(monkeypatch: pytest.MonkeyPatch) -> None:
        real_change, real_delete = LogSegment.change_file_suffixes, LogSegment.delete
        swapping: list[int] = []

        def change(self: LogSegment, old_suffix: str, new_suffix: str) -> None:
            real_change(self, old_suffix, new_suffix)
            if new_suffix == ".swap":
                swapping.append(0)

        def delete(self: LogSegment) -> None:
            real_delete(self)
            if swapping and self.suffix == "":
                swapping[0] += 1
                if swapping[0] == count:
                    raise Crash

        monkeypatch.setattr(LogSegment, "change_file_suffixes", change)
        monkeypatch.setattr(LogSegment, "delete", delete)

    return setup


def _crash_in_second_group(monkeypatch: pytest.MonkeyPatch) -> None:
    real = LogSegment.change_file_suffixes
    renamed: list[str] = []

    def change(self: LogSegment, old_suffix: str, new_suffix: str) -> None:
        if old_suffix == ".cleaned" and renamed.count(".cleaned") == 1:
            real(self, old_suffix, new_suffix)
            raise Crash
        renamed.append(old_suffix)
        real(self, old_suffix, new_suffix)

    monkeypatch.setattr(LogSegment, "change_file_suffixes", change)


CRASHES: dict[str, tuple[CrashSetup, str, Callable[[int], bool]]] = {
    # step: (crash, the leftover suffix, how many original .log files may be gone)
    "cleaned-left": (_crash_when_renaming(".cleaned", after=False), ".cleaned", lambda n: n == 0),
    "swap-with-old-present": (
        _crash_when_renaming(".cleaned", after=True),
        ".swap",
        lambda n: n == 0,
    ),
    "swap-one-old-deleted": (_crash_after_deleting(1), ".swap", lambda n: n == 1),
    "swap-old-deleted": (_crash_when_renaming(".swap", after=False), ".swap", lambda n: n >= 2),
    "second-group-swap": (_crash_in_second_group, ".swap", lambda n: n == 1),  # first swapped
}


def _log_names(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir() if p.name.endswith(".log")}


@pytest.mark.parametrize("step", list(CRASHES))
def test_crash_during_the_swap_loses_nothing(
    open_log: OpenLog,
    log_dir: Path,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
    step: str,
) -> None:
    settings_ = config(segment_bytes=700, delete_retention_ms=0)
    log = open_log(settings_)
    model = Model()
    for round_ in range(4):
        fill(log, model, batches=2, keys=5)
        model.append(log, [(b"k1", None), (b"t%d" % round_, None)])
        log.roll()  # small segments: two of them make one cleaned segment
    fill(log, model, batches=2, keys=5)
    groups = group_segments_by_size(
        log.segments[:-1], max_size=700, max_index_size=10**6, end_offset=log.log_end_offset
    )
    assert [len(group) for group in groups] == [2, 2]
    before = _log_names(log_dir)
    crash, leftover, gone = CRASHES[step]
    with monkeypatch.context() as patch:
        crash(patch)
        with pytest.raises(Crash):
            LogCleaner().clean(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
    assert any(p.name.endswith(".log" + leftover) for p in log_dir.iterdir())
    assert gone(len(before - _log_names(log_dir)))
    log.close_without_flush()
    again = open_log(settings_)  # unclean start: the loader finishes or undoes the swap
    assert not any(p.name.endswith((".cleaned", ".swap", ".deleted")) for p in log_dir.iterdir())
    check_against(again, model)
    clock.advance(1)
    cleaner = LogCleaner()
    for _ in range(2):
        cleaner.clean(again, now_ms=clock.now_ms(), high_watermark=10**9)
        check_against(again, model)
    _, records = read_all(again)
    below = [r for r in records if r.offset < again.active_segment.base_offset]
    assert len(below) == len({r.key for r in below}) == 4  # k0, k2, k3, k4: k1 deleted


# --- property: random appends and cleanings against a model ----------------------------------

KEYS = [b"a", b"b", b"c", b"d", b"e", None]
CODECS = list(Compression)


@st.composite
def entries_strategy(draw: st.DrawFn) -> list[Entry]:
    count = draw(st.integers(1, 6))
    return [
        (
            draw(st.sampled_from(KEYS)),
            draw(st.one_of(st.none(), st.binary(min_size=0, max_size=12))),
        )
        for _ in range(count)
    ]


class CleanerMachine(RuleBasedStateMachine):
    """Appends (keys, tombstones, codecs, producers), rolls, cleanings at random points,
    clock moves and restarts, checked against what was appended."""

    def __init__(self) -> None:
        super().__init__()
        self.root = scratch_directory("strom-cleaner-")
        self.clock = ManualClock()
        self.config = config(segment_bytes=500, delete_retention_ms=100)
        self.log = self._open()
        self.model = Model()
        self.cleaner = LogCleaner(max_map_entries=4)

    def _open(self) -> PartitionLog:
        return PartitionLog.open(self.root / "topic-0", config=self.config, clock=self.clock)

    @rule(
        batches=st.lists(
            st.tuples(
                entries_strategy(),
                st.sampled_from(CODECS),
                st.sampled_from([-1, -1, 1, 2]),
                st.booleans(),
            ),
            min_size=1,
            max_size=4,
        )
    )
    def append(self, batches: list[tuple[list[Entry], Compression, int, bool]]) -> None:
        for entries, codec, producer, transactional in batches:
            self.model.append(
                self.log,
                entries,
                compression=codec,
                producer_id=producer,
                producer_epoch=0 if producer >= 0 else -1,
                transactional=transactional and producer >= 0,
            )

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(ms=st.sampled_from([1, 50, 100, 1000]))
    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule(forced=st.booleans(), lag=st.sampled_from([0, 0, 0, 3, 20]))
    def clean(self, forced: bool, lag: int) -> None:
        high_watermark = max(self.log.log_end_offset - lag, 0)
        now = self.clock.now_ms()
        stats: CleanStats | None
        if forced:
            stats = self.cleaner.clean(self.log, now_ms=now, high_watermark=high_watermark)
        else:
            stats = self.cleaner.clean_if_needed(
                self.log, now_ms=now, high_watermark=high_watermark
            )
        if stats is not None:
            self._check_compacted_below(stats.end_offset)
            event(f"segments written: {min(stats.segments_written, 3)}")
            event(f"records removed: {stats.records_removed > 0}")
            event(f"tombstones removed: {stats.tombstones_removed > 0}")
            event(f"batches emptied: {stats.batches_emptied > 0}")

    def _check_compacted_below(self, end: int) -> None:
        """Below the end of a pass, no key twice and none missing (transactional records
        aside: they never supersede anything yet)."""
        data = self.log.read_bytes(self.log.log_start_offset, max_bytes=1 << 30)
        found, _ = scan_batches(data)
        keys: list[bytes | None] = []
        for position, header in found:
            if header.is_transactional:
                continue
            batch_ = data[position : position + header.size]
            keys += [r.key for r in iter_records(batch_) if r.offset < end]
        assert None not in keys
        assert len(keys) == len(set(keys))

    @precondition(lambda self: self.log.log_end_offset > 0)
    @rule(clean_shutdown=st.booleans())
    def restart(self, clean_shutdown: bool) -> None:
        if clean_shutdown:
            self.log.close()
        else:
            self.log.close_without_flush()
        self.log = PartitionLog.open(
            self.root / "topic-0",
            config=self.config,
            clock=self.clock,
            had_clean_shutdown=clean_shutdown,
        )
        self.cleaner = LogCleaner(max_map_entries=4)

    @invariant()
    def agrees_with_the_model(self) -> None:
        check_against(self.log, self.model)

    def teardown(self) -> None:
        self.log.close_without_flush()
        shutil.rmtree(self.root, ignore_errors=True)


CleanerMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_cleaner_against_a_model = CleanerMachine.TestCase


# --- cleaning off the owner thread (run_on_owner) --------------------------------------------


def _chosen_pass(cleaner: LogCleaner, log: PartitionLog) -> CleaningPass:
    [chosen] = cleaner.filthiest_logs(
        {TopicPartition("orders", 0): log},
        now_ms=log.clock.now_ms(),
        high_watermarks={TopicPartition("orders", 0): 10**9},
    )
    return chosen


def test_steps_that_change_the_log_run_on_the_owner(open_log: OpenLog, tmp_path: Path) -> None:
    log = open_log(config(segment_bytes=600))
    model = Model()
    fill(log, model, batches=40, keys=7)
    steps: list[str] = []

    def on_owner(step: Callable[[], None]) -> None:
        steps.append(getattr(step, "__name__", "?"))
        step()

    cleaner = LogCleaner(run_on_owner=on_owner)
    stats = cleaner.clean_chosen(_chosen_pass(cleaner, log), now_ms=log.clock.now_ms())
    assert stats is not None and stats.segments_written > 0
    # One swap per cleaned segment, then the checkpoint; nothing else touches the log.
    assert steps == ["checked"] * (stats.segments_written + 1)
    check_against(log, model)
    assert read_offset_checkpoint(tmp_path / CLEANER_OFFSET_CHECKPOINT) == {
        TopicPartition("orders", 0): stats.end_offset
    }


@pytest.mark.parametrize("change", ["delete records", "close"])
def test_a_pass_aborts_when_the_log_changed_under_it(
    open_log: OpenLog, log_dir: Path, tmp_path: Path, change: str
) -> None:
    log = open_log(config(segment_bytes=600, cleanup_policy=frozenset({"compact", "delete"})))
    model = Model()
    fill(log, model, batches=40, keys=7)
    before = [segment.base_offset for segment in log.segments]
    changed = False

    def on_owner(step: Callable[[], None]) -> None:
        nonlocal changed
        if not changed:  # what the event loop did while the worker read the segments
            changed = True
            if change == "close":
                log.close()
            else:
                log.advance_log_start_offset(log.segments[1].base_offset)
        step()

    cleaner = LogCleaner(run_on_owner=on_owner)
    assert cleaner.clean_chosen(_chosen_pass(cleaner, log), now_ms=log.clock.now_ms()) is None
    assert not cleaner.uncleanable  # aborted, not failed: the next pass starts over
    assert not (tmp_path / CLEANER_OFFSET_CHECKPOINT).exists()
    assert not [path for path in log_dir.iterdir() if ".cleaned" in path.name]
    if change == "delete records":
        assert [segment.base_offset for segment in log.segments] == before[1:]
        assert (
            LogCleaner().clean_if_needed(log, now_ms=log.clock.now_ms(), high_watermark=10**9)
            is not None
        )
