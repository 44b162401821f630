"""The idempotent producer's per-partition state: rules, expiry, snapshots, truncation.

A tiny in-memory log (``FakeLog``) plays the partition log's part of the wiring: prepare,
assign offsets, commit. A hypothesis state machine drives random producers (retries,
gaps, epoch bumps, fencing, expiry, snapshots and restarts) against a small model.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import crc32c
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from strom.common import ErrorCode, KafkaError
from strom.protocol.batch import CONTROL_FLAG, TRANSACTIONAL_FLAG, BatchHeader
from strom.protocol.records import Record, build_batch
from strom.storage.producer_snapshot import (
    CorruptSnapshotError,
    LoadedSnapshot,
    SnapshotEntry,
    decode_snapshot,
    delete_snapshots_below,
    encode_snapshot,
    list_snapshot_offsets,
    load_latest_snapshot,
    parse_snapshot_file_name,
    read_snapshot,
    retain_latest_snapshots,
    snapshot_path,
    write_snapshot,
)
from strom.storage.producer_state import (
    AppendOrigin,
    DuplicateBatch,
    ProducerStateEntry,
    ProducerStateManager,
    rebuild,
)

from .scratch import scratch_directory

INT32_MAX = 2**31 - 1
NOW = 1_700_000_000_000
HOUR = 3_600_000


def batch(
    producer_id: int,
    epoch: int,
    sequence: int,
    count: int = 1,
    *,
    timestamp: int = NOW,
    transactional: bool = False,
    control: bool = False,
    base_offset: int = 0,
) -> BatchHeader:
    """A batch header as a producer would send it (offsets are the broker's to assign)."""
    attributes = (TRANSACTIONAL_FLAG if transactional or control else 0) | (
        CONTROL_FLAG if control else 0
    )
    return BatchHeader(
        base_offset=base_offset,
        batch_length=100,
        partition_leader_epoch=0,
        magic=2,
        crc=0,
        attributes=attributes,
        last_offset_delta=count - 1,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        record_count=count,
    )


def plain(count: int = 1) -> BatchHeader:
    """A batch from a producer that is not idempotent."""
    return batch(-1, -1, -1, count)


def marker(producer_id: int, epoch: int, *, timestamp: int = NOW) -> BatchHeader:
    """A transaction marker's header (commit or abort look alike here)."""
    return batch(producer_id, epoch, -1, 1, timestamp=timestamp, control=True)


class FakeLog:
    """The partition log's side of the wiring: prepare, assign offsets, write, commit."""

    def __init__(self, state: ProducerStateManager) -> None:
        self.state = state
        self.headers: list[BatchHeader] = []
        self.end = state.map_end_offset
        self.now = NOW
        self.replayed_from: list[int] = []

    def append(
        self, *headers: BatchHeader, origin: AppendOrigin = AppendOrigin.CLIENT
    ) -> DuplicateBatch | list[BatchHeader]:
        plan = self.state.prepare(headers, origin=origin)
        if plan.duplicate is not None:
            return plan.duplicate
        written = []
        for header in headers:
            placed = replace(header, base_offset=self.end)
            self.end = placed.next_offset
            written.append(placed)
        self.headers += written
        self.state.commit(plan, written, now_ms=self.now)
        return written

    def write(self, *headers: BatchHeader) -> list[BatchHeader]:
        written = self.append(*headers)
        assert isinstance(written, list), f"expected an append, got {written}"
        return written

    def batches_from(self, offset: int) -> Iterator[BatchHeader]:
        self.replayed_from.append(offset)
        return iter(list(self.headers))

    def truncate(self, offset: int) -> None:
        """As PartitionLog.truncate_to: whole batches with a record at or above ``offset`` go."""
        self.headers = [h for h in self.headers if h.last_offset < offset]
        self.end = self.headers[-1].next_offset if self.headers else 0


@contextmanager
def fails_with(code: ErrorCode) -> Iterator[None]:
    with pytest.raises(KafkaError) as caught:
        yield
    assert caught.value.error_code == code


def error_of(log: FakeLog, *headers: BatchHeader) -> ErrorCode:
    before = dict(log.state.producers), log.state.map_end_offset, len(log.headers)
    with pytest.raises(KafkaError) as caught:
        log.append(*headers)
    assert (dict(log.state.producers), log.state.map_end_offset, len(log.headers)) == before
    return caught.value.error_code


@pytest.fixture
def log() -> FakeLog:
    return FakeLog(ProducerStateManager(name="orders-0", producer_id_expiration_ms=HOUR))


# --- the rules -------------------------------------------------------------------------------


def test_batches_without_producer_id_are_not_tracked(log: FakeLog) -> None:
    log.write(plain(3), plain(2))
    assert len(log.state) == 0
    assert log.state.map_end_offset == 5
    log.write(plain())  # nothing is ever a duplicate without a producer id
    assert log.state.map_end_offset == 6


def test_unknown_producer_may_start_at_any_sequence(log: FakeLog) -> None:
    log.write(plain(2))
    log.write(batch(7, 3, 42, 4, timestamp=NOW - 5))
    entry = log.state.entry(7)
    assert entry is not None
    assert (entry.producer_epoch, entry.first_sequence, entry.last_sequence) == (3, 42, 45)
    assert (entry.first_data_offset, entry.last_data_offset) == (2, 5)
    assert entry.last_timestamp == NOW - 5
    assert entry.last_append_ms == NOW
    assert log.state.map_end_offset == 6


def test_sequences_must_follow_on(log: FakeLog) -> None:
    log.write(batch(1, 0, 0, 3))
    log.write(batch(1, 0, 3, 2))
    assert error_of(log, batch(1, 0, 6)) == ErrorCode.out_of_order_sequence_number
    assert error_of(log, batch(1, 0, 4)) == ErrorCode.out_of_order_sequence_number
    with pytest.raises(KafkaError, match=r"orders-0: expected 5 \(last appended sequence 4\)"):
        log.append(batch(1, 0, 9))
    log.write(batch(1, 0, 5))


def test_sequence_wraps_around_int32(log: FakeLog) -> None:
    log.write(batch(1, 0, INT32_MAX - 1, 2))
    entry = log.state.entry(1)
    assert entry is not None and entry.last_sequence == INT32_MAX
    assert error_of(log, batch(1, 0, 1)) == ErrorCode.out_of_order_sequence_number
    with pytest.raises(KafkaError, match=r"expected 0 \(last appended sequence 2147483647\)"):
        log.append(batch(1, 0, 1))
    log.write(batch(1, 0, 0, 1))
    # a batch whose sequences cross the wrap: INT32_MAX, 0, 1
    log.write(batch(2, 0, INT32_MAX - 1))
    log.write(batch(2, 0, INT32_MAX, 3))
    entry = log.state.entry(2)
    assert entry is not None and entry.last_sequence == 1
    duplicate = log.append(batch(2, 0, INT32_MAX, 3))
    assert isinstance(duplicate, DuplicateBatch) and duplicate.last_sequence == 1
    log.write(batch(2, 0, 2))


def test_retries_of_the_last_five_batches_are_duplicates(log: FakeLog) -> None:
    sent = [batch(1, 0, seq * 2, 2, timestamp=NOW + seq) for seq in range(7)]
    placed = [log.write(plain(), header)[1] for header in sent]
    end = log.end
    for original, header in zip(placed[2:], sent[2:], strict=True):
        duplicate = log.append(header)
        assert duplicate == DuplicateBatch(
            producer_id=1,
            producer_epoch=0,
            first_sequence=header.base_sequence,
            last_sequence=header.last_sequence,
            base_offset=original.base_offset,
            last_offset=original.last_offset,
            max_timestamp=original.max_timestamp,
        )
    assert log.end == end and log.state.map_end_offset == end
    # older than the five cached batches: out of order, as in Kafka
    assert error_of(log, sent[1]) == ErrorCode.out_of_order_sequence_number
    # a different range over cached sequences is not a duplicate
    assert error_of(log, batch(1, 0, 12, 1)) == ErrorCode.out_of_order_sequence_number


def test_duplicate_needs_the_same_epoch(log: FakeLog) -> None:
    log.write(batch(1, 0, 0))
    log.write(batch(1, 1, 0))
    # the old epoch's batch is fenced, not answered as a duplicate
    assert error_of(log, batch(1, 0, 0)) == ErrorCode.invalid_producer_epoch
    assert isinstance(log.append(batch(1, 1, 0)), DuplicateBatch)


def test_new_epoch_starts_at_zero(log: FakeLog) -> None:
    log.write(batch(1, 0, 0, 5))
    with pytest.raises(KafkaError, match="new epoch 1 at sequence 5; a new epoch starts at 0"):
        log.append(batch(1, 1, 5))
    assert error_of(log, batch(1, 1, 5)) == ErrorCode.out_of_order_sequence_number
    log.write(batch(1, 2, 0, 2))
    entry = log.state.entry(1)
    assert entry is not None
    assert (entry.producer_epoch, len(entry.batches), entry.last_sequence) == (2, 1, 1)


def test_older_epoch_is_fenced(log: FakeLog) -> None:
    log.write(batch(1, 5, 0))
    with pytest.raises(KafkaError, match="sent epoch 4, older than its current epoch 5"):
        log.append(batch(1, 4, 1))
    assert error_of(log, batch(1, 4, 1)) == ErrorCode.invalid_producer_epoch
    assert error_of(log, batch(1, 0, 0)) == ErrorCode.invalid_producer_epoch


def test_client_only_rules(log: FakeLog) -> None:
    assert error_of(log, marker(1, 0)) == ErrorCode.invalid_record
    assert error_of(log, batch(1, 0, -1)) == ErrorCode.invalid_record
    with pytest.raises(KafkaError, match="control records"):
        log.append(marker(1, 0))


def test_a_failed_request_changes_nothing(log: FakeLog) -> None:
    log.write(batch(1, 0, 0))
    # the first batch is fine, the second is out of order: nothing of it is kept
    assert error_of(log, batch(1, 0, 1), batch(1, 0, 3)) == ErrorCode.out_of_order_sequence_number
    assert error_of(log, batch(2, 0, 0), batch(1, 0, 9)) == ErrorCode.out_of_order_sequence_number
    assert log.state.entry(2) is None
    # batches of one request are checked against each other
    log.write(batch(1, 0, 1), batch(1, 0, 2, 2), batch(3, 0, 0))
    entry = log.state.entry(1)
    assert entry is not None and entry.last_sequence == 3


def test_check_one_batch(log: FakeLog) -> None:
    written = log.write(batch(1, 0, 0))
    assert log.state.check(batch(1, 0, 1)) is None
    duplicate = log.state.check(batch(1, 0, 0))
    assert duplicate is not None and duplicate.base_offset == written[0].base_offset
    with fails_with(ErrorCode.out_of_order_sequence_number):
        log.state.check(batch(1, 0, 2))


def test_commit_refuses_stale_or_wrong_plans(log: FakeLog) -> None:
    state = log.state
    plan = state.prepare([batch(1, 0, 0)])
    log.write(batch(2, 0, 0))
    with pytest.raises(RuntimeError, match="changed between prepare and commit"):
        state.commit(plan, [batch(1, 0, 0, base_offset=1)], now_ms=NOW)
    plan = state.prepare([batch(1, 0, 0)])
    with pytest.raises(ValueError, match="planned 1 batches, 2 written"):
        state.commit(plan, [batch(1, 0, 0), batch(1, 0, 1)], now_ms=NOW)
    with pytest.raises(ValueError, match="is not the planned"):
        state.commit(plan, [batch(1, 0, 5)], now_ms=NOW)
    duplicate_plan = state.prepare([batch(2, 0, 0)])
    assert not duplicate_plan.should_append
    with pytest.raises(ValueError, match="nothing to commit"):
        state.commit(duplicate_plan, [batch(2, 0, 0)], now_ms=NOW)


def test_replication_is_never_rejected(log: FakeLog) -> None:
    log.write(batch(1, 3, 0))
    follower = AppendOrigin.REPLICATION
    assert isinstance(log.append(batch(1, 3, 9), origin=follower), list)
    assert isinstance(log.append(batch(1, 2, 4), origin=follower), list)  # the log is the truth
    assert isinstance(log.append(batch(1, 2, 4), origin=follower), list)  # not a duplicate either
    entry = log.state.entry(1)
    assert entry is not None and (entry.producer_epoch, entry.last_sequence) == (2, 4)


def test_coordinator_writes_get_the_epoch_check_only(log: FakeLog) -> None:
    coordinator = AppendOrigin.COORDINATOR
    log.write(batch(1, 2, 0))
    log.append(batch(1, 2, -1, transactional=True), origin=coordinator)  # no sequence check
    with fails_with(ErrorCode.invalid_producer_epoch):
        log.append(marker(1, 1), origin=coordinator)
    log.append(marker(1, 2), origin=coordinator)


def test_real_batches_from_the_protocol_module(log: FakeLog) -> None:
    records = [Record(offset=i, timestamp=NOW + i, key=None, value=b"v") for i in range(3)]
    data = build_batch(records, producer_id=11, producer_epoch=0, base_sequence=INT32_MAX - 1)
    header = BatchHeader.read(data)
    log.write(header)
    entry = log.state.entry(11)
    assert entry is not None and entry.last_sequence == 0  # INT32_MAX - 1, INT32_MAX, 0
    assert entry.last_timestamp == NOW + 2
    assert isinstance(log.append(header), DuplicateBatch)


# --- transactions (room for later) -----------------------------------------------------------


def test_ongoing_transactions_and_first_undecided_offset(log: FakeLog) -> None:
    coordinator = AppendOrigin.COORDINATOR
    log.write(plain(3))
    log.write(batch(1, 0, 0, 2, transactional=True))
    log.write(batch(2, 0, 0, transactional=True))
    log.write(batch(1, 0, 2, transactional=True))
    assert log.state.ongoing_transactions() == {1: 3, 2: 5}
    assert log.state.first_undecided_offset() == 3
    assert error_of(log, batch(1, 0, 3)) == ErrorCode.invalid_txn_state
    log.append(marker(1, 0), origin=coordinator)
    assert log.state.ongoing_transactions() == {2: 5}
    assert log.state.first_undecided_offset() == 5
    log.append(marker(2, 0), origin=coordinator)
    assert log.state.first_undecided_offset() is None
    log.write(batch(1, 0, 3))  # after the marker, non-transactional writes are fine again


def test_marker_with_a_new_epoch_clears_cached_batches(log: FakeLog) -> None:
    log.write(batch(1, 0, 0, transactional=True))
    log.append(marker(1, 1), origin=AppendOrigin.COORDINATOR)
    entry = log.state.entry(1)
    assert entry is not None and entry.producer_epoch == 1 and entry.is_empty
    assert error_of(log, batch(1, 1, 3)) == ErrorCode.out_of_order_sequence_number
    log.write(batch(1, 1, 0))


# --- expiry ----------------------------------------------------------------------------------


def test_idle_producers_expire(log: FakeLog) -> None:
    log.write(batch(1, 0, 0))
    log.now += 10
    log.write(batch(2, 0, 0, transactional=True))
    log.now = NOW + HOUR - 1
    assert log.state.remove_expired(log.now) == []
    log.now = NOW + HOUR
    assert log.state.remove_expired(log.now) == [1]
    log.now += 10 * HOUR
    assert log.state.remove_expired(log.now) == []  # in a transaction: never expires
    # an expired producer is unknown again: a retry of its old batch is written again (what
    # expiry costs), and it may start at any sequence
    log.write(batch(1, 0, 0))
    log.write(batch(4, 0, 17))


def test_expiry_uses_broker_time_for_live_producers(log: FakeLog) -> None:
    log.write(batch(1, 0, 0, timestamp=NOW - 30 * HOUR))  # old CreateTime timestamps
    assert log.state.remove_expired(NOW + 1) == []
    assert log.state.remove_expired(NOW + HOUR) == [1]


def test_expiry_uses_record_time_after_a_restart(tmp_path: Path, log: FakeLog) -> None:
    log.write(batch(1, 0, 0, timestamp=NOW - 30 * HOUR))
    log.write(batch(2, 0, 0, timestamp=NOW))
    log.state.take_snapshot(tmp_path)
    loaded = ProducerStateManager.load(
        tmp_path,
        log_start_offset=0,
        log_end_offset=log.end,
        batches_from=log.batches_from,
        now_ms=NOW,
        producer_id_expiration_ms=HOUR,
    )
    assert sorted(loaded.producers) == [2]


# --- snapshot files --------------------------------------------------------------------------


ENTRY = SnapshotEntry(
    producer_id=1000,
    producer_epoch=3,
    last_sequence=41,
    last_offset=99,
    offset_delta=4,
    timestamp=NOW,
    coordinator_epoch=-1,
    current_txn_first_offset=-1,
)


def test_snapshot_bytes_are_kafkas() -> None:
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", 1000, 3, 41, 99, 4, NOW, -1, -1)
    expected = struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    assert encode_snapshot([ENTRY]) == expected
    assert decode_snapshot(expected) == [ENTRY]
    empty = encode_snapshot([])
    assert len(empty) == 10 and decode_snapshot(empty) == []


snapshot_entries = st.builds(
    SnapshotEntry,
    producer_id=st.integers(0, 2**63 - 1),
    producer_epoch=st.integers(-1, 2**15 - 1),
    last_sequence=st.integers(-1, INT32_MAX),
    last_offset=st.integers(-1, 2**63 - 1),
    offset_delta=st.integers(0, INT32_MAX),
    timestamp=st.integers(-1, 2**63 - 1),
    coordinator_epoch=st.integers(-1, INT32_MAX),
    current_txn_first_offset=st.integers(-1, 2**63 - 1),
)


@given(st.lists(snapshot_entries, max_size=20))
def test_snapshot_codec_round_trip(entries: list[SnapshotEntry]) -> None:
    assert decode_snapshot(encode_snapshot(entries)) == entries


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda b: b[:5], "too short"),
        (lambda b: b"\x00\x02" + b[2:], "unknown snapshot version 2"),
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "CRC mismatch"),
        (lambda b: b[:-4], "CRC mismatch"),
    ],
)
def test_corrupt_snapshot_bytes(damage: Callable[[bytes], bytes], reason: str) -> None:
    data = encode_snapshot([ENTRY, replace(ENTRY, producer_id=1001)])
    with pytest.raises(CorruptSnapshotError, match=reason):
        decode_snapshot(damage(data))


