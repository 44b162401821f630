"""LogSegment on its own: names, append and indexes, lookups, recovery, truncation, files."""

from __future__ import annotations

from pathlib import Path

import pytest

from strom.common import KafkaError
from strom.storage import segment as segment_module
from strom.storage.log_config import LogConfig
from strom.storage.segment import (
    LogSegment,
    parse_segment_file_name,
    segment_file_name,
)

from .batches import headers_of, make_batch

NOW = 1_700_000_000_000


def _assigned(base_offset: int, *, timestamp: int = 1000, value_size: int = 10) -> bytes:
    return make_batch(3, base_offset=base_offset, timestamp=timestamp, value_size=value_size)


def _segment(tmp_path: Path, base_offset: int = 0, config: LogConfig | None = None) -> LogSegment:
    return LogSegment.create(tmp_path, base_offset, config=config or LogConfig(), now_ms=NOW)


def test_file_names() -> None:
    assert segment_file_name(42) == "00000000000000000042.log"
    assert segment_file_name(42, ".timeindex", ".swap") == "00000000000000000042.timeindex.swap"
    assert parse_segment_file_name("00000000000000000042.index.deleted") == (
        42,
        ".index",
        ".deleted",
    )
    assert parse_segment_file_name("00000000000000000042.log") == (42, ".log", "")
    assert parse_segment_file_name("leader-epoch-checkpoint") is None
    assert parse_segment_file_name("00000000000000000042.snapshot") is None
    assert parse_segment_file_name("0042.log") is None


def test_append_tracks_offsets_timestamps_and_size(tmp_path: Path) -> None:
    segment = _segment(tmp_path, 100)
    state = (segment.size, segment.next_offset, segment.max_timestamp)
    assert (*state, segment.first_batch_timestamp) == (0, 100, -1, None)
    first, second = _assigned(100, timestamp=500), _assigned(103, timestamp=400)
    segment.append(first + second, headers_of(first + second))
    assert segment.size == len(first) + len(second)
    assert segment.next_offset == 106
    assert (segment.max_timestamp, segment.offset_of_max_timestamp) == (500, 102)
    assert segment.first_batch_timestamp == 500
    assert segment.largest_timestamp == 500
    assert segment.read(0, segment.size) == first + second
    with pytest.raises(ValueError, match="do not fit"):
        again = _assigned(104)
        segment.append(again, headers_of(again))
    segment.close()


