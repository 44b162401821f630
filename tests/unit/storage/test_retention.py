"""Retention: Kafka's three rules as pure functions, and PartitionLog.delete_old_segments."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from strom.common.clock import ManualClock
from strom.storage.log_config import LogConfig
from strom.storage.retention import (
    deletable_by_log_start,
    deletable_by_retention_bytes,
    deletable_by_retention_ms,
    segments_to_delete,
)

from .batches import make_batch
from .conftest import OpenLog


@dataclass
class Seg:
    base_offset: int
    size: int
    largest_timestamp: int


SEGS = [Seg(0, 100, 1000), Seg(10, 100, 2000), Seg(20, 100, 3000), Seg(30, 50, 4000)]
END = 35


def test_retention_ms() -> None:
    def count(now: int, retention: int = 1000, hw: int = END) -> int:
        return deletable_by_retention_ms(
            SEGS, retention_ms=retention, now_ms=now, log_end_offset=END, high_watermark=hw
        )

    assert count(2000) == 0  # exactly retention.ms old: kept
    assert count(2001) == 1
    assert count(3500) == 2
    assert count(10_000) == 4  # the active segment too (the log rolls first)
    assert count(10_000, hw=20) == 2  # nothing at or above the high watermark
    assert count(10_000, hw=34) == 3
    assert count(10_000, retention=-1) == 0


def test_retention_bytes() -> None:
    def count(limit: int, hw: int = END) -> int:
        return deletable_by_retention_bytes(
            SEGS, retention_bytes=limit, log_end_offset=END, high_watermark=hw
        )

    assert count(350) == 0
    assert count(349) == 0  # deleting the oldest would leave 250 < 349
    assert count(250) == 1
    assert count(150) == 2
    assert count(0) == 4
    assert count(0, hw=15) == 1
    assert count(-1) == 0


def test_log_start_rule_never_takes_the_last_segment() -> None:
    def count(start: int) -> int:
        return deletable_by_log_start(
            SEGS, log_start_offset=start, log_end_offset=END, high_watermark=END
        )

    assert [count(s) for s in (0, 9, 10, 25, 30, 35)] == [0, 0, 1, 2, 3, 3]


def test_empty_active_segment_is_never_deletable() -> None:
    segments = [Seg(0, 100, 1000), Seg(10, 0, -1)]
    assert (
        deletable_by_retention_ms(
            segments, retention_ms=0, now_ms=10**9, log_end_offset=10, high_watermark=10
        )
        == 1
    )


def test_policy_decides() -> None:
    common = {"now_ms": 10**9, "log_start_offset": 12, "log_end_offset": END, "high_watermark": END}
    assert len(segments_to_delete(SEGS, config=LogConfig(retention_ms=10), **common)) == 4
    compact = LogConfig(retention_ms=10, cleanup_policy=frozenset({"compact"}))
    assert segments_to_delete(SEGS, config=compact, **common) == SEGS[:1]  # only log start
    both = LogConfig(retention_ms=10, cleanup_policy=frozenset({"compact", "delete"}))
    assert len(segments_to_delete(SEGS, config=both, **common)) == 4


def _fill(log_append: object, clock: ManualClock, batches: int) -> None:
    for _ in range(batches):
        log_append(make_batch(3, value_size=20, timestamp=clock.now_ms()))  # type: ignore[operator]
        clock.advance(1000)


def test_delete_old_segments_by_time(open_log: OpenLog, clock: ManualClock, log_dir: Path) -> None:
    log = open_log(LogConfig(segment_bytes=300, retention_ms=3500))
    _fill(log.append, clock, 6)  # 2 batches per segment, timestamps 1s apart
    assert len(log.segments) == 3
    assert log.delete_old_segments(clock.now_ms(), log.log_end_offset) == 1
    assert log.log_start_offset == 6 == log.segments[0].base_offset
    assert not (log_dir / f"{0:020d}.log").exists()
    assert not any(p.name.endswith(".deleted") for p in log_dir.iterdir())
    clock.advance(100_000)
    assert log.delete_old_segments(clock.now_ms(), high_watermark=15) == 1  # HW holds the rest
    assert log.delete_old_segments(clock.now_ms(), log.log_end_offset) == 1
    # everything went: a new empty active segment at the log end
    assert [s.base_offset for s in log.segments] == [18]
    assert (log.log_start_offset, log.log_end_offset) == (18, 18)
    assert log.append(make_batch(1)).base_offset == 18


def test_delete_old_segments_by_size(open_log: OpenLog, clock: ManualClock) -> None:
    size = len(make_batch(3, value_size=20))
    log = open_log(LogConfig(segment_bytes=300, retention_bytes=size * 3))
    _fill(log.append, clock, 7)
    assert [s.size for s in log.segments] == [2 * size, 2 * size, 2 * size, size]
    assert log.delete_old_segments(clock.now_ms(), log.log_end_offset) == 2
    assert log.size == 3 * size


def test_compacted_topic_keeps_old_segments(open_log: OpenLog, clock: ManualClock) -> None:
    log = open_log(LogConfig(segment_bytes=300, retention_ms=1))
    _fill(log.append, clock, 6)  # keyless: written before the topic became compacted
    log.update_config(replace(log.config, cleanup_policy=frozenset({"compact"})))
    assert log.delete_old_segments(clock.now_ms() + 10**6, log.log_end_offset) == 0