def test_count_that_disagrees_with_the_length() -> None:
    body = struct.pack(">i", 2) + struct.pack(">qhiqiqiq", 1, 0, 0, 0, 0, 0, -1, -1)
    data = struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    with pytest.raises(CorruptSnapshotError, match="says 2 entries"):
        decode_snapshot(data)


def test_snapshot_files(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, 1234, [ENTRY])
    assert path.name == "00000000000000001234.snapshot"
    assert path == snapshot_path(tmp_path, 1234)
    assert read_snapshot(path) == [ENTRY]
    assert not list(tmp_path.glob("*.tmp"))
    assert parse_snapshot_file_name("00000000000000001234.snapshot") == 1234
    for other in ("00000000000000001234.log", "1234.snapshot", "0000000000000000123x.snapshot"):
        assert parse_snapshot_file_name(other) is None
    for offset in (5, 0, 77):
        write_snapshot(tmp_path, offset, [])
    (tmp_path / "00000000000000000000.log").touch()
    assert list_snapshot_offsets(tmp_path) == [0, 5, 77, 1234]
    assert list_snapshot_offsets(tmp_path / "missing") == []
    assert retain_latest_snapshots(tmp_path, 3) == [0]
    assert delete_snapshots_below(tmp_path, 77) == [5]
    assert list_snapshot_offsets(tmp_path) == [77, 1234]