def test_translate_offset_finds_the_batch_holding_an_offset(tmp_path: Path) -> None:
    segment = _segment(tmp_path, 0, LogConfig(index_interval_bytes=150))
    data = b"".join(_assigned(3 * i) for i in range(20))
    segment.append(data, headers_of(data))
    assert segment.offset_index.entries > 3
    size = len(_assigned(0))
    for offset in range(60):
        position, header = segment.translate_offset(offset) or (None, None)
        assert header is not None and header.base_offset == offset - offset % 3
        assert position == (offset // 3) * size
    assert segment.translate_offset(60) is None
    segment.close()


def test_region_and_read(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    data = _assigned(0) + _assigned(3)
    segment.append(data, headers_of(data))
    with segment.region(10, 30) as region:
        assert region.read() == data[10:40]
        assert region.path == segment.log_path
    segment.close()


def test_recover_rebuilds_the_same_indexes(tmp_path: Path) -> None:
    segment = _segment(tmp_path, 0, LogConfig(index_interval_bytes=100))
    data = b"".join(_assigned(3 * i, timestamp=1000 + i) for i in range(30))
    segment.append(data, headers_of(data))
    entries = [segment.offset_index.entry(n) for n in range(segment.offset_index.entries)]
    times = [segment.time_index.entry(n) for n in range(segment.time_index.entries)]
    with segment.log_path.open("ab") as file:
        file.write(b"\x00\x00\x00\x00\x00\x00\x00\x5a\x00\x00\x01")
    assert segment.recover() == 11
    assert segment.size == len(data)
    assert segment.next_offset == 90
    assert [segment.offset_index.entry(n) for n in range(segment.offset_index.entries)] == entries
    assert [segment.time_index.entry(n) for n in range(segment.time_index.entries)] == times
    assert segment.log_path.stat().st_size == len(data)
    segment.close()


def test_recover_handles_batches_larger_than_its_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segment_module, "_RECOVERY_CHUNK", 100)
    segment = _segment(tmp_path)
    data = _assigned(0, value_size=300) + _assigned(3, value_size=10) + _assigned(6, value_size=500)
    segment.append(data, headers_of(data))
    with segment.log_path.open("ab") as file:
        file.write(_assigned(9, value_size=400)[:-1])
    assert segment.recover() == len(_assigned(9, value_size=400)) - 1
    assert segment.next_offset == 9
    segment.close()


def test_truncate_to_removes_whole_batches(tmp_path: Path) -> None:
    segment = _segment(tmp_path, 10, LogConfig(index_interval_bytes=0))
    data = b"".join(_assigned(10 + 3 * i, timestamp=100 + i) for i in range(5))
    segment.append(data, headers_of(data))
    size = len(_assigned(0))
    assert segment.truncate_to(17, now_ms=NOW) == 3 * size  # batch 16-18 holds 17
    assert (segment.size, segment.next_offset) == (2 * size, 16)
    assert segment.offset_index.last_offset == 15  # the entry of batch 13-15 stays
    assert segment.max_timestamp == 101
    assert segment.truncate_to(100, now_ms=NOW) == 0
    assert segment.truncate_to(10, now_ms=NOW + 5) == 2 * size
    assert (segment.size, segment.next_offset, segment.created_ms) == (0, 10, NOW + 5)
    assert segment.first_batch_timestamp is None
    segment.close()


def test_reopen_reads_state_from_the_files(tmp_path: Path) -> None:
    config = LogConfig(index_interval_bytes=50)
    segment = LogSegment.create(tmp_path, 7, config=config, now_ms=NOW)
    data = b"".join(_assigned(7 + 3 * i, timestamp=t) for i, t in enumerate([5, 90, 40, 70]))
    segment.append(data, headers_of(data))
    segment.close()
    again = LogSegment.open(tmp_path, 7, config=config, now_ms=NOW)
    assert again.index_problem() is None
    assert (again.size, again.next_offset) == (len(data), 19)
    assert (again.max_timestamp, again.offset_of_max_timestamp) == (90, 12)
    assert again.first_batch_timestamp == 5
    again.make_active(max_index_size=config.segment_index_bytes)
    more = _assigned(19)
    again.append(more, headers_of(more))
    assert again.next_offset == 22
    again.close()


def test_preallocated_log_is_trimmed_on_close(tmp_path: Path) -> None:
    segment = _segment(tmp_path, 0, LogConfig(preallocate=True, segment_bytes=4096))
    assert segment.log_path.stat().st_size == 4096
    data = _assigned(0)
    segment.append(data, headers_of(data))
    segment.close()
    assert segment.log_path.read_bytes() == data


def test_change_suffixes_and_delete(tmp_path: Path) -> None:
    segment = LogSegment.create(tmp_path, 5, config=LogConfig(), now_ms=NOW, suffix=".cleaned")
    data = _assigned(5)
    segment.append(data, headers_of(data))
    segment.change_file_suffixes(".cleaned", ".swap")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00000000000000000005.index.swap",
        "00000000000000000005.log.swap",
        "00000000000000000005.timeindex.swap",
    ]
    segment.change_file_suffixes(".swap", "")
    assert segment.read(0, len(data)) == data
    segment.delete()
    assert list(tmp_path.iterdir()) == []


def test_create_refuses_to_overwrite_data(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    data = _assigned(0)
    segment.append(data, headers_of(data))
    segment.close()
    with pytest.raises(KafkaError, match="non-empty"):
        _segment(tmp_path)
