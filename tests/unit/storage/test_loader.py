"""Opening a partition directory: crash recovery, index rebuilds, leftovers of a cleaner."""

from __future__ import annotations

from pathlib import Path

import pytest

from strom.common.clock import ManualClock
from strom.storage.corrupt_segment import CorruptSegmentError
from strom.storage.loader import load_log
from strom.storage.log_config import LogConfig
from strom.storage.partition_log import PartitionLog
from strom.storage.segment import LogSegment

from .batches import headers_of, make_batch, offsets_of
from .conftest import OpenLog

SMALL = LogConfig(segment_bytes=500, index_interval_bytes=100)


def _fill(log: PartitionLog, batches: int) -> list[bytes]:
    produced = []
    for i in range(batches):
        batch = make_batch(3, value_size=20, timestamp=1000 + i)
        log.append(batch)
        produced.append(batch)
    return produced


def _index_files(directory: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.suffix in (".index", ".timeindex")
    }


def _last_log(directory: Path) -> Path:
    return max(p for p in directory.iterdir() if p.suffix == ".log")


def _clean_reference(open_log: OpenLog, batches: int) -> tuple[bytes, int, dict[str, bytes]]:
    """Fill a log, close it cleanly: its data, end offset and (trimmed) index files."""
    log = open_log(SMALL)
    _fill(log, batches)
    data, end = log.read_bytes(0, max_bytes=10**7), log.log_end_offset
    log.close()
    return data, end, _index_files(log.directory)


@pytest.mark.parametrize(
    "tail",
    [
        b"garbage!" * 20,  # garbage after the last batch
        make_batch(3, value_size=20)[:70],  # a torn half batch
        bytes(4096),  # a zero-filled (preallocated) tail
        make_batch(3, value_size=20, base_offset=5),  # a valid batch with offsets going back
    ],
    ids=["garbage", "torn", "zeros", "offsets-back"],
)
def test_unclean_shutdown_keeps_every_whole_batch(
    open_log: OpenLog, log_dir: Path, tail: bytes
) -> None:
    data, end, indexes = _clean_reference(open_log, 12)
    log = open_log(SMALL, had_clean_shutdown=True)
    log.close_without_flush()  # the crash: active indexes left preallocated
    with _last_log(log_dir).open("ab") as file:
        file.write(tail)
    recovered = open_log(SMALL, recovery_point=0)
    assert recovered.log_end_offset == end
    assert recovered.read_bytes(0, max_bytes=10**7) == data
    assert recovered.recovery_point == 0  # recovered segments are not flushed yet
    recovered.close()
    assert _index_files(log_dir) == indexes  # rebuilt exactly as written