def test_load_latest_snapshot_skips_and_deletes_corrupt_ones(tmp_path: Path) -> None:
    write_snapshot(tmp_path, 10, [ENTRY])
    write_snapshot(tmp_path, 20, [replace(ENTRY, producer_id=2)])
    write_snapshot(tmp_path, 30, [])
    (tmp_path / "00000000000000000040.snapshot.tmp").write_bytes(b"half")
    bad = snapshot_path(tmp_path, 20)
    data = bytearray(bad.read_bytes())
    data[-1] ^= 0xFF
    bad.write_bytes(bytes(data))
    assert load_latest_snapshot(tmp_path, up_to_offset=25) == LoadedSnapshot(10, (ENTRY,))
    assert list_snapshot_offsets(tmp_path) == [10, 30]
    assert not (tmp_path / "00000000000000000040.snapshot.tmp").exists()
    assert load_latest_snapshot(tmp_path, up_to_offset=9) is None
    assert load_latest_snapshot(tmp_path / "missing", up_to_offset=9) is None


# --- snapshots and restarts ------------------------------------------------------------------


def essentials(state: ProducerStateManager) -> dict[int, tuple[int, int, int, int | None, int]]:
    """What must survive any reload: epoch, last sequence and offset, transaction, timestamp."""
    return {
        pid: (
            e.producer_epoch,
            e.last_sequence,
            e.last_data_offset,
            e.current_txn_first_offset,
            e.last_timestamp,
        )
        for pid, e in state.producers.items()
    }


