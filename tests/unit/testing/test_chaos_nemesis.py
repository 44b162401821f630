"""The nemeses' pure parts: cutting logs back to their recovery points, the movable clock."""

from __future__ import annotations

from pathlib import Path

from strom.common import TopicPartition
from strom.common.clock import CLOCK_OFFSET_FILE_ENV, ManualClock, OffsetFileClock, system_clock
from strom.protocol.records import Record, build_batch
from strom.storage.log_config import LogConfig
from strom.storage.log_manager import LogManager
from strom.testing.chaos.nemesis import cut_to_recovery_points

ORDERS = TopicPartition("orders", 0)
METADATA = TopicPartition("__cluster_metadata", 0)


def _batch(count: int) -> bytes:
    return build_batch([Record(i, 1_000, None, b"v" * 20) for i in range(count)])


def _crashed_logs(data_dir: Path) -> None:
    """orders-0: offsets 0-8 in three segments, fsynced and checkpointed up to 6; the
    metadata log: 4 records, none flushed; then a crash."""
    manager = LogManager(data_dir, ManualClock())
    orders = manager.get_or_create(ORDERS, LogConfig(segment_bytes=200))
    metadata = manager.get_or_create(METADATA)
    for _ in range(2):
        orders.append(_batch(3))
    orders.flush()
    manager.checkpoint()
    orders.append(_batch(3))
    metadata.append(_batch(4))
    manager.close_without_flush()


def test_a_log_is_cut_to_its_recovery_point_and_loads_there(tmp_path: Path) -> None:
    _crashed_logs(tmp_path)
    cut = cut_to_recovery_points(tmp_path)
    assert cut["orders-0"] > 0
    assert "__cluster_metadata-0" not in cut  # Raft's log is fsynced before it commits
    again = LogManager(tmp_path, ManualClock())
    orders, metadata = again.get(ORDERS), again.get(METADATA)
    assert orders is not None and metadata is not None
    assert orders.log_end_offset == 6
    assert metadata.log_end_offset == 4
    again.close()


def test_a_log_without_a_recovery_point_loses_everything(tmp_path: Path) -> None:
    _crashed_logs(tmp_path)
    (tmp_path / "recovery-point-offset-checkpoint").unlink()
    cut_to_recovery_points(tmp_path)
    again = LogManager(tmp_path, ManualClock())
    orders = again.get(ORDERS)
    assert orders is not None
    assert orders.log_end_offset == 0
    again.close()


def test_the_offset_clock_moves_wall_time_only(tmp_path: Path) -> None:
    offset = tmp_path / "offset"
    offset.write_text("3600000", encoding="ascii")
    clock = system_clock({CLOCK_OFFSET_FILE_ENV: str(offset)})
    assert isinstance(clock, OffsetFileClock)
    plain = system_clock({})
    assert 3_599_000 < clock.now_ms() - plain.now_ms() < 3_601_000
    assert abs(clock.monotonic_ms() - plain.monotonic_ms()) < 1_000


def test_the_offset_clock_reads_a_missing_or_bad_file_as_no_offset(tmp_path: Path) -> None:
    clock = OffsetFileClock(str(tmp_path / "absent"))
    plain = system_clock({})
    assert abs(clock.now_ms() - plain.now_ms()) < 1_000
    (tmp_path / "bad").write_text("soon", encoding="ascii")
    assert abs(OffsetFileClock(str(tmp_path / "bad")).now_ms() - plain.now_ms()) < 1_000