def test_unclean_shutdown_then_append_continues(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(SMALL)
    _fill(log, 5)
    log.close_without_flush()
    with _last_log(log_dir).open("ab") as file:
        file.write(make_batch(2)[:-1])
    log = open_log(SMALL)
    assert log.log_end_offset == 15
    assert log.append(make_batch(2)).base_offset == 15
    assert offsets_of(log.read_bytes(12, max_bytes=10**6)) == [(12, 14), (15, 16)]


def _flip_byte(path: Path, position: int) -> None:
    with path.open("r+b") as file:
        file.seek(position)
        byte = file.read(1)
        file.seek(position)
        file.write(bytes([byte[0] ^ 0xFF]))


def test_a_torn_tail_in_an_earlier_segment_drops_later_ones(
    open_log: OpenLog, log_dir: Path
) -> None:
    log = open_log(SMALL)
    _fill(log, 12)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 4
    second = log.segments[1]
    sizes = [h.size for h in headers_of(log.read_bytes(bases[1], max_bytes=10**6))]
    batches = (bases[2] - bases[1]) // 3
    log.close_without_flush()
    _flip_byte(second.log_path, sum(sizes[: batches - 1]) + 70)  # in its last batch
    log = open_log(SMALL, recovery_point=bases[1])
    assert log.log_end_offset == bases[2] - 3
    assert [s.base_offset for s in log.segments] == bases[:2]
    assert sorted(p.name for p in log_dir.iterdir() if p.suffix == ".log") == [
        f"{b:020d}.log" for b in bases[:2]
    ]


@pytest.mark.parametrize("damage", ["crc", "length", "offsets-back"])
def test_a_corrupt_middle_is_the_operators_decision(
    open_log: OpenLog, log_dir: Path, damage: str
) -> None:
    """Valid batches after a bad one: recovery refuses to cut them and names the place."""
    log = open_log(SMALL)
    _fill(log, 3)
    first = headers_of(log.read_bytes(0, max_bytes=10**6))[0]
    log.close_without_flush()
    path = _last_log(log_dir)
    if damage == "crc":
        _flip_byte(path, first.size + 70)
    elif damage == "length":
        _flip_byte(path, first.size + 16)  # the magic byte: no batch there at all
    else:
        data = bytearray(path.read_bytes())
        data[first.size : first.size + 8] = (0).to_bytes(8, "big")  # base offset 0 again
        path.write_bytes(data)
    before = path.read_bytes()
    with pytest.raises(CorruptSegmentError) as caught:
        open_log(SMALL)
    error = caught.value
    assert (error.path, error.position, error.offset) == (path, first.size, 3)
    assert f"truncate -s {first.size} {path}" in error.message
    assert "\n" not in error.message
    assert path.read_bytes() == before  # nothing cut


def test_recovery_starts_at_the_recovery_point(
    open_log: OpenLog, log_dir: Path, clock: ManualClock
) -> None:
    log = open_log(SMALL)
    _fill(log, 12)
    bases = [s.base_offset for s in log.segments]
    log.close_without_flush()
    loaded = load_log(
        log_dir,
        config=SMALL,
        now_ms=clock.now_ms(),
        recovery_point=bases[2] + 1,
        log_start_offset=0,
        had_clean_shutdown=False,
    )
    assert loaded.recovered_segments == len(bases) - 2
    assert loaded.log_end_offset == 36
    for segment in loaded.segments:
        segment.close()


def test_clean_shutdown_skips_the_rescan(
    open_log: OpenLog, log_dir: Path, clock: ManualClock
) -> None:
    _, end, indexes = _clean_reference(open_log, 12)
    loaded = load_log(
        log_dir,
        config=SMALL,
        now_ms=clock.now_ms(),
        recovery_point=end,
        log_start_offset=0,
        had_clean_shutdown=True,
    )
    assert loaded.recovered_segments == 0
    assert (loaded.log_end_offset, loaded.recovery_point) == (end, end)
    for segment in loaded.segments:
        segment.close()
    assert _index_files(log_dir) == indexes


@pytest.mark.parametrize("damage", ["missing", "garbage", "zeros", "odd-size"])
@pytest.mark.parametrize("kind", [".index", ".timeindex"])
def test_bad_index_is_rebuilt(
    open_log: OpenLog, log_dir: Path, clock: ManualClock, damage: str, kind: str
) -> None:
    data, end, indexes = _clean_reference(open_log, 12)
    victim = log_dir / f"{0:020d}{kind}"
    assert victim.stat().st_size > 0
    if damage == "missing":
        victim.unlink()
    elif damage == "garbage":
        victim.write_bytes(b"\x7f\xff\xff\xff" * 6)
    elif damage == "zeros":
        victim.write_bytes(victim.read_bytes() + bytes(24))
    else:
        victim.write_bytes(victim.read_bytes()[:-1])
    loaded = load_log(
        log_dir,
        config=SMALL,
        now_ms=clock.now_ms(),
        recovery_point=end,
        log_start_offset=0,
        had_clean_shutdown=True,
    )
    assert loaded.recovered_segments == 1
    for segment in loaded.segments:
        segment.close()
    assert _index_files(log_dir) == indexes
    log = open_log(SMALL, had_clean_shutdown=True)
    assert log.read_bytes(0, max_bytes=10**7) == data


def test_checkpointed_log_start_is_kept(open_log: OpenLog) -> None:
    log = open_log(SMALL)
    _fill(log, 12)
    log.advance_log_start_offset(20)
    log.close()
    again = open_log(SMALL, log_start_offset=20, had_clean_shutdown=True)
    assert again.log_start_offset == 20
    assert open_log(SMALL, log_start_offset=3, had_clean_shutdown=True).log_start_offset == (
        again.segments[0].base_offset
    )


def test_log_start_beyond_the_data_starts_afresh(open_log: OpenLog) -> None:
    log = open_log(SMALL)
    _fill(log, 2)
    log.close()
    again = open_log(SMALL, log_start_offset=50, had_clean_shutdown=True)
    assert (again.log_start_offset, again.log_end_offset) == (50, 50)
    assert again.append(make_batch(1)).base_offset == 50


# --- leftovers of the cleaner's swap protocol --------------------------------------------------


def _cleaned_segment(log: PartitionLog, old: list[LogSegment]) -> tuple[LogSegment, bytes]:
    """What a cleaner builds: a .cleaned segment keeping the last batch of ``old``."""
    last = old[-1].next_offset - 1
    kept = make_batch(1, base_offset=last)
    cleaned = log.new_cleaned_segment(old[0].base_offset)
    cleaned.append(kept, headers_of(kept))
    cleaned.on_become_inactive()
    cleaned.flush()
    return cleaned, kept


def test_crash_before_swap_drops_the_cleaned_files(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(SMALL)
    _fill(log, 12)
    data = log.read_bytes(0, max_bytes=10**7)
    cleaned, _ = _cleaned_segment(log, list(log.segments[:2]))
    cleaned.close()
    log.close()
    log = open_log(SMALL, had_clean_shutdown=True)
    assert log.read_bytes(0, max_bytes=10**7) == data
    assert not any(".cleaned" in p.name for p in log_dir.iterdir())


@pytest.mark.parametrize("old_state", ["present", "deleted", "gone"])
def test_crash_after_swap_rename_completes_the_swap(
    open_log: OpenLog, log_dir: Path, old_state: str
) -> None:
    log = open_log(SMALL)
    _fill(log, 12)
    old = list(log.segments[:2])
    rest = log.read_bytes(old[1].next_offset, max_bytes=10**7)
    cleaned, kept = _cleaned_segment(log, old)
    cleaned.change_file_suffixes(".cleaned", ".swap")
    cleaned.close()
    for path in list(log_dir.iterdir()):
        if ".swap" in path.name and not path.name.endswith(".log.swap"):
            path.unlink()  # index swap files may or may not be there: rebuilt anyway
    log.close()
    for segment in old:
        for kind in (".log", ".index", ".timeindex"):
            path = log_dir / f"{segment.base_offset:020d}{kind}"
            if old_state == "deleted":
                path.rename(path.with_name(path.name + ".deleted"))
            elif old_state == "gone":
                path.unlink()
    log = open_log(SMALL, had_clean_shutdown=True)
    assert log.read_bytes(0, max_bytes=10**7) == kept + rest
    assert log.segments[0].base_offset == 0
    assert sorted(p.name for p in log_dir.iterdir())[:3] == [
        f"{0:020d}.index",
        f"{0:020d}.log",
        f"{0:020d}.timeindex",
    ]
    assert not any(p.name.endswith((".swap", ".deleted")) for p in log_dir.iterdir())


def test_torn_swap_with_originals_present_is_dropped(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(SMALL)
    _fill(log, 12)
    data = log.read_bytes(0, max_bytes=10**7)
    cleaned, _ = _cleaned_segment(log, list(log.segments[:2]))
    cleaned.change_file_suffixes(".cleaned", ".swap")
    cleaned.close()
    log.close()
    swap = log_dir / f"{0:020d}.log.swap"
    swap.write_bytes(swap.read_bytes()[:-5])
    log = open_log(SMALL, had_clean_shutdown=True)
    assert log.read_bytes(0, max_bytes=10**7) == data
    assert not swap.exists()


def test_stray_index_files_are_removed(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(SMALL)
    _fill(log, 2)
    log.close()
    (log_dir / f"{99:020d}.index").write_bytes(bytes(8))
    (log_dir / f"{99:020d}.timeindex").write_bytes(bytes(12))
    (log_dir / "leader-epoch-checkpoint").write_text("0\n0\n")
    open_log(SMALL, had_clean_shutdown=True)
    names = {p.name for p in log_dir.iterdir()}
    assert f"{99:020d}.index" not in names and f"{99:020d}.timeindex" not in names
    assert "leader-epoch-checkpoint" in names  # not ours: left alone
