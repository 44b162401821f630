"""PartitionLog: append, read, roll, lookups, truncation, log start, flush, compaction swap."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from strom.common import ErrorCode, KafkaError
from strom.common.clock import ManualClock
from strom.protocol.batch import BatchHeader, Compression, TimestampType, rewrite_crc
from strom.protocol.records import Record, build_batch, iter_records
from strom.storage.fetch_isolation import FetchIsolation
from strom.storage.log_config import LogConfig
from strom.storage.partition_log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    UnexpectedAppendOffsetError,
)

from .batches import headers_of, make_batch, offsets_of, without_offset_and_epoch
from .conftest import OpenLog


def _dir_state(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _wrong_count(batch: bytes) -> bytes:
    copy = bytearray(batch)
    copy[57:61] = (5).to_bytes(4, "big")
    rewrite_crc(copy, 0)
    return bytes(copy)


def test_append_assigns_consecutive_offsets(open_log: OpenLog) -> None:
    log = open_log()
    first = log.append(make_batch(3))
    assert (first.base_offset, first.last_offset) == (0, 2)
    assert first.log_append_time == -1
    assert first.log_start_offset == 0
    two = make_batch(2) + make_batch(4)
    second = log.append(two, leader_epoch=7)
    assert (second.base_offset, second.last_offset) == (3, 8)
    assert [(h.base_offset, h.last_offset) for h in second.batches] == [(3, 4), (5, 8)]
    assert all(h.partition_leader_epoch == 7 for h in second.batches)
    assert log.log_end_offset == 9
    assert second.size == len(two)


def test_bytes_on_disk_are_the_bytes_produced(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    produced = [make_batch(3, value_size=50), make_batch(1), make_batch(5, timestamp=5)]
    for batch in produced:
        log.append(batch, leader_epoch=4)
    on_disk = (log_dir / "00000000000000000000.log").read_bytes()
    assert len(on_disk) == sum(map(len, produced))
    assert offsets_of(on_disk) == [(0, 2), (3, 3), (4, 8)]
    position = 0
    for batch in produced:
        stored = on_disk[position : position + len(batch)]
        assert without_offset_and_epoch(stored) == without_offset_and_epoch(batch)
        assert BatchHeader.read(stored).partition_leader_epoch == 4
        position += len(batch)


def test_append_does_not_modify_the_callers_buffer(open_log: OpenLog) -> None:
    log = open_log()
    log.append(make_batch(2))
    data = bytearray(make_batch(2))
    before = bytes(data)
    log.append(data)
    assert bytes(data) == before
    log.append(memoryview(make_batch(1)))
    assert log.log_end_offset == 5


def test_log_append_time_rewrites_timestamp_and_crc(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    info = log.append(make_batch(3, timestamp=5))
    assert info.log_append_time == clock.now_ms()
    data = log.read_bytes(0, max_bytes=10_000)
    header = headers_of(data)[0]  # headers_of validates the CRC
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == clock.now_ms()
    assert [r.timestamp for r in iter_records(data)] == [clock.now_ms()] * 3


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda b: b[:17] + bytes([b[17] ^ 1]) + b[18:], ErrorCode.corrupt_message),  # CRC
        (lambda b: b[:-3], ErrorCode.corrupt_message),  # truncated
        (lambda b: b[:16] + b"\x01" + b[17:], ErrorCode.corrupt_message),  # magic 1
        (lambda b: b + b"\x00" * 5, ErrorCode.corrupt_message),  # trailing garbage
        (_wrong_count, ErrorCode.invalid_record),  # count disagrees with offsets
    ],
)
def test_bad_batches_raise_and_leave_the_log_unchanged(
    open_log: OpenLog, log_dir: Path, mutate: object, code: ErrorCode
) -> None:
    log = open_log()
    log.append(make_batch(2))
    before = _dir_state(log_dir)
    good = make_batch(2)
    bad = mutate(good)  # type: ignore[operator]
    with pytest.raises(KafkaError) as raised:
        log.append(make_batch(1) + bad)  # a good batch first: still nothing is written
    assert raised.value.error_code == code
    assert log.log_end_offset == 2
    assert _dir_state(log_dir) == before


def test_empty_append_is_invalid_record(open_log: OpenLog) -> None:
    log = open_log()
    with pytest.raises(KafkaError) as raised:
        log.append(b"")
    assert raised.value.error_code == ErrorCode.invalid_record


def test_oversized_batch_is_message_too_large(open_log: OpenLog) -> None:
    log = open_log(LogConfig(max_message_bytes=200))
    with pytest.raises(KafkaError) as raised:
        log.append(make_batch(1, value_size=300))
    assert raised.value.error_code == ErrorCode.message_too_large
    assert log.log_end_offset == 0
    log.append(make_batch(1, value_size=10))


def test_records_larger_than_a_segment_are_refused(open_log: OpenLog) -> None:
    log = open_log(LogConfig(segment_bytes=300))
    with pytest.raises(KafkaError) as raised:
        log.append(make_batch(3, value_size=100))
    assert raised.value.error_code == ErrorCode.record_list_too_large


def _fill(log_append: object, batches: int, count: int = 3, value_size: int = 20) -> None:
    for _ in range(batches):
        log_append(make_batch(count, value_size=value_size))  # type: ignore[operator]


def test_read_at_every_offset_starts_at_the_batch_holding_it(open_log: OpenLog) -> None:
    log = open_log(LogConfig(segment_bytes=500, index_interval_bytes=100))
    _fill(log.append, 20)
    assert len(log.segments) > 3
    for offset in range(log.log_end_offset):
        data = log.read_bytes(offset, max_bytes=1)  # min_one_message: one batch
        assert offsets_of(data) == [(offset - offset % 3, offset - offset % 3 + 2)]
        big = log.read_bytes(offset, max_bytes=10**6)
        first = offsets_of(big)
        assert first[0][0] == offset - offset % 3
        assert first[-1][1] == log.log_end_offset - 1  # continues across segments
    assert log.read_bytes(log.log_end_offset, max_bytes=1000) == b""


def test_read_bounds_max_bytes_whole_batches(open_log: OpenLog) -> None:
    log = open_log()
    _fill(log.append, 5)
    size = len(make_batch(3, value_size=20))
    assert len(log.read_bytes(0, max_bytes=size * 2 + size // 2)) == 2 * size
    assert len(log.read_bytes(0, max_bytes=size * 2)) == 2 * size
    assert log.read_bytes(0, max_bytes=size - 1, min_one_message=False) == b""
    assert len(log.read_bytes(0, max_bytes=size - 1)) == size  # KIP-74
    assert len(log.read_bytes(0, max_bytes=0)) == size


def test_read_never_passes_max_offset(open_log: OpenLog) -> None:
    log = open_log()
    _fill(log.append, 4)  # batches 0-2, 3-5, 6-8, 9-11
    hw = FetchIsolation.HIGH_WATERMARK
    log.update_high_watermark(6)
    assert offsets_of(log.read_bytes(0, max_bytes=10**6, isolation=hw)) == [(0, 2), (3, 5)]
    log.update_high_watermark(8)
    assert offsets_of(log.read_bytes(0, max_bytes=10**6, isolation=hw)) == [(0, 2), (3, 5)]
    log.update_high_watermark(5)
    assert log.read_bytes(4, max_bytes=10**6, isolation=hw) == b""  # mid-batch watermark
    log.update_high_watermark(6)
    assert log.read_bytes(6, max_bytes=10**6, isolation=hw) == b""
    assert log.read_bytes(10, max_bytes=10**6, isolation=hw) == b""  # beyond it: empty
    assert len(offsets_of(log.read_bytes(0, max_bytes=10**6))) == 4  # LOG_END by default


@pytest.mark.parametrize("index_interval_bytes", [1, 4096])
def test_read_regions_end_after_the_last_whole_batch(
    open_log: OpenLog, index_interval_bytes: int
) -> None:
    """Kafka's fetch would add the first 7 bytes of the third batch (which clients drop)."""
    log = open_log(LogConfig(index_interval_bytes=index_interval_bytes))
    _fill(log.append, 4)  # batches 0-2, 3-5, 6-8, 9-11
    size = len(make_batch(3, value_size=20))
    everything = log.read_bytes(0, max_bytes=10**6)
    with log.read(0, max_bytes=2 * size + 7) as result:  # room for two batches and 7 bytes
        assert result.read() == everything[: 2 * size]
        assert result.next_offset == 6  # the offset after the last whole batch
    assert log.read_bytes(0, max_bytes=2 * size + 7) == everything[: 2 * size]
    with log.read(4, max_bytes=size - 1) as result:  # KIP-74: the first batch comes whole
        assert (result.read(), result.next_offset) == (everything[size : 2 * size], 6)
    with log.read(4, max_bytes=size - 1, min_one_message=False) as result:
        assert (result.regions, result.next_offset) == ((), 4)
    log.update_high_watermark(7)
    hw = FetchIsolation.HIGH_WATERMARK
    with log.read(0, max_bytes=10**6, isolation=hw) as result:  # up to where 6-8 starts
        assert (result.read(), result.next_offset) == (everything[: 2 * size], 6)
    with log.read(0, max_bytes=3 * size - 1, isolation=hw) as result:  # limit before bytes
        assert (result.read(), result.next_offset) == (everything[: 2 * size], 6)