def load(directory: Path, log: FakeLog, *, log_start_offset: int = 0) -> ProducerStateManager:
    return ProducerStateManager.load(
        directory,
        log_start_offset=log_start_offset,
        log_end_offset=log.end,
        batches_from=log.batches_from,
        now_ms=log.now,
        producer_id_expiration_ms=HOUR,
    )


def test_snapshot_round_trip_and_restart(tmp_path: Path, log: FakeLog) -> None:
    log.write(batch(1, 0, 0, 2))
    log.write(batch(2, 4, 7, transactional=True))
    log.write(batch(1, 0, 2, 3))
    path = log.state.take_snapshot(tmp_path)
    assert path == snapshot_path(tmp_path, log.end)
    assert log.state.take_snapshot(tmp_path) is None  # nothing new since
    assert log.state.last_snapshot_offset == log.end
    rows = read_snapshot(snapshot_path(tmp_path, log.end))
    assert rows == log.state.snapshot_entries()
    assert [r.producer_id for r in rows] == [1, 2]
    assert rows[0].last_sequence == 4 and rows[0].offset_delta == 2
    assert rows[1].current_txn_first_offset == 2
    restarted = load(tmp_path, log)
    assert log.replayed_from == []  # the snapshot is at the log end: no replay
    assert essentials(restarted) == essentials(log.state)
    assert restarted.ongoing_transactions() == {2: 2}
    assert restarted.map_end_offset == log.end and restarted.last_snapshot_offset == log.end
    # only the last batch of each producer survives a snapshot
    log.state = restarted
    assert isinstance(log.append(batch(1, 0, 2, 3)), DuplicateBatch)
    assert error_of(log, batch(1, 0, 0, 2)) == ErrorCode.out_of_order_sequence_number
    log.write(batch(1, 0, 5))


