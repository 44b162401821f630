"""The metadata log on disk (``FileRaftLog``) and the ``quorum-state`` file: what survives a
reopen, epochs, truncation, flushing and snapshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strom.common.clock import ManualClock
from strom.raft import ElectionState, FileQuorumStateStore, OffsetAndEpoch, SnapshotWriter
from strom.raft.batches import data_batch
from strom.server.raft.raft_log import METADATA_LOG_CONFIG, METADATA_PARTITION, FileRaftLog
from strom.storage.log_config import LogConfig
from strom.storage.partition_log import PartitionLog

SMALL_SEGMENTS = LogConfig(
    max_message_bytes=METADATA_LOG_CONFIG.max_message_bytes,
    retention_ms=-1,
    retention_bytes=-1,
    segment_bytes=300,
)


def _open(base: Path) -> FileRaftLog:
    clock = ManualClock()
    partition = PartitionLog.open(
        base / METADATA_PARTITION.dir_name, config=SMALL_SEGMENTS, clock=clock
    )
    return FileRaftLog(partition, clock=clock)


def _append(log: FileRaftLog, epoch: int, *records: bytes) -> None:
    log.append(data_batch(list(records), base_offset=log.end_offset, epoch=epoch, timestamp=0))


def _snapshot(offset: int, epoch: int) -> bytes:
    frozen: list[bytes] = []
    writer = SnapshotWriter(
        OffsetAndEpoch(offset, epoch), timestamp=0, on_frozen=lambda _, data: frozen.append(data)
    )
    writer.append([b"state"])
    writer.freeze()
    return frozen[0]


def test_batches_epochs_and_the_flushed_offset_survive_a_reopen(tmp_path: Path) -> None:
    log = _open(tmp_path)
    _append(log, 1, b"a", b"b")
    _append(log, 1, b"c")
    _append(log, 3, b"d")
    assert log.flushed_end_offset == 0  # nothing is flushed until asked
    log.flush()
    assert (log.end_offset, log.flushed_end_offset, log.last_epoch) == (4, 4, 3)
    again = _open(tmp_path)  # as a restarted node does
    assert (again.start_offset, again.end_offset, again.last_epoch) == (0, 4, 3)
    assert again.end_offset_for_epoch(1) == OffsetAndEpoch(3, 1)
    assert again.end_offset_for_epoch(2) == OffsetAndEpoch(3, 1)  # no epoch 2: where 1 ended
    assert again.end_offset_for_epoch(3) == OffsetAndEpoch(4, 3)
    assert [b.records for b in again.batches(0, 4)] == [(b"a", b"b"), (b"c",), (b"d",)]


def test_an_append_must_continue_the_log(tmp_path: Path) -> None:
    log = _open(tmp_path)
    _append(log, 1, b"a")
    with pytest.raises(ValueError, match="batch at 5, the log ends at 1"):
        log.append(data_batch([b"x"], base_offset=5, epoch=1, timestamp=0))


def test_truncation_forgets_records_epochs_and_flushed_offsets_above_it(tmp_path: Path) -> None:
    log = _open(tmp_path)
    _append(log, 1, b"a", b"b")
    _append(log, 2, b"c")
    log.flush()
    log.truncate_to(2)
    assert (log.end_offset, log.flushed_end_offset, log.last_epoch) == (2, 2, 1)
    _append(log, 4, b"z")
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)


def test_a_flush_that_finishes_after_a_truncation_does_not_count_the_cut_records(
    tmp_path: Path,
) -> None:
    log = _open(tmp_path)
    _append(log, 1, b"a")
    _append(log, 1, b"b", b"c")
    job = log.begin_flush()
    log.truncate_to(1)  # the leader told this follower to drop its tail meanwhile
    _append(log, 2, b"x", b"y")
    job.run()
    job.done()
    assert log.flushed_end_offset == 1


def test_a_snapshot_moves_the_log_start_and_is_found_after_a_reopen(tmp_path: Path) -> None:
    log = _open(tmp_path)
    for n in range(12):
        _append(log, 1 + n // 6, b"record-%d" % n)
    log.flush()
    snapshot = OffsetAndEpoch(8, 2)
    log.store_snapshot(snapshot, _snapshot(8, 2))
    log.delete_before_snapshot(snapshot)
    assert log.start_offset == 8 and log.latest_snapshot() == snapshot
    assert log.read(0, 1 << 20)[:0] == b""  # reading below the start reads from the start
    assert next(log.batches(0, 12)).base_offset == 8
    again = _open(tmp_path)  # as a restarted node does
    assert again.latest_snapshot() == snapshot
    assert again.read_snapshot(snapshot) == _snapshot(8, 2)
    assert again.read_snapshot(OffsetAndEpoch(3, 1)) is None


def test_a_follower_reset_to_a_snapshot_starts_over_at_its_end(tmp_path: Path) -> None:
    log = _open(tmp_path)
    _append(log, 1, b"stale", b"tail")
    snapshot = OffsetAndEpoch(40, 5)
    log.store_snapshot(snapshot, _snapshot(40, 5))
    log.reset_to_snapshot(snapshot)
    assert (log.start_offset, log.end_offset, log.flushed_end_offset) == (40, 40, 40)
    assert log.last_epoch == 5
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(40, 5)
    _append(log, 6, b"next")
    assert log.end_offset == 41


def test_the_quorum_state_file_is_kafkas_json_and_reads_back(tmp_path: Path) -> None:
    store = FileQuorumStateStore(tmp_path / "quorum-state")
    assert store.read() is None
    store.write(ElectionState(7, leader_id=2, voted_id=2), frozenset({1, 2, 3}))
    data = json.loads((tmp_path / "quorum-state").read_text())
    assert data == {
        "clusterId": "",
        "leaderId": 2,
        "leaderEpoch": 7,
        "votedId": 2,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}],
        "data_version": 0,
    }
    assert store.read() == ElectionState(7, leader_id=2, voted_id=2)
    store.write(ElectionState(8), frozenset({1, 2, 3}))
    assert store.read() == ElectionState(8)
    assert not (tmp_path / "quorum-state.tmp").exists()


def test_a_damaged_quorum_state_file_is_named_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "quorum-state"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=r"cannot read .*quorum-state"):
        FileQuorumStateStore(path).read()
    path.write_text('{"leaderEpoch": 3}')
    with pytest.raises(ValueError, match="is not a quorum-state file"):
        FileQuorumStateStore(path).read()
