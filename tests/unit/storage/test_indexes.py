"""The offset and time indexes: Kafka's file formats, lookups, preallocation, sanity checks."""

from __future__ import annotations

import bisect
import itertools
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strom.storage.offset_index import CorruptIndexError, OffsetIndex, OffsetPosition
from strom.storage.time_index import TimeIndex, TimestampOffset


def test_offset_index_format_is_kafkas(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, 100, max_index_size=1000, writable=True)
    assert path.stat().st_size == 1000 // 8 * 8  # preallocated, whole entries
    index.append(103, 200)
    index.append(110, 4300)
    index.close()
    assert path.read_bytes() == struct.pack(">ii", 3, 200) + struct.pack(">ii", 10, 4300)


def test_offset_index_lookup_is_largest_entry_at_or_below(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "a.index", 50, max_index_size=800, writable=True)
    assert index.lookup(70) == OffsetPosition(50, 0)  # empty: the segment's start
    for i in range(1, 40):
        index.append(50 + 10 * i, 1000 * i)
    assert index.lookup(49) == OffsetPosition(50, 0)
    assert index.lookup(59) == OffsetPosition(50, 0)
    assert index.lookup(60) == OffsetPosition(60, 1000)
    assert index.lookup(61) == OffsetPosition(60, 1000)
    assert index.lookup(235) == OffsetPosition(230, 18000)
    assert index.lookup(10**9) == OffsetPosition(440, 39000)
    index.close()


@settings(max_examples=300, deadline=None)
@given(
    gaps=st.lists(st.integers(1, 2**16) | st.integers(2**16, 2**23), max_size=200),
    targets=st.lists(st.integers(-5, 2**30), min_size=1, max_size=10),
)
def test_lookups_agree_with_bisect_however_uneven_the_keys(
    gaps: list[int], targets: list[int]
) -> None:
    """The interpolating search finds what a plain bisection finds, for any increasing keys."""
    keys = list(itertools.accumulate(gaps))
    positions = [1000 * i for i in range(len(keys))]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "0.index"
        path.write_bytes(
            b"".join(struct.pack(">ii", k, p) for k, p in zip(keys, positions, strict=True))
        )
        index = OffsetIndex(path, 0, max_index_size=0, writable=False)
        probes = targets + keys + [key - 1 for key in keys] + [key + 1 for key in keys]
        for target in probes:
            n = bisect.bisect_right(keys, target) - 1
            expected = OffsetPosition(keys[n], positions[n]) if n >= 0 else OffsetPosition(0, 0)
            assert index.lookup(target) == expected
            n = bisect.bisect_right(positions, target) - 1
            assert index.batch_start_before(target) == (positions[n - 1] if n > 0 else 0)
        index.close()


def test_offset_index_rejects_out_of_order_and_full(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "a.index", 0, max_index_size=16, writable=True)
    index.append(5, 10)
    with pytest.raises(ValueError, match="not after"):
        index.append(5, 20)
    with pytest.raises(ValueError, match="not after"):
        index.append(6, 10)
    index.append(6, 20)
    assert index.is_full
    with pytest.raises(ValueError, match="full"):
        index.append(7, 30)
    index.close()