def test_snapshot_keeps_a_batch_that_wraps_the_sequence(tmp_path: Path, log: FakeLog) -> None:
    written = log.write(batch(1, 0, INT32_MAX - 1, 4))[0]  # INT32_MAX - 1 .. 1
    log.state.take_snapshot(tmp_path)
    log.state = load(tmp_path, log)
    entry = log.state.entry(1)
    assert entry is not None
    assert (entry.first_sequence, entry.last_sequence) == (INT32_MAX - 1, 1)
    duplicate = log.append(batch(1, 0, INT32_MAX - 1, 4))
    assert isinstance(duplicate, DuplicateBatch)
    assert (duplicate.base_offset, duplicate.last_offset) == (0, written.last_offset)
    log.write(batch(1, 0, 2))


def test_restart_replays_the_log_after_the_snapshot(tmp_path: Path, log: FakeLog) -> None:
    log.write(batch(1, 0, 0))
    log.state.take_snapshot(tmp_path)
    snapshot_at = log.end
    later = [log.write(plain(), batch(1, 0, seq))[1] for seq in range(1, 4)]
    log.write(batch(3, 0, 0))
    restarted = load(tmp_path, log)
    assert log.replayed_from == [snapshot_at]
    assert essentials(restarted) == essentials(log.state)
    log.state = restarted
    for header in later:
        duplicate = log.append(batch(1, 0, header.base_sequence))
        assert isinstance(duplicate, DuplicateBatch)
        assert duplicate.base_offset == header.base_offset
    assert isinstance(log.append(batch(1, 0, 0)), DuplicateBatch)  # kept by the snapshot


def test_corrupt_snapshot_is_ignored_and_the_log_replayed(tmp_path: Path, log: FakeLog) -> None:
    log.write(batch(1, 0, 0, 3))
    log.write(batch(2, 1, 0, transactional=True))
    log.state.take_snapshot(tmp_path)
    log.write(batch(1, 0, 3))
    log.state.take_snapshot(tmp_path)
    for path in tmp_path.glob("*.snapshot"):
        data = bytearray(path.read_bytes())
        data[-3] ^= 0x55
        path.write_bytes(bytes(data))
    restarted = load(tmp_path, log)
    assert log.replayed_from == [0]
    assert list_snapshot_offsets(tmp_path) == []
    assert essentials(restarted) == essentials(log.state)
    assert restarted.ongoing_transactions() == {2: 3}
    assert restarted.producers[1].batches == log.state.producers[1].batches