def test_read_out_of_range(open_log: OpenLog) -> None:
    log = open_log()
    _fill(log.append, 2)
    for offset in (-1, 7):
        with pytest.raises(KafkaError) as raised:
            log.read(offset, max_bytes=100)
        assert raised.value.error_code == ErrorCode.offset_out_of_range
    log.advance_log_start_offset(4)
    with pytest.raises(KafkaError):
        log.read_bytes(3, max_bytes=100)
    assert offsets_of(log.read_bytes(4, max_bytes=100)) == [(3, 5)]


def test_read_returns_file_regions_that_outlive_their_segment(
    open_log: OpenLog, clock: ManualClock
) -> None:
    log = open_log(LogConfig(segment_bytes=300, retention_ms=1000))
    _fill(log.append, 6)
    expected = log.read_bytes(0, max_bytes=10**6)
    result = log.read(0, max_bytes=10**6)
    assert result.next_offset == log.log_end_offset
    assert len(result.regions) == len(log.segments)  # a read goes on into later segments
    assert result.read() == expected
    region = result.regions[0]
    assert (region.position, region.length) == (0, log.segments[0].size)
    expected = expected[: region.length]
    clock.advance(10_000)
    assert log.delete_old_segments(clock.now_ms(), log.log_end_offset) >= 1
    assert not region.path.exists()
    assert region.read() == expected  # the region's own descriptor keeps the data
    result.close()
    assert region.closed
    with pytest.raises(ValueError, match="closed"):
        region.fileno()


