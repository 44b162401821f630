"""Transactions in the partition log: markers, the last stable offset, the ``.txnindex``,
aborted-transaction collection, recovery, truncation, retention and compaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from strom.common import ErrorCode, KafkaError
from strom.common.clock import ManualClock
from strom.protocol.batch import DELETE_HORIZON_FLAG, BatchHeader, scan_batches
from strom.protocol.records import Record, build_batch, iter_records
from strom.storage._index_file import CorruptIndexError
from strom.storage.cleaner import LogCleaner
from strom.storage.log_config import LogConfig
from strom.storage.partition_log import PartitionLog
from strom.storage.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex

from .conftest import OpenLog

NOW = 1_700_000_000_000


class Producer:
    """A transactional producer's batches (sequences tracked)."""

    def __init__(self, pid: int, *, epoch: int = 0) -> None:
        self.pid, self.epoch, self.sequence = pid, epoch, 0

    def batch(self, *entries: tuple[bytes, bytes | None], transactional: bool = True) -> bytes:
        data = build_batch(
            [Record(i, NOW + i, key, value) for i, (key, value) in enumerate(entries)],
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
            is_transactional=transactional,
        )
        self.sequence += len(entries)
        return data

    def send(self, log: PartitionLog, *values: bytes) -> int:
        """Append one transactional batch of ``values`` (keys k0, k1...); its base offset."""
        entries = [(b"k%d" % i, value) for i, value in enumerate(values)]
        return log.append(self.batch(*entries)).base_offset

    def end(self, log: PartitionLog, *, commit: bool, coordinator_epoch: int = 0) -> int:
        return log.append_txn_marker(
            producer_id=self.pid,
            producer_epoch=self.epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
        ).last_offset


def plain(log: PartitionLog, value: bytes = b"x", key: bytes = b"p") -> int:
    data = build_batch([Record(0, NOW, key, value)])
    return log.append(data).base_offset


@contextmanager
def fails_with(code: ErrorCode) -> Iterator[None]:
    with pytest.raises(KafkaError) as caught:
        yield
    assert caught.value.error_code == code


def unstable(log: PartitionLog) -> int | None:
    """The first unstable offset (a function: mypy does not narrow it across appends)."""
    return log.first_unstable_offset


def txn_entries(log: PartitionLog) -> list[AbortedTxn]:
    return [txn for segment in log.segments for txn in segment.txn_index.entries]


def all_records(log: PartitionLog) -> list[tuple[BatchHeader, Record | None]]:
    data = log.read_bytes(log.log_start_offset, max_bytes=1 << 30)
    found, _ = scan_batches(data)
    out: list[tuple[BatchHeader, Record | None]] = []
    for position, header in found:
        records = list(iter_records(data[position : position + header.size]))
        out.extend((header, record) for record in records)
        if not records:
            out.append((header, None))
    return out


# --- the index file ----------------------------------------------------------------------------


def test_txn_index_file_format_and_reload(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path, 0)
    assert index.entries == [] and not path.exists()  # created lazily
    index.append(AbortedTxn(7, 3, 10, 3))
    index.append(AbortedTxn(8, 5, 12, 13))
    index.flush()
    raw = path.read_bytes()
    assert len(raw) == 2 * ENTRY_SIZE == 68
    assert raw[:2] == b"\x00\x00" and int.from_bytes(raw[2:10], "big") == 7
    again = TransactionIndex(path, 0)
    assert list(again.entries) == [AbortedTxn(7, 3, 10, 3), AbortedTxn(8, 5, 12, 13)]
    with pytest.raises(ValueError, match="not after"):
        again.append(AbortedTxn(9, 11, 12, 13))
    again.truncate_to(12)
    assert list(TransactionIndex(path, 0).entries) == [AbortedTxn(7, 3, 10, 3)]
    again.truncate_to(0)
    assert not path.exists()


