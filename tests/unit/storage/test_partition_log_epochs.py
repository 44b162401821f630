"""A partition log keeps its leader epochs in ``leader-epoch-checkpoint``, as Kafka's log does."""

from __future__ import annotations

from pathlib import Path

from strom.storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT, EpochEndOffset, EpochEntry

from .batches import make_batch
from .conftest import OpenLog


def test_appends_start_epochs_and_the_checkpoint_keeps_them(
    open_log: OpenLog, log_dir: Path
) -> None:
    log = open_log()
    log.append(make_batch(3), leader_epoch=0)
    log.append(make_batch(2), leader_epoch=0)
    log.append(make_batch(4), leader_epoch=2)
    assert list(log.leader_epochs.entries) == [EpochEntry(0, 0), EpochEntry(2, 5)]
    assert (log_dir / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n2\n0 0\n2 5\n"
    assert log.end_offset_for_epoch(1) == EpochEndOffset(0, 5)
    assert log.end_offset_for_epoch(2) == EpochEndOffset(2, 9)
    log.close()
    assert list(open_log(had_clean_shutdown=True).leader_epochs.entries) == [
        EpochEntry(0, 0),
        EpochEntry(2, 5),
    ]


def test_a_new_leader_starts_its_epoch_at_the_log_end(open_log: OpenLog) -> None:
    log = open_log()
    log.append(make_batch(3), leader_epoch=1)
    log.start_leader_epoch(4)
    assert log.end_offset_for_epoch(1) == EpochEndOffset(1, 3)
    assert log.end_offset_for_epoch(4) == EpochEndOffset(4, 3)


def test_truncation_and_the_log_start_cut_the_epochs(open_log: OpenLog) -> None:
    log = open_log()
    for epoch in (0, 1, 2):
        log.append(make_batch(2), leader_epoch=epoch)
    log.truncate_to(3)  # the batch of offsets 2-3 goes whole, and epoch 2 with it
    assert list(log.leader_epochs.entries) == [EpochEntry(0, 0)]
    log.append(make_batch(2), leader_epoch=3)
    log.advance_log_start_offset(1)
    assert list(log.leader_epochs.entries) == [EpochEntry(0, 1), EpochEntry(3, 2)]
    log.truncate_fully_and_start_at(10)
    assert log.leader_epochs.entries == ()


def test_follower_batches_bring_the_leaders_epochs(open_log: OpenLog) -> None:
    log = open_log()
    log.append_as_follower(
        make_batch(2, base_offset=0, leader_epoch=3) + make_batch(1, base_offset=2, leader_epoch=5)
    )
    assert list(log.leader_epochs.entries) == [EpochEntry(3, 0), EpochEntry(5, 2)]


def test_a_log_without_a_checkpoint_rebuilds_it_from_its_batches(
    open_log: OpenLog, log_dir: Path
) -> None:
    log = open_log()
    log.append(make_batch(2), leader_epoch=0)
    log.append(make_batch(2), leader_epoch=7)
    log.close()
    (log_dir / LEADER_EPOCH_CHECKPOINT).unlink()
    reopened = open_log(had_clean_shutdown=True)
    assert list(reopened.leader_epochs.entries) == [EpochEntry(0, 0), EpochEntry(7, 2)]
    assert (log_dir / LEADER_EPOCH_CHECKPOINT).exists()


def test_a_checkpoint_ahead_of_a_crashed_log_is_cut_to_it(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    log.append(make_batch(2), leader_epoch=0)
    log.close()
    (log_dir / LEADER_EPOCH_CHECKPOINT).write_text("0\n2\n0 0\n4 2\n")  # epoch 4's data was lost
    assert list(open_log().leader_epochs.entries) == [EpochEntry(0, 0)]