def test_load_deletes_snapshots_outside_the_log(tmp_path: Path, log: FakeLog) -> None:
    log.write(batch(1, 0, 0))
    write_snapshot(tmp_path, 0, [])
    write_snapshot(tmp_path, 500, [replace(ENTRY, producer_id=9)])  # beyond the log end
    restarted = load(tmp_path, log)
    assert list_snapshot_offsets(tmp_path) == [0]
    assert sorted(restarted.producers) == [1]
    restarted = load(tmp_path, log, log_start_offset=1)  # the snapshot at 0 is below the start
    assert list_snapshot_offsets(tmp_path) == []
    assert len(restarted) == 0 and restarted.map_end_offset == 1


def test_take_snapshot_offset_must_be_the_map_end(tmp_path: Path, log: FakeLog) -> None:
    log.write(plain(4))
    with pytest.raises(ValueError, match="up to 4, cannot snapshot it at 3"):
        log.state.take_snapshot(tmp_path, offset=3)
    assert log.state.take_snapshot(tmp_path, offset=4) == snapshot_path(tmp_path, 4)
    log.state.update_map_end_offset(9)  # e.g. a roll after a follower's gap
    assert log.state.take_snapshot(tmp_path) == snapshot_path(tmp_path, 9)


def test_rebuild_is_pure(log: FakeLog) -> None:
    log.write(batch(1, 0, 0))
    log.write(batch(2, 0, 5))
    snapshot = LoadedSnapshot(1, tuple(log.state.snapshot_entries()[:1]))
    log.write(batch(1, 0, 1, 2))
    state = rebuild(snapshot, log.headers, end_offset=log.end)
    assert essentials(state) == essentials(log.state)
    assert state.map_end_offset == log.end
    partial = rebuild(None, log.headers, end_offset=1)
    assert sorted(partial.producers) == [1] and partial.map_end_offset == 1
    entry = ProducerStateEntry.from_snapshot_entry(replace(ENTRY, last_offset=-1))
    assert entry.is_empty and entry.last_sequence == -1


# --- truncation ------------------------------------------------------------------------------


def test_truncation_reloads_from_a_snapshot_below(tmp_path: Path, log: FakeLog) -> None:
    log.write(batch(1, 0, 0))
    log.state.take_snapshot(tmp_path)  # at 1
    log.write(batch(1, 0, 1))
    log.write(batch(2, 0, 0))
    log.state.take_snapshot(tmp_path)  # at 3
    lost = log.write(batch(1, 0, 2, 3))[0]
    log.write(batch(3, 0, 0, transactional=True))
    log.truncate(lost.base_offset + 1)  # inside the batch: the whole batch goes
    assert log.end == 3
    log.state.truncate_and_reload(
        tmp_path,
        log_start_offset=0,
        log_end_offset=log.end,
        batches_from=log.batches_from,
        now_ms=log.now,
    )
    assert list_snapshot_offsets(tmp_path) == [1, 3]
    assert sorted(log.state.producers) == [1, 2]
    assert log.state.ongoing_transactions() == {}
    entry = log.state.entry(1)
    assert entry is not None and entry.last_sequence == 1
    assert log.state.map_end_offset == 3
    # the lost batch is written again when the producer retries it
    again = log.write(batch(1, 0, 2, 3))[0]
    assert again.base_offset == 3
    log.truncate(2)
    log.state.truncate_and_reload(
        tmp_path,
        log_start_offset=0,
        log_end_offset=log.end,
        batches_from=log.batches_from,
        now_ms=log.now,
    )
    assert list_snapshot_offsets(tmp_path) == [1]
    assert log.replayed_from[-1] == 1
    assert sorted(log.state.producers) == [1]
    assert log.state.entry(1) is not None and log.state.producers[1].last_sequence == 1


def test_truncation_to_the_map_end_reloads_nothing(tmp_path: Path, log: FakeLog) -> None:
    log.write(batch(1, 0, 0))
    log.state.truncate_and_reload(
        tmp_path,
        log_start_offset=0,
        log_end_offset=1,
        batches_from=log.batches_from,
        now_ms=log.now,
    )
    assert log.replayed_from == [] and sorted(log.state.producers) == [1]


