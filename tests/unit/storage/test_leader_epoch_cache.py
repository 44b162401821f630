"""The leader epoch cache and KIP-101/KIP-279 truncation, with the examples of the KIPs."""

from __future__ import annotations

from pathlib import Path

import pytest

from strom.storage.checkpoint import CheckpointError
from strom.storage.leader_epoch_cache import (
    UNDEFINED_EPOCH,
    EpochEndOffset,
    EpochEntry,
    LeaderEpochCache,
    TruncationState,
    read_leader_epoch_checkpoint,
    truncation_offset,
    write_leader_epoch_checkpoint,
)


def cache(*entries: tuple[int, int]) -> LeaderEpochCache:
    return LeaderEpochCache(EpochEntry(epoch, offset) for epoch, offset in entries)


def test_assign_keeps_epochs_and_offsets_increasing() -> None:
    epochs = cache()
    assert epochs.assign(0, 0)
    assert not epochs.assign(0, 5)  # the same epoch, later: nothing new
    assert epochs.assign(2, 10)
    assert epochs.entries == (EpochEntry(0, 0), EpochEntry(2, 10))
    assert epochs.assign(1, 7)  # an older epoch after a truncation: the newer one goes
    assert epochs.entries == (EpochEntry(0, 0), EpochEntry(1, 7))
    assert epochs.assign(3, 7)  # a new epoch at the same start replaces it
    assert epochs.entries == (EpochEntry(0, 0), EpochEntry(3, 7))
    with pytest.raises(ValueError):
        epochs.assign(-1, 0)


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (UNDEFINED_EPOCH, EpochEndOffset(-1, -1)),
        (0, EpochEndOffset(0, 100)),  # older than every entry: the first entry's start
        (1, EpochEndOffset(1, 250)),  # ended where epoch 3 began
        (2, EpochEndOffset(1, 250)),  # unknown, between two: the floor epoch's end
        (3, EpochEndOffset(3, 400)),
        (4, EpochEndOffset(4, 512)),  # the latest: the log end
        (5, EpochEndOffset(-1, -1)),  # newer than anything this log saw
    ],
)
def test_end_offset_for(requested: int, expected: EpochEndOffset) -> None:
    epochs = cache((1, 100), (3, 250), (4, 400))
    assert epochs.end_offset_for(requested, log_end_offset=512) == expected


def test_truncation_from_either_end() -> None:
    epochs = cache((0, 0), (1, 100), (3, 250))
    epochs.truncate_from_end(250)
    assert list(epochs.entries) == [EpochEntry(0, 0), EpochEntry(1, 100)]
    epochs.truncate_from_start(120)
    assert list(epochs.entries) == [EpochEntry(1, 120)]
    epochs.truncate_from_start(50)  # already past it: nothing changes
    assert list(epochs.entries) == [EpochEntry(1, 120)]


def test_checkpoint_file_is_kafkas_format(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(path, cache((0, 0), (2, 1500)))
    assert path.read_text() == "0\n2\n0 0\n2 1500\n"
    assert read_leader_epoch_checkpoint(path).entries == (EpochEntry(0, 0), EpochEntry(2, 1500))
    assert read_leader_epoch_checkpoint(tmp_path / "missing").entries == ()
    path.write_text("0\n1\n0 zero\n")
    with pytest.raises(CheckpointError, match="line 3: malformed entry '0 zero'"):
        read_leader_epoch_checkpoint(path)


def _follow(leader: LeaderEpochCache, leader_end: int, follower: LeaderEpochCache, end: int) -> int:
    """Rounds of OffsetForLeaderEpoch until the follower's truncation is complete."""
    while True:
        answer = leader.end_offset_for(follower.latest_epoch, leader_end)
        state = truncation_offset(answer, follower, log_end_offset=end, high_watermark=0)
        end = state.offset
        follower.truncate_from_end(end)
        if state.complete:
            return end


def test_kip_101_a_restarted_follower_keeps_what_the_leader_has() -> None:
    """Scenario 1: the follower's high watermark lagged; truncating to it would lose m2."""
    leader, follower = cache((0, 0)), cache((0, 0))
    assert _follow(leader, 2, follower, end=2) == 2


def test_kip_101_replicas_that_diverged_after_both_crashed() -> None:
    """Scenario 2: A wrote m2 at offset 1 in epoch 0 and crashed before B had it; B came back
    first, led epoch 1 and wrote m3 at offset 1. A, following, must drop m2."""
    b_leader = cache((0, 0), (1, 1))
    a_follower = cache((0, 0))
    assert _follow(b_leader, 2, a_follower, end=2) == 1


def test_kip_279_the_follower_lacks_the_leaders_epoch_and_asks_again() -> None:
    """Fast leader changes: the follower has epochs 1 and 3 the leader never had. The first
    answer cuts back to the end of its epoch 1; asking again with epoch 1 cuts to offset 2."""
    leader = cache((0, 0), (2, 3), (4, 5))
    follower = cache((0, 0), (1, 2), (3, 4))
    first = truncation_offset(
        leader.end_offset_for(3, 7), follower, log_end_offset=6, high_watermark=0
    )
    assert first == TruncationState(4, complete=False)
    assert _follow(leader, 7, follower, end=6) == 2
    assert follower.entries == (EpochEntry(0, 0),)


def test_an_unknown_epoch_falls_back_to_the_high_watermark() -> None:
    state = truncation_offset(
        EpochEndOffset(-1, -1), cache((0, 0)), log_end_offset=10, high_watermark=7
    )
    assert state == TruncationState(7, complete=True)
