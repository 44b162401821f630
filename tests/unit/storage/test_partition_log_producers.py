"""The idempotent producer's state through PartitionLog: duplicates, sequences, epochs,
snapshots at roll and close, restarts (clean and not), truncation and retention."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from strom.common import ErrorCode, KafkaError
from strom.common.clock import ManualClock
from strom.protocol.batch import BatchHeader, rewrite_crc
from strom.protocol.records import Record, build_batch
from strom.storage.log_config import LOG_APPEND_TIME, LogConfig
from strom.storage.partition_log import PartitionLog
from strom.storage.producer_snapshot import list_snapshot_offsets
from strom.storage.producer_state import AppendOrigin

from .batches import headers_of, make_batch
from .conftest import OpenLog

PID = 1000
NOW = 1_700_000_000_000
"""The conftest clock's start: snapshots keep record time, and expiry looks at it."""


def idempotent(sequence: int, *, epoch: int = 0, count: int = 1, pid: int = PID) -> bytes:
    """A batch of ``count`` records as an idempotent producer sends it."""
    return build_batch(
        [Record(i, NOW + i, b"k%d" % i, b"v%d" % sequence) for i in range(count)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
    )


def stored(log: PartitionLog) -> list[BatchHeader]:
    return headers_of(log.read_bytes(log.log_start_offset, max_bytes=1 << 30))


@contextmanager
def fails_with(code: ErrorCode) -> Iterator[None]:
    with pytest.raises(KafkaError) as caught:
        yield
    assert caught.value.error_code == code


def test_a_retried_batch_is_answered_with_its_offsets_and_not_written(open_log: OpenLog) -> None:
    log = open_log()
    first = log.append(idempotent(0, count=3))
    second = log.append(idempotent(3, count=2))
    assert (first.base_offset, second.base_offset, log.log_end_offset) == (0, 3, 5)
    for original, sequence, count in ((first, 0, 3), (second, 3, 2)):
        retry = log.append(idempotent(sequence, count=count))
        assert (retry.base_offset, retry.last_offset) == (
            original.base_offset,
            original.last_offset,
        )
        assert retry.size == 0 and retry.log_append_time == -1
    assert log.log_end_offset == 5
    assert [h.base_sequence for h in stored(log)] == [0, 3]


def test_only_the_last_five_batches_are_remembered(open_log: OpenLog) -> None:
    log = open_log()
    for sequence in range(6):
        log.append(idempotent(sequence))
    assert log.append(idempotent(1)).base_offset == 1  # still cached
    with fails_with(ErrorCode.out_of_order_sequence_number):
        log.append(idempotent(0))  # older than the cache: Kafka says out of order too
    assert log.log_end_offset == 6


def test_out_of_order_sequence_changes_nothing(open_log: OpenLog) -> None:
    log = open_log()
    log.append(idempotent(0))
    with fails_with(ErrorCode.out_of_order_sequence_number):
        log.append(idempotent(2))
    assert log.log_end_offset == 1
    assert log.append(idempotent(1)).base_offset == 1


def test_epochs_fence_zombies_and_restart_sequences(open_log: OpenLog) -> None:
    log = open_log()
    log.append(idempotent(0, epoch=1))
    with fails_with(ErrorCode.invalid_producer_epoch):
        log.append(idempotent(1, epoch=0))
    with fails_with(ErrorCode.out_of_order_sequence_number):
        log.append(idempotent(1, epoch=2))  # a new epoch starts at 0
    assert log.append(idempotent(0, epoch=2)).base_offset == 1
    with fails_with(ErrorCode.invalid_producer_epoch):
        log.append(idempotent(1, epoch=1))
    assert log.log_end_offset == 2


def test_unknown_producers_start_anywhere_and_client_rules_hold(open_log: OpenLog) -> None:
    log = open_log()
    assert log.append(idempotent(42, pid=7)).base_offset == 0
    with fails_with(ErrorCode.invalid_record):  # a producer id needs a sequence
        log.append(idempotent(-1, pid=8))
    control = bytearray(make_batch(1))
    control[22] |= 0x20  # clients may not write control batches, producer id or not
    rewrite_crc(control, 0)
    with fails_with(ErrorCode.invalid_record):
        log.append(bytes(control))
    assert log.log_end_offset == 1


def test_plain_batches_do_not_touch_the_state(open_log: OpenLog) -> None:
    log = open_log()
    log.append(make_batch(3))
    assert len(log.producer_state) == 0
    assert log.producer_state.map_end_offset == 3
    log.append(idempotent(0))
    log.append(make_batch(1))
    entry = log.producer_state.entry(PID)
    assert entry is not None and entry.last_data_offset == 3


def test_follower_appends_are_never_refused(open_log: OpenLog) -> None:
    log = open_log()
    log.append(idempotent(0, epoch=5))
    stale = bytearray(idempotent(7, epoch=1))
    stale[0:8] = (1).to_bytes(8, "big")
    log.append_as_follower(bytes(stale))
    entry = log.producer_state.entry(PID)
    assert entry is not None and (entry.producer_epoch, entry.last_sequence) == (1, 7)


def test_duplicate_on_log_append_time_topic_returns_the_original_time(
    open_log: OpenLog, clock: ManualClock
) -> None:
    log = open_log(LogConfig(message_timestamp_type=LOG_APPEND_TIME))
    first = log.append(idempotent(0))
    clock.advance(5_000)
    retry = log.append(idempotent(0))
    assert retry.log_append_time == first.log_append_time == clock.now_ms() - 5_000


def test_snapshots_at_roll_and_close_bounded(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    log.append(idempotent(0))
    assert list_snapshot_offsets(log_dir) == []
    log.roll()
    assert list_snapshot_offsets(log_dir) == [1]
    for sequence in range(1, 6):
        log.append(idempotent(sequence))
        log.roll()
    assert list_snapshot_offsets(log_dir) == [4, 5, 6]
    log.append(idempotent(6))
    log.close()
    assert list_snapshot_offsets(log_dir) == [5, 6, 7]


def test_state_survives_a_clean_restart(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    log.append(idempotent(0, count=2))
    log.append(idempotent(2))
    log.close()
    assert list_snapshot_offsets(log_dir) == [3]
    again = open_log(had_clean_shutdown=True)
    assert again.append(idempotent(2)).base_offset == 2  # the snapshot kept the last batch
    with fails_with(ErrorCode.out_of_order_sequence_number):
        again.append(idempotent(4))
    assert again.append(idempotent(3)).base_offset == 3


def test_a_clean_log_without_snapshots_is_not_scanned(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    log.append(idempotent(0))
    log.close()
    for path in log_dir.glob("*.snapshot"):  # as a log from before producer state left it
        path.unlink()
    again = open_log(had_clean_shutdown=True)
    assert len(again.producer_state) == 0 and list_snapshot_offsets(log_dir) == [1]
    assert again.append(idempotent(7)).base_offset == 1  # an unknown producer: any sequence
    again.close_without_flush()
    for path in log_dir.glob("*.snapshot"):
        path.unlink()
    crashed = open_log(had_clean_shutdown=False)  # no snapshot and no clean shutdown: a scan
    entry = crashed.producer_state.entry(PID)
    assert entry is not None and entry.last_sequence == 7


def test_state_survives_a_crash_by_replaying_after_the_last_snapshot(open_log: OpenLog) -> None:
    log = open_log()
    log.append(idempotent(0))
    log.roll()  # snapshot at 1
    for sequence in range(1, 4):
        log.append(idempotent(sequence))
    log.append(idempotent(0, pid=PID + 1))
    log.close_without_flush()
    again = open_log()
    for sequence in range(4):  # every batch replayed or from the snapshot
        assert again.append(idempotent(sequence)).base_offset == sequence
    assert again.append(idempotent(0, pid=PID + 1)).base_offset == 4
    assert again.append(idempotent(4)).base_offset == 5


def test_a_torn_tail_is_forgotten_with_its_snapshot(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    log.append(idempotent(0))
    log.append(idempotent(1))
    log.close()  # snapshot at 2, which the crash below makes stale
    segment = log_dir / f"{0:020d}.log"
    size = segment.stat().st_size
    with segment.open("r+b") as file:
        file.truncate(size - 5)
    again = open_log(had_clean_shutdown=False)
    assert again.log_end_offset == 1
    assert list_snapshot_offsets(log_dir) == []
    assert again.append(idempotent(1)).base_offset == 1  # written again, not a duplicate


def test_truncation_rebuilds_the_state(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    log.append(idempotent(0))
    log.roll()  # snapshot at 1
    for sequence in range(1, 4):
        log.append(idempotent(sequence))
    log.roll()  # snapshot at 4
    log.truncate_to(2)
    assert list_snapshot_offsets(log_dir) == [1]
    entry = log.producer_state.entry(PID)
    assert entry is not None and entry.last_sequence == 1
    assert log.append(idempotent(2)).base_offset == 2
    log.truncate_fully_and_start_at(10)
    assert len(log.producer_state) == 0 and list_snapshot_offsets(log_dir) == []
    assert log.append(idempotent(9)).base_offset == 10  # unknown again: any sequence


def test_truncating_plain_batches_keeps_the_state(open_log: OpenLog) -> None:
    log = open_log()
    log.append(idempotent(0))
    log.append(make_batch(3))
    log.truncate_to(2)
    assert log.append(idempotent(0)).base_offset == 0  # still a duplicate


def test_deleted_segments_take_their_snapshots(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(LogConfig(segment_bytes=200))
    for sequence in range(4):
        log.append(idempotent(sequence))
        log.roll()
    assert list_snapshot_offsets(log_dir) == [2, 3, 4]
    assert log.advance_log_start_offset(3)
    assert list_snapshot_offsets(log_dir) == [3, 4]
    assert log.append(idempotent(3)).base_offset == 3  # the state outlives the segments


def test_idle_producers_expire(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log()
    log.append(idempotent(5))
    clock.advance(1_000)
    assert log.remove_expired_producers(clock.now_ms(), expiration_ms=2_000) == []
    clock.advance(1_000)
    assert log.remove_expired_producers(clock.now_ms(), expiration_ms=2_000) == [PID]
    assert log.append(idempotent(9)).base_offset == 1


def test_coordinator_writes_get_the_epoch_check_only(open_log: OpenLog) -> None:
    log = open_log(replace(LogConfig(), segment_bytes=1 << 20))
    log.append(idempotent(0, epoch=3))
    with fails_with(ErrorCode.invalid_producer_epoch):
        log.append(idempotent(9, epoch=2), origin=AppendOrigin.COORDINATOR)
    assert log.append(idempotent(9, epoch=3), origin=AppendOrigin.COORDINATOR).base_offset == 1
