"""LogManager: a data directory of partition logs, checkpoints, clean shutdown."""

from __future__ import annotations

from pathlib import Path

import pytest

from strom.common import TopicPartition
from strom.common.clock import ManualClock
from strom.storage import segment as segment_module
from strom.storage.checkpoint import read_offset_checkpoint
from strom.storage.log_config import LogConfig
from strom.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager

from .batches import make_batch

A0 = TopicPartition("orders", 0)
A1 = TopicPartition("orders", 1)
B0 = TopicPartition("my-topic-with-dashes", 0)


def test_create_checkpoint_and_clean_restart(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = LogManager(tmp_path, clock)
    assert not manager.had_clean_shutdown
    for tp, batches in ((A0, 3), (A1, 1), (B0, 2)):
        log = manager.get_or_create(tp, LogConfig(segment_bytes=300))
        for _ in range(batches):
            log.append(make_batch(3, value_size=20))
    assert manager.get_or_create(A0) is manager.get(A0)
    manager.get(A0).advance_log_start_offset(4)  # type: ignore[union-attr]
    manager.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert read_offset_checkpoint(tmp_path / "recovery-point-offset-checkpoint") == {
        A0: 9,
        A1: 3,
        B0: 6,
    }
    assert read_offset_checkpoint(tmp_path / "log-start-offset-checkpoint") == {
        A0: 4,
        A1: 0,
        B0: 0,
    }

    def no_rescan(self: object) -> int:
        raise AssertionError("a clean shutdown must not be followed by a rescan")

    monkeypatch.setattr(segment_module.LogSegment, "recover", no_rescan)
    again = LogManager(tmp_path, clock, config_for=lambda tp: LogConfig(segment_bytes=300))
    assert again.had_clean_shutdown
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()  # a crash from now on is seen
    assert set(again.all()) == {A0, A1, B0}
    assert again.get(A0).log_start_offset == 4  # type: ignore[union-attr]
    assert again.get(B0).log_end_offset == 6  # type: ignore[union-attr]
    assert again.get(B0).config.segment_bytes == 300  # type: ignore[union-attr]
    again.close()


def test_unclean_restart_recovers_from_the_checkpoint(tmp_path: Path, clock: ManualClock) -> None:
    manager = LogManager(tmp_path, clock)
    log = manager.get_or_create(A0)
    log.append(make_batch(3))
    log.flush()
    manager.checkpoint()
    log.append(make_batch(2))
    manager.close_without_flush()  # crash
    log_file = tmp_path / "orders-0" / f"{0:020d}.log"
    with log_file.open("ab") as file:
        file.write(b"\xff" * 33)
    again = LogManager(tmp_path, clock)
    assert not again.had_clean_shutdown
    recovered = again.get(A0)
    assert recovered is not None
    assert recovered.log_end_offset == 5
    assert recovered.recovery_point == 3
    again.close()


def test_delete_removes_the_directory(tmp_path: Path, clock: ManualClock) -> None:
    manager = LogManager(tmp_path, clock)
    manager.get_or_create(A0).append(make_batch(1))
    manager.get_or_create(A1)
    assert manager.delete(A0)
    assert not manager.delete(A0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["orders-1"]
    (tmp_path / "orders-7.0123abcd-delete").mkdir()  # a leftover of an interrupted delete
    (tmp_path / "not a partition").mkdir()
    manager.close()
    again = LogManager(tmp_path, clock)
    assert set(again.all()) == {A1}
    assert not (tmp_path / "orders-7.0123abcd-delete").exists()
    again.close()


def test_run_retention(tmp_path: Path, clock: ManualClock) -> None:
    manager = LogManager(tmp_path, clock)
    config = LogConfig(segment_bytes=300, retention_ms=1000)
    for tp in (A0, A1):
        log = manager.get_or_create(tp, config)
        for _ in range(4):
            log.append(make_batch(3, value_size=20, timestamp=clock.now_ms()))
    clock.advance(5000)
    deleted = manager.run_retention(clock.now_ms(), {A0: 12})
    assert deleted == {A0: 2}  # A1 has no known high watermark: left alone
    assert manager.get(A0).log_start_offset == 12  # type: ignore[union-attr]
    assert read_offset_checkpoint(tmp_path / "log-start-offset-checkpoint")[A0] == 12
    manager.close()


def test_unreadable_checkpoint_means_full_recovery(tmp_path: Path, clock: ManualClock) -> None:
    manager = LogManager(tmp_path, clock)
    manager.get_or_create(A0).append(make_batch(2))
    manager.close_without_flush()
    (tmp_path / "recovery-point-offset-checkpoint").write_text("garbage")
    again = LogManager(tmp_path, clock)
    assert again.get(A0).log_end_offset == 2  # type: ignore[union-attr]
    again.close()