@pytest.mark.parametrize(
    "content",
    [
        b"\x00" * 33,
        AbortedTxn(1, 0, 5, 6).pack()[:-1] + b"\x01" + b"\x00\x01",
        b"\x00\x01" + bytes(32),
    ],
    ids=["torn", "torn-entry", "bad-version"],
)
def test_txn_index_check_rejects_corrupt_files(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.txnindex"
    path.write_bytes(content)
    with pytest.raises(CorruptIndexError):
        TransactionIndex(path, 0).check()


def test_txn_index_check_rejects_decreasing_entries(tmp_path: Path) -> None:
    path = tmp_path / "x.txnindex"
    path.write_bytes(AbortedTxn(1, 0, 9, 10).pack() + AbortedTxn(2, 0, 5, 10).pack())
    with pytest.raises(CorruptIndexError, match="not after"):
        TransactionIndex(path, 0).check()


def test_txn_index_collect_is_kafkas(tmp_path: Path) -> None:
    index = TransactionIndex(tmp_path / "x.txnindex", 0)
    index.extend([AbortedTxn(1, 0, 4, 2), AbortedTxn(2, 2, 8, 9), AbortedTxn(3, 9, 12, 13)])
    assert index.collect(5, 9) == ([AbortedTxn(2, 2, 8, 9)], True)
    assert index.collect(0, 3) == ([AbortedTxn(1, 0, 4, 2), AbortedTxn(2, 2, 8, 9)], True)
    assert index.collect(9, 20) == ([AbortedTxn(3, 9, 12, 13)], False)


# --- markers and the last stable offset ----------------------------------------------------------


def test_markers_end_transactions_and_move_the_first_unstable_offset(open_log: OpenLog) -> None:
    log = open_log()
    a, b = Producer(1), Producer(2)
    assert unstable(log) is None
    plain(log)
    assert a.send(log, b"a1") == 1
    assert b.send(log, b"b1") == 2
    a.send(log, b"a2")
    assert unstable(log) == 1
    assert a.end(log, commit=True) == 4
    assert unstable(log) == 2
    assert b.end(log, commit=False) == 5
    assert unstable(log) is None
    assert txn_entries(log) == [AbortedTxn(2, 2, 5, 6)]
    [marker] = [h for h, _ in all_records(log) if h.is_control and h.base_offset == 4]
    assert (marker.producer_id, marker.is_transactional) == (1, True)


def test_an_abort_records_the_last_stable_offset_after_it(open_log: OpenLog) -> None:
    log = open_log()
    a, b = Producer(1), Producer(2)
    a.send(log, b"a1")  # 0
    b.send(log, b"b1")  # 1
    b.end(log, commit=False)  # 2: a's transaction from 0 is still open
    a.end(log, commit=False)  # 3
    assert txn_entries(log) == [AbortedTxn(2, 1, 2, 0), AbortedTxn(1, 0, 3, 4)]


@pytest.mark.parametrize("fetches", ["one batch each", "all at once"])
def test_a_follower_indexes_the_aborts_it_replicates(
    open_log: OpenLog, tmp_path: Path, clock: ManualClock, fetches: str
) -> None:
    """The follower's ``.txnindex`` is the leader's: a fetch of an aborted transaction's records
    from a new leader (a former follower) lists it, so read_committed consumers skip them."""
    leader = open_log()
    a, b = Producer(1), Producer(2)
    a.send(leader, b"a1")
    b.send(leader, b"b1")
    b.end(leader, commit=False)
    plain(leader)
    a.end(leader, commit=False)
    b.send(leader, b"b2")
    b.end(leader, commit=True)
    follower = PartitionLog.open(tmp_path / "replica" / "orders-0", config=LogConfig(), clock=clock)
    data = leader.read_bytes(0, max_bytes=1 << 20)
    found, _ = scan_batches(data)
    if fetches == "all at once":
        follower.append_as_follower(data)
    else:
        for position, header in found:
            follower.append_as_follower(data[position : position + header.size])
    assert (
        txn_entries(follower)
        == txn_entries(leader)
        == [
            AbortedTxn(2, 1, 2, 0),
            AbortedTxn(1, 0, 4, 5),
        ]
    )
    assert follower.collect_aborted_txns(0, 7) == leader.collect_aborted_txns(0, 7)
    follower.close()


def test_marker_epoch_checks(open_log: OpenLog) -> None:
    log = open_log()
    producer = Producer(1, epoch=3)
    producer.send(log, b"v")
    with fails_with(ErrorCode.invalid_producer_epoch):
        log.append_txn_marker(producer_id=1, producer_epoch=2, commit=True, coordinator_epoch=5)
    producer.end(log, commit=True, coordinator_epoch=5)
    producer.send(log, b"w")
    end = log.log_end_offset
    with fails_with(ErrorCode.transaction_coordinator_fenced):
        producer.end(log, commit=False, coordinator_epoch=4)
    assert log.log_end_offset == end and unstable(log) == end - 1
    producer.end(log, commit=False, coordinator_epoch=5)
    assert log.producer_state.entry(1) is not None
    assert log.producer_state.entry(1).coordinator_epoch == 5  # type: ignore[union-attr]


def test_a_marker_without_an_ongoing_transaction_is_written_and_indexes_nothing(
    open_log: OpenLog,
) -> None:
    log = open_log()
    offset = Producer(9).end(log, commit=False)
    assert offset == 0 and log.log_end_offset == 1
    assert txn_entries(log) == [] and unstable(log) is None


def test_the_coordinator_epoch_survives_a_clean_restart(open_log: OpenLog) -> None:
    log = open_log()
    producer = Producer(1)
    producer.send(log, b"v")
    producer.end(log, commit=True, coordinator_epoch=7)
    log.close()
    again = open_log(had_clean_shutdown=True)
    with fails_with(ErrorCode.transaction_coordinator_fenced):
        again.append_txn_marker(producer_id=1, producer_epoch=0, commit=True, coordinator_epoch=6)


# --- collecting aborted transactions -------------------------------------------------------------


def aborted_history(log: PartitionLog) -> None:
    """Offsets: 0 a1 (pid 1), 1 b1 (pid 2), [roll], 2 b-abort, 3 plain, [roll], 4 a-abort,
    5 c1 (pid 3), 6 c-commit, 7 d1 (pid 4), [roll], 8 d-abort."""
    a, b, c, d = Producer(1), Producer(2), Producer(3), Producer(4)
    a.send(log, b"a1")
    b.send(log, b"b1")
    log.roll()
    b.end(log, commit=False)
    plain(log)
    log.roll()
    a.end(log, commit=False)
    c.send(log, b"c1")
    c.end(log, commit=True)
    d.send(log, b"d1")
    log.roll()
    d.end(log, commit=False)


def test_collect_aborted_txns_over_segments(open_log: OpenLog) -> None:
    log = open_log()
    aborted_history(log)
    b, a, d = AbortedTxn(2, 1, 2, 0), AbortedTxn(1, 0, 4, 5), AbortedTxn(4, 7, 8, 9)
    assert txn_entries(log) == [b, a, d]
    assert log.collect_aborted_txns(0, 9) == [b, a, d]
    assert log.collect_aborted_txns(0, 1) == [a]  # b starts at 1; b's entry says go on
    assert log.collect_aborted_txns(3, 7) == [a]
    assert log.collect_aborted_txns(5, 9) == [d]
    assert log.collect_aborted_txns(9, 9) == []


# --- recovery ------------------------------------------------------------------------------------


def test_an_unclean_restart_rebuilds_the_txn_indexes(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    aborted_history(log)
    expected = txn_entries(log)
    log.close_without_flush()
    for path in log_dir.glob("*.txnindex"):
        path.unlink()
    again = open_log(recovery_point=0)
    assert txn_entries(again) == expected
    assert unstable(again) is None


def test_a_crash_after_a_roll_rebuilds_from_the_snapshot(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    aborted_history(log)
    expected = txn_entries(log)
    recovery_point = log.segments[-1].base_offset  # the rolls flushed everything below
    log.close_without_flush()
    (log_dir / "00000000000000000008.txnindex").unlink()
    again = open_log(recovery_point=recovery_point)
    assert txn_entries(again) == expected


def test_a_corrupt_txn_index_is_rebuilt_after_a_clean_shutdown(
    open_log: OpenLog, log_dir: Path
) -> None:
    log = open_log()
    aborted_history(log)
    expected = txn_entries(log)
    log.close()
    path = log_dir / "00000000000000000004.txnindex"
    path.write_bytes(path.read_bytes() + b"\x00\x07")
    again = open_log(had_clean_shutdown=True)
    assert txn_entries(again) == expected
    assert path.stat().st_size == ENTRY_SIZE


def test_an_open_transaction_survives_a_restart(open_log: OpenLog) -> None:
    log = open_log()
    producer = Producer(1)
    plain(log)
    producer.send(log, b"v")
    log.close_without_flush()
    again = open_log(recovery_point=0)
    assert unstable(again) == 1
    producer.end(again, commit=False)
    assert txn_entries(again) == [AbortedTxn(1, 1, 2, 3)]


# --- truncation, retention, DeleteRecords ------------------------------------------------


def test_truncation_drops_txn_index_entries(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    aborted_history(log)
    log.truncate_to(8)
    assert txn_entries(log) == [AbortedTxn(2, 1, 2, 0), AbortedTxn(1, 0, 4, 5)]
    assert unstable(log) == 7  # d's transaction is open again
    assert not (log_dir / "00000000000000000008.txnindex").exists()
    log.truncate_to(3)
    assert txn_entries(log) == [AbortedTxn(2, 1, 2, 0)]
    assert unstable(log) == 0
    log.truncate_to(2)
    assert txn_entries(log) == []
    assert not list(log_dir.glob("*.txnindex"))


def test_retention_and_delete_records_take_the_txn_index_along(
    open_log: OpenLog, log_dir: Path, clock: ManualClock
) -> None:
    log = open_log(LogConfig(retention_ms=1000))
    aborted_history(log)
    assert sorted(p.name for p in log_dir.glob("*.txnindex")) == [
        "00000000000000000002.txnindex",
        "00000000000000000004.txnindex",
        "00000000000000000008.txnindex",
    ]
    log.advance_log_start_offset(4)
    assert sorted(p.name for p in log_dir.glob("*.txnindex")) == [
        "00000000000000000004.txnindex",
        "00000000000000000008.txnindex",
    ]
    clock.advance(10**12)
    log.delete_old_segments(clock.now_ms(), high_watermark=8)
    assert [p.name for p in log_dir.glob("*.txnindex")] == ["00000000000000000008.txnindex"]


# --- compaction ----------------------------------------------------------------------------------


def compacted() -> LogConfig:
    return LogConfig(
        cleanup_policy=frozenset({"compact"}),
        segment_bytes=4096,
        delete_retention_ms=1000,
        min_cleanable_dirty_ratio=0.01,
    )


def values(log: PartitionLog) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.value) for h, r in all_records(log) if r is not None and not h.is_control]


def markers(log: PartitionLog) -> list[tuple[int, bool]]:
    return [
        (h.base_offset, bool(h.attributes & DELETE_HORIZON_FLAG))
        for h, _ in all_records(log)
        if h.is_control
    ]


def test_the_cleaner_removes_aborted_records_and_later_their_markers(
    open_log: OpenLog, clock: ManualClock
) -> None:
    log = open_log(compacted())
    committed, aborted, ongoing = Producer(1), Producer(2), Producer(3)
    committed.send(log, b"c")  # 0: k0=c
    aborted.send(log, b"a")  # 1: k0=a (aborted)
    committed.end(log, commit=True)  # 2
    aborted.end(log, commit=False)  # 3
    plain(log, b"p", key=b"k9")  # 4
    log.roll()
    ongoing.send(log, b"o")  # 5: undecided, not cleanable
    log.roll()
    cleaner = LogCleaner()

    cleaner.clean(log, now_ms=clock.now_ms(), high_watermark=10**9)
    # The aborted record is gone; the committed one is the latest k0 (it entered the map).
    assert values(log) == [(0, b"c"), (4, b"p"), (5, b"o")]
    # The commit marker's data is still there; the abort marker's data was there this pass.
    assert markers(log) == [(2, False), (3, False)]
    assert log.collect_aborted_txns(0, 6) == [AbortedTxn(2, 1, 3, 4)]

    cleaner.clean(log, now_ms=clock.now_ms(), high_watermark=10**9)
    assert markers(log) == [(2, False), (3, True)]  # no data left: horizon stamped
    clock.advance(1000)
    cleaner.clean(log, now_ms=clock.now_ms(), high_watermark=10**9)
    assert markers(log) == [(2, False)]
    assert values(log) == [(0, b"c"), (4, b"p"), (5, b"o")]
    assert unstable(log) == 5

    # A later k0 supersedes both committed ones; then their markers can go too.
    plain(log, b"new", key=b"k0")
    ongoing.end(log, commit=True)
    log.roll()
    for _ in range(3):
        cleaner.clean(log, now_ms=clock.now_ms(), high_watermark=10**9)
        clock.advance(1000)
    assert values(log) == [(4, b"p"), (6, b"new")]
    assert markers(log) == []


def test_an_undecided_transaction_is_not_cleaned(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(compacted())
    Producer(1).send(log, b"old")
    log.roll()
    plain(log, b"new", key=b"k0")
    log.roll()
    LogCleaner().clean(log, now_ms=clock.now_ms(), high_watermark=10**9)
    assert values(log) == [(0, b"old"), (1, b"new")]
