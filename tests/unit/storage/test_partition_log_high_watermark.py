"""The log owns its high watermark (Kafka's UnifiedLog): clamped to [log start, log end],
lowered by truncation, raised by the log start; reads stop where their isolation says."""

from __future__ import annotations

from pathlib import Path

import pytest

from strom.common import ErrorCode, KafkaError
from strom.common.clock import ManualClock
from strom.protocol.batch import summarize_batches
from strom.protocol.records import Record, build_batch
from strom.storage.fetch_isolation import FetchIsolation
from strom.storage.local_log import LocalLog
from strom.storage.log_config import LogConfig
from strom.storage.segment import LogSegment

from .batches import make_batch, offsets_of
from .conftest import OpenLog


def _fill(log_append: object, batches: int) -> None:
    for _ in range(batches):
        log_append(make_batch(3, value_size=20))  # type: ignore[operator]


def test_a_new_log_s_high_watermark_is_its_log_start(open_log: OpenLog) -> None:
    log = open_log()
    assert log.high_watermark == 0
    _fill(log.append, 2)
    assert log.high_watermark == 0  # appends do not move it: the replica manager does
    log.close()
    assert open_log(had_clean_shutdown=True, log_start_offset=3).high_watermark == 3


def test_update_high_watermark_clamps_to_log_start_and_log_end(open_log: OpenLog) -> None:
    log = open_log()
    _fill(log.append, 3)  # 0-8
    log.advance_log_start_offset(2)
    assert log.update_high_watermark(5) == log.high_watermark == 5
    assert log.update_high_watermark(1) == 2  # the log start
    assert log.update_high_watermark(100) == 9  # the log end
    assert log.update_high_watermark(4) == 4  # it may go down


def test_maybe_increment_high_watermark_only_moves_forward(open_log: OpenLog) -> None:
    log = open_log()
    _fill(log.append, 2)  # 0-5
    assert log.maybe_increment_high_watermark(3)
    assert not log.maybe_increment_high_watermark(3)
    assert not log.maybe_increment_high_watermark(1)
    assert log.high_watermark == 3
    assert log.maybe_increment_high_watermark(6)
    with pytest.raises(ValueError):
        log.maybe_increment_high_watermark(7)  # past the log end


def test_truncation_lowers_the_high_watermark(open_log: OpenLog) -> None:
    log = open_log()
    _fill(log.append, 4)  # 0-11
    log.update_high_watermark(9)
    log.truncate_to(10)  # the batch 9-11 goes whole
    assert (log.log_end_offset, log.high_watermark) == (9, 9)
    log.truncate_to(4)
    assert (log.log_end_offset, log.high_watermark) == (3, 3)
    log.truncate_fully_and_start_at(20)
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (20, 20, 20)


def test_a_rising_log_start_raises_the_high_watermark(
    open_log: OpenLog, clock: ManualClock
) -> None:
    log = open_log(LogConfig(segment_bytes=300, retention_ms=1000))
    _fill(log.append, 6)
    assert log.high_watermark == 0
    assert log.advance_log_start_offset(4)
    assert log.high_watermark == 4
    clock.advance(10_000)
    assert log.delete_old_segments(clock.now_ms(), high_watermark=log.log_end_offset) >= 1
    assert log.high_watermark == log.log_start_offset == log.segments[0].base_offset


def test_delete_records_stays_below_the_high_watermark(open_log: OpenLog) -> None:
    log = open_log()
    _fill(log.append, 2)
    log.update_high_watermark(3)
    with pytest.raises(KafkaError) as raised:
        log.advance_log_start_offset(4, within_high_watermark=True)
    assert raised.value.error_code == ErrorCode.offset_out_of_range
    assert log.advance_log_start_offset(3, within_high_watermark=True)
    assert log.advance_log_start_offset(5)  # unbounded: up to the log end (a follower)
    assert log.high_watermark == 5


def test_reads_stop_where_their_isolation_says(open_log: OpenLog) -> None:
    log = open_log()
    log.append(build_batch([Record(0, 1_000, b"k", b"plain")]))  # 0
    transactional = build_batch(
        [Record(0, 1_000, b"k", b"t")],
        producer_id=7,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    log.append(transactional)  # 1, undecided
    log.append(build_batch([Record(0, 1_000, b"k", b"plain")]))  # 2
    log.update_high_watermark(3)
    assert (log.first_unstable_offset, log.last_stable_offset) == (1, 1)
    assert [log.fetchable_offset(isolation) for isolation in FetchIsolation] == [3, 3, 1]
    committed = log.read_bytes(0, max_bytes=10**6, isolation=FetchIsolation.TXN_COMMITTED)
    assert offsets_of(committed) == [(0, 0)]
    log.update_high_watermark(0)
    assert log.last_stable_offset == 0  # never above the high watermark
    assert log.read_bytes(0, max_bytes=10**6, isolation=FetchIsolation.HIGH_WATERMARK) == b""
    assert log.readable_bytes(0, max_bytes=10**6, isolation=FetchIsolation.HIGH_WATERMARK) == 0
    assert len(offsets_of(log.read_bytes(0, max_bytes=10**6))) == 3  # LOG_END
    log.append_txn_marker(producer_id=7, producer_epoch=0, commit=True, coordinator_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert log.first_unstable_offset is None
    assert log.last_stable_offset == log.high_watermark == 4


def test_the_local_log_is_segments_only(log_dir: Path, clock: ManualClock) -> None:
    """Append of offset-carrying batches, roll, raw reads by max offset, truncation."""
    log_dir.mkdir()
    config = LogConfig()
    segment = LogSegment.create(log_dir, 0, config=config, now_ms=clock.now_ms())
    local = LocalLog(log_dir, config=config, clock=clock, segments=[segment], recovery_point=0)
    for base in (0, 3, 6):
        data = make_batch(3, base_offset=base)
        local.append(data, summarize_batches(data, max_batch_bytes=2**20, from_client=False))
        if base == 3:
            assert local.roll(6)
    assert [s.base_offset for s in local.segments] == [0, 6]
    assert local.log_end_offset == 9
    assert local.recovery_point == 6  # a roll flushes what it leaves behind
    data = local.read_bytes(0, max_bytes=10**6, max_offset=6, min_one_message=True)
    assert offsets_of(data) == [(0, 2), (3, 5)]
    with pytest.raises(KafkaError):
        local.read_bytes(10, max_bytes=10, max_offset=10, min_one_message=True)
    local.truncate_to(4)
    assert (local.log_end_offset, [s.base_offset for s in local.segments]) == (3, [0])
    local.flush()
    local.close()
    assert local.closed