def test_read_result_as_context_manager(open_log: OpenLog) -> None:
    log = open_log()
    _fill(log.append, 2)
    with log.read(0, max_bytes=10**6) as result:
        assert result.size == len(result.read()) == 2 * len(make_batch(3, value_size=20))
    assert all(region.closed for region in result.regions)


def test_roll_by_size(open_log: OpenLog, log_dir: Path) -> None:
    size = len(make_batch(3, value_size=20))
    log = open_log(LogConfig(segment_bytes=size * 3))
    _fill(log.append, 7)
    assert [s.base_offset for s in log.segments] == [0, 9, 18]
    assert [s.size for s in log.segments] == [size * 3, size * 3, size]
    names = sorted(p.name for p in log_dir.iterdir())
    assert "00000000000000000009.log" in names and "00000000000000000018.timeindex" in names
    # rolled segments' indexes are trimmed; the active one's preallocated
    assert (log_dir / "00000000000000000000.index").stat().st_size < 100
    assert (log_dir / "00000000000000000018.index").stat().st_size == 10 * 1024 * 1024
    assert log.recovery_point == 18  # a roll flushes the segments before it


def test_roll_by_time_in_record_time(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(LogConfig(segment_ms=1000))
    now = clock.now_ms()
    log.append(make_batch(1, timestamp=now))
    log.append(make_batch(1, timestamp=now + 1000))  # exactly segment.ms: no roll
    assert len(log.segments) == 1
    log.append(make_batch(1, timestamp=now + 1001))
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_by_time_falls_back_to_the_clock(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(LogConfig(segment_ms=1000))
    log.append(make_batch(1, timestamp=-1))
    clock.advance(999)
    log.append(make_batch(1, timestamp=-1))
    assert len(log.segments) == 1
    clock.advance(2)
    log.append(make_batch(1, timestamp=-1))
    assert len(log.segments) == 2


def test_roll_jitter_is_stable_and_bounded(open_log: OpenLog) -> None:
    log = open_log(LogConfig(segment_ms=1000, segment_jitter_ms=300))
    jitters = {log.roll_jitter_ms(base) for base in range(50)}
    assert all(0 <= j < 300 for j in jitters) and len(jitters) > 10
    assert log.roll_jitter_ms(7) == log.roll_jitter_ms(7)


def test_roll_when_index_full(open_log: OpenLog) -> None:
    # 3 offset index entries fit; the time index (2 entries, one reserved) fills first
    log = open_log(LogConfig(index_interval_bytes=0, segment_index_bytes=24))
    for i in range(8):
        log.append(make_batch(1, timestamp=1000 + i))
    assert len(log.segments) > 2
    assert all(s.offset_index.entries <= 3 for s in log.segments)


def test_explicit_roll(open_log: OpenLog) -> None:
    log = open_log()
    assert log.roll() is log.active_segment  # empty: nothing to do
    log.append(make_batch(2))
    segment = log.roll()
    assert segment.base_offset == 2 and len(log.segments) == 2
    log.append(make_batch(1))
    assert log.active_segment.next_offset == 3


def test_index_entries_every_interval(open_log: OpenLog) -> None:
    size = len(make_batch(1, value_size=100))
    log = open_log(LogConfig(index_interval_bytes=size * 2))
    for i in range(10):
        log.append(make_batch(1, value_size=100, timestamp=1000 + i))
    index = log.active_segment.offset_index
    # Kafka: an entry when more than interval bytes were written since the last
    entries = [index.entry(n) for n in range(index.entries)]
    assert [e.offset for e in entries] == [3, 6, 9]
    assert [e.position for e in entries] == [3 * size, 6 * size, 9 * size]
    time_index = log.active_segment.time_index
    assert [time_index.entry(n) for n in range(time_index.entries)] == [
        (1003, 3),
        (1006, 6),
        (1009, 9),
    ]


def test_offset_for_timestamp(open_log: OpenLog) -> None:
    log = open_log(LogConfig(segment_bytes=600, index_interval_bytes=50))
    # offset o has timestamp 1000 + 10*o, three records per batch
    for b in range(12):
        log.append(make_batch(3, timestamps=[1000 + 10 * (3 * b + i) for i in range(3)]))
    assert len(log.segments) > 2
    for target in range(990, 1000 + 10 * 36 + 5, 3):
        expected = max(0, -(-(target - 1000) // 10))
        found = log.offset_for_timestamp(target)
        if expected >= 36:
            assert found is None
        else:
            assert found == (expected, 1000 + 10 * expected), target


def test_offset_for_timestamp_unordered_timestamps(open_log: OpenLog) -> None:
    log = open_log(LogConfig(index_interval_bytes=0))
    log.append(make_batch(3, timestamps=[100, 500, 200]))
    log.append(make_batch(2, timestamps=[300, 400]))
    assert log.offset_for_timestamp(150) == (1, 500)
    assert log.offset_for_timestamp(450) == (1, 500)
    assert log.offset_for_timestamp(501) is None
    assert log.offset_for_timestamp(EARLIEST_TIMESTAMP) == (0, -1)
    assert log.offset_for_timestamp(LATEST_TIMESTAMP) == (5, -1)
    assert log.offset_for_timestamp(MAX_TIMESTAMP) == (1, 500)


def test_offset_for_timestamp_respects_log_start(open_log: OpenLog) -> None:
    log = open_log()
    log.append(make_batch(3, timestamps=[100, 900, 200]))
    log.append(make_batch(2, timestamps=[300, 400]))
    log.advance_log_start_offset(2)
    assert log.offset_for_timestamp(0) == (2, 200)
    assert log.offset_for_timestamp(250) == (3, 300)
    assert log.offset_of_max_timestamp() == (4, 400)


def test_offset_for_timestamp_in_compressed_batches(open_log: OpenLog) -> None:
    log = open_log()
    records = [Record(i, 1000 + 7 * i, None, b"v%d" % i) for i in range(20)]
    log.append(build_batch(records[:10], compression=Compression.GZIP))
    renumbered = [Record(r.offset - 10, r.timestamp, r.key, r.value) for r in records[10:]]
    log.append(build_batch(renumbered, compression=Compression.GZIP))
    assert log.offset_for_timestamp(1000 + 7 * 13 - 3) == (13, 1000 + 7 * 13)
    assert log.offset_of_max_timestamp() == (19, 1000 + 7 * 19)


def test_max_timestamp_across_segments(open_log: OpenLog) -> None:
    log = open_log(LogConfig(segment_bytes=300))
    for ts in [[5, 9, 1], [50, 70, 60], [20, 70, 10], [3, 4, 2]]:
        log.append(make_batch(3, timestamps=ts))
    assert len(log.segments) > 1
    assert log.offset_of_max_timestamp() == (4, 70)


def test_truncate_to(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(LogConfig(segment_bytes=500))
    _fill(log.append, 12)
    assert len(log.segments) >= 3
    boundary = log.segments[1].base_offset + 3  # a batch boundary inside segment 1
    log.truncate_to(boundary)
    assert log.log_end_offset == boundary
    assert len(log.segments) == 2
    assert offsets_of(log.read_bytes(0, max_bytes=10**6))[-1] == (boundary - 3, boundary - 1)
    log.truncate_to(boundary + 100)  # above the end: nothing
    assert log.log_end_offset == boundary
    log.truncate_to(4)  # inside the batch 3-5: the whole batch goes
    assert log.log_end_offset == 3
    assert offsets_of(log.read_bytes(0, max_bytes=10**6)) == [(0, 2)]
    info = log.append(make_batch(2))
    assert info.base_offset == 3
    assert sorted(p.name for p in log_dir.iterdir() if p.suffix == ".log") == [
        "00000000000000000000.log"
    ]


def test_truncate_below_first_segment_starts_afresh(open_log: OpenLog) -> None:
    log = open_log()
    log.truncate_fully_and_start_at(100)
    _fill(log.append, 2)
    assert (log.log_start_offset, log.log_end_offset) == (100, 106)
    log.truncate_to(50)
    assert (log.log_start_offset, log.log_end_offset) == (50, 50)
    assert [s.base_offset for s in log.segments] == [50]
    assert log.append(make_batch(1)).base_offset == 50


def test_advance_log_start_offset(open_log: OpenLog) -> None:
    log = open_log(LogConfig(segment_bytes=300))
    _fill(log.append, 6)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 3
    assert not log.advance_log_start_offset(0)
    assert log.advance_log_start_offset(bases[1] + 1)
    assert log.log_start_offset == bases[1] + 1
    assert log.segments[0].base_offset == bases[1]  # wholly-below segments deleted
    with pytest.raises(KafkaError) as raised:
        log.update_high_watermark(9)
        log.advance_log_start_offset(10, within_high_watermark=True)
    assert raised.value.error_code == ErrorCode.offset_out_of_range
    with pytest.raises(KafkaError):
        log.advance_log_start_offset(log.log_end_offset + 1)
    assert log.advance_log_start_offset(log.log_end_offset)
    assert log.read_bytes(log.log_end_offset, max_bytes=100) == b""
    assert len(log.segments) == 1  # the active segment stays


def test_follower_append_keeps_offsets(open_log: OpenLog) -> None:
    leader = make_batch(3, base_offset=0, leader_epoch=5) + make_batch(2, base_offset=3)
    log = open_log()
    info = log.append_as_follower(leader)
    assert (info.base_offset, info.last_offset) == (0, 4)
    assert log.read_bytes(0, max_bytes=10**6) == leader  # byte for byte, epoch kept
    with pytest.raises(UnexpectedAppendOffsetError) as raised:
        log.append_as_follower(make_batch(1, base_offset=4))
    assert (raised.value.first_offset, raised.value.log_end_offset) == (4, 5)
    log.append_as_follower(make_batch(1, base_offset=9))  # a compaction gap is fine
    assert log.log_end_offset == 10
    with pytest.raises(KafkaError):
        log.append_as_follower(make_batch(1, base_offset=20) + make_batch(1, base_offset=20))
    assert log.log_end_offset == 10


def test_flush_policy(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log()
    _fill(log.append, 3)
    assert log.recovery_point == 0  # by default nothing is fsynced on append
    log.flush(up_to=3)
    assert log.recovery_point == 3
    log.flush()
    assert log.recovery_point == 9
    log.update_config(LogConfig(flush_messages=5))
    _fill(log.append, 1)
    assert log.recovery_point == 9
    _fill(log.append, 1)
    assert log.recovery_point == 15
    log.update_config(LogConfig(flush_ms=1000))
    _fill(log.append, 1)
    assert log.recovery_point == 15
    clock.advance(1000)
    assert log.maybe_flush()
    assert log.recovery_point == 18


def test_replace_segments_with_a_cleaned_one(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(LogConfig(segment_bytes=300))
    _fill(log.append, 6)
    old = list(log.segments[:2])
    assert len(log.segments) > 2
    cleaned = log.new_cleaned_segment(old[0].base_offset)
    assert cleaned.log_path.name.endswith(".log.cleaned")
    last = old[1].next_offset - 1
    kept = make_batch(1, base_offset=last)
    cleaned.append(kept, headers_of(kept))
    log.replace_segments(cleaned, old)
    assert log.segments[0] is cleaned
    assert offsets_of(log.read_bytes(0, max_bytes=10**6))[0] == (last, last)
    assert not any(p.name.endswith((".cleaned", ".swap", ".deleted")) for p in log_dir.iterdir())
    assert (log_dir / "00000000000000000000.log").read_bytes() == kept
    with pytest.raises(ValueError, match="no longer"):
        log.replace_segments(log.new_cleaned_segment(0), old)


def test_closed_log_refuses_work(open_log: OpenLog) -> None:
    log = open_log()
    log.close()
    with pytest.raises(KafkaError) as raised:
        log.append(make_batch(1))
    assert raised.value.error_code == ErrorCode.kafka_storage_error


def test_region_after_truncation_comes_up_short(open_log: OpenLog) -> None:
    log = open_log()
    _fill(log.append, 3)
    with log.read(0, max_bytes=10**6) as result:
        region = result.regions[0]
        log.truncate_to(3)
        assert len(region.read()) < region.length  # the sender must abort the response


def test_unclosed_region_closes_when_collected(open_log: OpenLog) -> None:
    log = open_log()
    _fill(log.append, 1)
    region = log.read(0, max_bytes=100).regions[0]
    fd = region.fileno()
    del region
    with pytest.raises(OSError):
        os.fstat(fd)


def test_multi_batch_append_overfilling_a_tiny_index(open_log: OpenLog) -> None:
    log = open_log(LogConfig(index_interval_bytes=0, segment_index_bytes=16))
    data = b"".join(make_batch(1, timestamp=1000 + i) for i in range(10))
    log.append(data)  # more entries are due than fit: the index just stops growing
    assert log.log_end_offset == 10
    assert log.active_segment.offset_index.entries == 2
    assert offsets_of(log.read_bytes(7, max_bytes=1)) == [(7, 7)]
    log.append(make_batch(1))  # and the full index rolls the segment
    assert len(log.segments) == 2


def test_preallocated_segments(open_log: OpenLog, log_dir: Path) -> None:
    config = LogConfig(preallocate=True, segment_bytes=1000)
    log = open_log(config)
    _fill(log.append, 8)
    files = sorted(p for p in log_dir.iterdir() if p.suffix == ".log")
    assert files[0].stat().st_size == log.segments[0].size  # trimmed on roll
    assert files[-1].stat().st_size == 1000  # the active one still preallocated
    data = log.read_bytes(0, max_bytes=10**6)
    log.close_without_flush()  # crash: the zero tail is cut by recovery
    again = open_log(config)
    assert again.read_bytes(0, max_bytes=10**6) == data
    again.close()
    assert files[-1].stat().st_size == again.segments[-1].size


def test_special_timestamps(open_log: OpenLog) -> None:
    log = open_log()
    _fill(log.append, 2)
    log.advance_log_start_offset(2)
    assert log.offset_for_timestamp(-4) == (2, -1)
    with pytest.raises(ValueError, match="unsupported"):
        log.offset_for_timestamp(-5)


def test_empty_log_lookups(open_log: OpenLog) -> None:
    log = open_log()
    assert log.offset_for_timestamp(0) is None
    assert log.offset_of_max_timestamp() is None
    assert log.read_bytes(0, max_bytes=100) == b""
    with log.read(0, max_bytes=100) as result:
        assert (result.regions, result.next_offset, result.log_end_offset) == ((), 0, 0)


def test_max_timestamp_ignores_batches_compaction_emptied(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_follower(make_batch(3, timestamps=[100, 200, 300]))
    log.append_as_follower(build_batch([], base_offset=3, last_offset_delta=1, max_timestamp=999))
    log.append_as_follower(make_batch(2, base_offset=5, timestamps=[500, 400]))
    assert log.log_end_offset == 7
    assert log.offset_of_max_timestamp() == (5, 500)
    assert log.offset_for_timestamp(350) == (5, 500)