def test_truncate_fully(tmp_path: Path, log: FakeLog) -> None:
    log.write(batch(1, 0, 0, transactional=True))
    log.state.take_snapshot(tmp_path)
    log.state.truncate_fully_and_start_at(tmp_path, 40)
    assert len(log.state) == 0 and log.state.first_undecided_offset() is None
    assert log.state.map_end_offset == 40 and list_snapshot_offsets(tmp_path) == []
    assert log.state.last_snapshot_offset is None


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[tuple[str, int, int]], list[int], int]:
    """Appends by three producers (data, transactional data, markers, epoch bumps)."""
    steps = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["data", "txn", "marker", "bump", "plain"]),
                st.integers(1, 3),
                st.integers(1, 4),
            ),
            min_size=1,
            max_size=25,
        )
    )
    snapshot_points = draw(st.lists(st.integers(0, len(steps)), max_size=4, unique=True))
    truncate_at = draw(st.integers(0, len(steps)))
    return steps, sorted(snapshot_points), truncate_at


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_truncate_and_reload_equals_replaying_the_prefix(
    history: tuple[list[tuple[str, int, int]], list[int], int],
) -> None:
    steps, snapshot_points, truncate_at = history
    directory = scratch_directory("strom-producer-state-")
    try:
        log = FakeLog(ProducerStateManager(producer_id_expiration_ms=HOUR))
        epochs = {1: 0, 2: 0, 3: 0}
        sequences = {1: 0, 2: 0, 3: 0}
        in_txn: set[int] = set()
        boundaries = [0]
        for index, (kind, pid, count) in enumerate(steps):
            if index in snapshot_points:
                log.state.take_snapshot(directory)
            log.now += 1
            if kind == "plain":
                log.write(plain(count))
            elif kind == "marker":
                log.append(
                    marker(pid, epochs[pid], timestamp=log.now), origin=AppendOrigin.COORDINATOR
                )
                in_txn.discard(pid)
            else:
                if kind == "bump":
                    epochs[pid] += 1
                    sequences[pid] = 0
                transactional = pid in in_txn or kind == "txn"
                log.write(
                    batch(
                        pid,
                        epochs[pid],
                        sequences[pid],
                        count,
                        timestamp=log.now,
                        transactional=transactional,
                    )
                )
                sequences[pid] += count
                if transactional:
                    in_txn.add(pid)
            boundaries.append(log.end)
        if len(steps) in snapshot_points:
            log.state.take_snapshot(directory)
        cut = boundaries[truncate_at]
        log.truncate(cut)
        log.state.truncate_and_reload(
            directory,
            log_start_offset=0,
            log_end_offset=cut,
            batches_from=log.batches_from,
            now_ms=log.now,
        )
        expected = rebuild(None, log.headers, end_offset=cut)
        assert essentials(log.state) == essentials(expected)
        assert log.state.ongoing_transactions() == expected.ongoing_transactions()
        assert log.state.map_end_offset == cut
        assert all(offset <= cut for offset in list_snapshot_offsets(directory))
        for pid, entry in log.state.producers.items():
            if entry.batches:  # each producer's last batch is still known as a duplicate
                last, full = entry.batches[-1], expected.producers[pid].batches[-1]
                assert (last.first_sequence, last.last_sequence, last.first_offset) == (
                    full.first_sequence,
                    full.last_sequence,
                    full.first_offset,
                )
    finally:
        shutil.rmtree(directory)


# --- random producers against a model --------------------------------------------------------

EXPIRATION_MS = 10_000
PRODUCERS = (1, 2, 3)
FIRST_SEQUENCE = {1: 0, 2: INT32_MAX - 4, 3: 0}
"""Producer 2 starts near the int32 limit (allowed for an unknown producer) to wrap around."""


@dataclass
class ModelBatch:
    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int
    timestamp: int


@dataclass
class ModelProducer:
    """What the broker should know of one producer."""

    epoch: int
    batches: list[ModelBatch] = field(default_factory=list)
    cached_from: int = 0
    """Batches before this index are forgotten (a restart keeps only the snapshot's last)."""
    last_active: int = 0

    def cached(self) -> list[ModelBatch]:
        return self.batches[max(self.cached_from, len(self.batches) - 5) :]


@dataclass
class Client:
    """What the producer itself believes: its epoch and next sequence."""

    epoch: int
    next_sequence: int
    sent: list[BatchHeader] = field(default_factory=list)


@dataclass
class ModelSnapshot:
    offset: int
    producers: dict[int, tuple[int, int]]
    """producer id -> (epoch, number of batches in that epoch) at the snapshot"""
    removals: int


class ProducerStateMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = scratch_directory("strom-producer-state-")
        self.log = FakeLog(ProducerStateManager(producer_id_expiration_ms=EXPIRATION_MS))
        self.model: dict[int, ModelProducer] = {}
        self.clients = {pid: Client(0, FIRST_SEQUENCE[pid]) for pid in PRODUCERS}
        self.snapshots: list[ModelSnapshot] = []
        self.removals = 0

    def teardown(self) -> None:
        shutil.rmtree(self.directory)

    # what the model predicts

    def send(self, header: BatchHeader) -> None:
        pid = header.producer_id
        known = self.model.get(pid)
        last_sequence = (header.base_sequence + header.record_count - 1) % 2**31
        expected: ErrorCode | ModelBatch | None = None  # None: appended
        if known is not None:
            if header.producer_epoch < known.epoch:
                expected = ErrorCode.invalid_producer_epoch
            elif header.producer_epoch > known.epoch:
                if header.base_sequence != 0:
                    expected = ErrorCode.out_of_order_sequence_number
            else:
                for cached in known.cached():
                    if (cached.first_sequence, cached.last_sequence) == (
                        header.base_sequence,
                        last_sequence,
                    ):
                        expected = cached
                follows = (known.batches[-1].last_sequence + 1) % 2**31
                if expected is None and header.base_sequence != follows:
                    expected = ErrorCode.out_of_order_sequence_number
        if expected is None or isinstance(expected, ModelBatch):
            event("outcome", "appended" if expected is None else "duplicate")
        else:
            event("outcome", expected.name)
        if isinstance(expected, ErrorCode):
            assert error_of(self.log, header) == expected
            return
        outcome = self.log.append(header)
        if isinstance(expected, ModelBatch):
            assert isinstance(outcome, DuplicateBatch)
            assert (outcome.base_offset, outcome.last_offset) == (
                expected.base_offset,
                expected.last_offset,
            )
            return
        assert isinstance(outcome, list), f"expected {header} to be appended, got {outcome}"
        (written,) = outcome
        appended = ModelBatch(
            header.base_sequence,
            last_sequence,
            written.base_offset,
            written.last_offset,
            header.max_timestamp,
        )
        if known is None or known.epoch != header.producer_epoch:
            known = self.model[pid] = ModelProducer(epoch=header.producer_epoch)
        known.batches.append(appended)
        known.last_active = self.log.now
        client = self.clients[pid]
        client.epoch = header.producer_epoch
        client.next_sequence = (last_sequence + 1) % 2**31
        client.sent.append(header)

    def expire_model(self) -> set[int]:
        expired = {
            pid for pid, p in self.model.items() if self.log.now - p.last_active >= EXPIRATION_MS
        }
        for pid in expired:
            del self.model[pid]
        if expired:
            self.removals += 1
        return expired

    def make(self, pid: int, epoch: int, sequence: int, count: int) -> BatchHeader:
        return batch(pid, epoch, sequence, count, timestamp=self.log.now)

    # rules

    @rule(pid=st.sampled_from(PRODUCERS), count=st.integers(1, 3))
    def send_next(self, pid: int, count: int) -> None:
        client = self.clients[pid]
        self.send(self.make(pid, client.epoch, client.next_sequence, count))

    @rule(pid=st.sampled_from(PRODUCERS), data=st.data())
    def retry(self, pid: int, data: st.DataObject) -> None:
        sent = self.clients[pid].sent
        if sent:
            self.send(data.draw(st.sampled_from(sent[-8:])))

    @rule(pid=st.sampled_from(PRODUCERS), skip=st.integers(1, 3))
    def gap(self, pid: int, skip: int) -> None:
        client = self.clients[pid]
        self.send(self.make(pid, client.epoch, (client.next_sequence + skip) % 2**31, 1))

    @rule(pid=st.sampled_from(PRODUCERS), sequence=st.sampled_from([0, 0, 1, 7]))
    def bump_epoch(self, pid: int, sequence: int) -> None:
        self.send(self.make(pid, self.clients[pid].epoch + 1, sequence, 1))

    @rule(pid=st.sampled_from(PRODUCERS))
    def zombie(self, pid: int) -> None:
        client = self.clients[pid]
        if client.epoch > 0:
            self.send(self.make(pid, client.epoch - 1, client.next_sequence, 1))

    @initialize()
    def first_batches(self) -> None:
        for pid in PRODUCERS:
            self.send_next(pid, 1)

    @rule(ms=st.integers(0, 12_000))
    def time_passes(self, ms: int) -> None:
        self.log.now += ms

    @rule()
    def expire(self) -> None:
        expired = self.expire_model()
        event("expired", "some" if expired else "none")
        assert set(self.log.state.remove_expired(self.log.now)) == expired

    @rule()
    def snapshot(self) -> None:
        written = self.log.state.take_snapshot(self.directory)
        if written is not None:
            producers = {pid: (p.epoch, len(p.batches)) for pid, p in self.model.items()}
            self.snapshots.append(ModelSnapshot(self.log.end, producers, self.removals))
        else:
            assert self.snapshots and self.snapshots[-1].offset == self.log.end

    @precondition(
        lambda self: (
            self.snapshots[-1].removals == self.removals if self.snapshots else self.removals == 0
        )
    )
    @rule()
    def restart(self) -> None:
        """Load from the latest snapshot plus the log after it; expired producers go."""
        event("restart", "from a snapshot" if self.snapshots else "from the log")
        self.log.state = ProducerStateManager.load(
            self.directory,
            log_start_offset=0,
            log_end_offset=self.log.end,
            batches_from=self.log.batches_from,
            now_ms=self.log.now,
            producer_id_expiration_ms=EXPIRATION_MS,
        )
        if self.snapshots:
            for pid, (epoch, count) in self.snapshots[-1].producers.items():
                known = self.model.get(pid)
                if known is not None and known.epoch == epoch and count:
                    known.cached_from = max(known.cached_from, count - 1)
        for known in self.model.values():
            # known from the log only: idle since its last batch's record time
            known.last_active = known.batches[-1].timestamp
        self.expire_model()

    @invariant()
    def state_matches_the_model(self) -> None:
        state = self.log.state
        assert state.map_end_offset == self.log.end
        assert sorted(state.producers) == sorted(self.model)
        for pid, known in self.model.items():
            entry = state.producers[pid]
            assert entry.producer_epoch == known.epoch
            cached = [
                (b.first_sequence, b.last_sequence, b.first_offset, b.last_offset)
                for b in entry.batches
            ]
            assert cached == [
                (b.first_sequence, b.last_sequence, b.base_offset, b.last_offset)
                for b in known.cached()
            ]


TestProducerStateMachine = ProducerStateMachine.TestCase
TestProducerStateMachine.settings = settings(
    max_examples=100,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