def test_offset_index_truncate_trim_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0, max_index_size=4096, writable=True)
    for i in range(1, 11):
        index.append(i * 10, i * 100)
    index.truncate_to(55)  # drops entries >= 55
    assert index.entries == 5
    assert index.lookup(1000) == OffsetPosition(50, 500)
    index.trim()
    assert path.stat().st_size == 40
    assert not index.writable
    assert index.lookup(45) == OffsetPosition(40, 400)
    index.close()
    again = OffsetIndex(path, 0, max_index_size=4096, writable=False)
    assert again.entries == 5
    again.check(log_size=1000)
    again.truncate_to(30)  # a read-only index is cut on disk at once
    assert path.stat().st_size == 16
    again.resize(4096)
    assert path.stat().st_size == 4096 and again.entries == 2
    again.append(35, 350)
    again.close()
    assert path.stat().st_size == 24


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\x00" * 7, "multiple"),
        (struct.pack(">ii", 5, 100) + struct.pack(">ii", 4, 200), "offsets"),
        (struct.pack(">ii", 5, 100) + struct.pack(">ii", 6, 100), "positions"),
        (struct.pack(">ii", 5, 100) + bytes(8), "offsets"),  # a preallocated tail
        (struct.pack(">ii", 5, 5000), "past the log"),
    ],
)
def test_offset_index_sanity_check(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(content)
    index = OffsetIndex(path, 0, max_index_size=4096, writable=False)
    with pytest.raises(CorruptIndexError, match=reason):
        index.check(log_size=1000)
    index.close()


def test_time_index_format_and_lookup(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000010.timeindex"
    index = TimeIndex(path, 10, max_index_size=120, writable=True)
    assert index.last_entry == TimestampOffset(-1, 10)
    assert index.lookup(5000) == TimestampOffset(-1, 10)
    index.maybe_append(1000, 12)
    index.maybe_append(1000, 14)  # not larger: skipped
    index.maybe_append(900, 15)  # smaller: skipped
    index.maybe_append(2000, 15)
    index.maybe_append(3000, 15)
    assert index.entries == 3
    assert index.lookup(999) == TimestampOffset(-1, 10)
    assert index.lookup(1000) == TimestampOffset(1000, 12)
    assert index.lookup(2500) == TimestampOffset(2000, 15)
    assert index.lookup(10**12) == TimestampOffset(3000, 15)
    with pytest.raises(ValueError, match="below"):
        index.maybe_append(4000, 11)
    index.close()
    assert path.read_bytes() == b"".join(
        struct.pack(">qi", t, o) for t, o in [(1000, 2), (2000, 5), (3000, 5)]
    )


def test_time_index_keeps_a_slot_for_the_roll_entry(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "a.timeindex", 0, max_index_size=36, writable=True)
    assert index.max_entries == 3
    index.maybe_append(1, 1)
    index.maybe_append(2, 2)
    assert index.is_full  # entries >= max_entries - 1
    with pytest.raises(ValueError, match="full"):
        index.maybe_append(3, 3)
    index.maybe_append(3, 3, skip_full_check=True)
    assert index.entries == 3
    index.close()


def test_time_index_truncate_and_check(tmp_path: Path) -> None:
    path = tmp_path / "a.timeindex"
    index = TimeIndex(path, 0, max_index_size=1200, writable=True)
    for i in range(1, 6):
        index.maybe_append(i * 100, i * 10)
    index.truncate_to(30)
    assert index.last_entry == TimestampOffset(200, 20)
    index.check(log_size=10)
    index.close()
    path.write_bytes(struct.pack(">qi", 200, 5) + struct.pack(">qi", 100, 6))
    bad = TimeIndex(path, 0, max_index_size=1200, writable=False)
    with pytest.raises(CorruptIndexError, match="increase"):
        bad.check(log_size=10)
    bad.close()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc")
def test_entries_are_written_with_pwrite_not_stored_through_the_map(tmp_path: Path) -> None:
    """The first store through a writable map of the sparse preallocated file cost ~2 ms of
    CPU on the broker's event loop (ext4, up to 20 ms wall on a busy disk), at each new
    segment's first offset and time index entries, on leaders and followers alike: the index
    is mapped read-only and entries go in with pwrite. A lookup reads what was written."""
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, 100, max_index_size=4096, writable=True)
    index.append(103, 200)
    maps = [line for line in Path("/proc/self/maps").read_text().splitlines() if str(path) in line]
    assert maps, "the index is mapped"
    assert all(line.split()[1].startswith("r-") for line in maps), maps
    assert index.lookup(105) == OffsetPosition(103, 200)
    index.close()
