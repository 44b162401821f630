"""The leader epochs of a partition's log: which epoch wrote from which offset (Kafka's
``LeaderEpochFileCache``, KIP-101), and what a follower truncates to after a leader change.

Each entry says that leader epoch ``epoch`` wrote its first record at ``start_offset``; entries
grow in both epoch and start offset. A leader adds an entry when it appends the first batch of
a new epoch, a follower when it appends a batch stamped with a newer epoch than its last.

``LeaderEpochFile`` is a log's cache kept in the partition directory's
``leader-epoch-checkpoint`` (Kafka's format), rewritten at each change (a new epoch, a
truncation: rare).

``end_offset_for`` answers OffsetForLeaderEpoch (and Fetch's diverging-epoch check): the
largest epoch at most the one asked for, and the offset where it ended, the start of the next
epoch (or the log end offset for the latest epoch). ``truncation_offset`` is the follower's side
(KIP-279): given the leader's answer, where its log must be cut so that no offset holds a record
the leader does not have. Both are pure.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from strom.storage.checkpoint import read_checkpoint, write_checkpoint

__all__ = [
    "LEADER_EPOCH_CHECKPOINT",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "EpochEndOffset",
    "EpochEntry",
    "LeaderEpochCache",
    "LeaderEpochFile",
    "TruncationState",
    "read_leader_epoch_checkpoint",
    "truncation_offset",
    "write_leader_epoch_checkpoint",
]

LEADER_EPOCH_CHECKPOINT: Final = "leader-epoch-checkpoint"
UNDEFINED_EPOCH: Final = -1
UNDEFINED_EPOCH_OFFSET: Final = -1


@dataclass(frozen=True, slots=True, order=True)
class EpochEntry:
    epoch: int
    start_offset: int


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    """An OffsetForLeaderEpoch answer: ``epoch`` ended at ``end_offset`` (exclusive)."""

    epoch: int
    end_offset: int

    @property
    def undefined(self) -> bool:
        return self.end_offset == UNDEFINED_EPOCH_OFFSET


_UNDEFINED: Final = EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


class LeaderEpochCache:
    """The epoch entries of one log, in order; changed only through its methods."""

    def __init__(self, entries: Iterable[EpochEntry] = ()) -> None:
        self._entries: list[EpochEntry] = []
        for entry in entries:
            self.assign(entry.epoch, entry.start_offset)

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    @property
    def latest(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; whether anything changed.

        The latest epoch again, at or after its start, changes nothing. Otherwise entries that
        the new one contradicts (an epoch at least as new, or a start at least as late) go first,
        as Kafka does when a follower appends a batch of an older epoch after truncating.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(
                f"an epoch entry needs epoch and offset >= 0, got {epoch}@{start_offset}"
            )
        latest = self.latest
        if latest is not None and latest.epoch == epoch and start_offset >= latest.start_offset:
            return False
        while self._entries and (
            self._entries[-1].epoch >= epoch or self._entries[-1].start_offset >= start_offset
        ):
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> EpochEndOffset:
        """OffsetForLeaderEpoch: the largest known epoch at most ``epoch`` and where it ended.

        Undefined when ``epoch`` is undefined, or newer than every epoch but the latest is older
        (this log never saw it); for the latest epoch, the log end offset; for an epoch older
        than every entry, that epoch and the first entry's start.
        """
        if epoch == UNDEFINED_EPOCH or not self._entries:
            return _UNDEFINED
        if epoch == self.latest_epoch:
            return EpochEndOffset(epoch, log_end_offset)
        higher = bisect.bisect_right(self._entries, epoch, key=lambda entry: entry.epoch)
        if higher == len(self._entries):
            return _UNDEFINED
        next_start = self._entries[higher].start_offset
        if higher == 0:
            return EpochEndOffset(epoch, next_start)
        return EpochEndOffset(self._entries[higher - 1].epoch, next_start)

    def truncate_from_end(self, end_offset: int) -> bool:
        """The log was cut to ``end_offset``: forget epochs that started at or after it;
        whether anything changed."""
        kept = bisect.bisect_left(self._entries, end_offset, key=lambda entry: entry.start_offset)
        if kept == len(self._entries):
            return False
        del self._entries[kept:]
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at ``start_offset``: epochs wholly before it go, and the epoch in
        force there starts there; whether anything changed."""
        first_kept = bisect.bisect_right(
            self._entries, start_offset, key=lambda entry: entry.start_offset
        )
        if first_kept == 0:
            return False
        kept = [EpochEntry(self._entries[first_kept - 1].epoch, start_offset)]
        if self._entries[:first_kept] == kept:
            return False
        self._entries[:first_kept] = kept
        return True


@dataclass(frozen=True, slots=True)
class TruncationState:
    """Where a follower cuts its log, and whether that settles the divergence (if not, it asks
    the leader again with the epoch it has just below)."""

    offset: int
    complete: bool


def truncation_offset(
    leader: EpochEndOffset,
    follower: LeaderEpochCache,
    *,
    log_end_offset: int,
    high_watermark: int,
) -> TruncationState:
    """KIP-279: where a follower truncates, given the leader's end offset for the follower's
    latest epoch (from OffsetForLeaderEpoch, or Fetch's diverging epoch).

    - The leader knows no such epoch: fall back to the high watermark (what is committed).
    - The leader answered an epoch the follower also has: cut at the earlier of the two ends.
    - The follower does not have the leader's epoch: cut at the end of its own largest epoch
      below it and ask again (the logs may diverge earlier still).
    Never beyond the follower's own log end.
    """
    if leader.undefined:
        return TruncationState(min(high_watermark, log_end_offset), complete=True)
    if leader.epoch == UNDEFINED_EPOCH:
        return TruncationState(min(leader.end_offset, log_end_offset), complete=True)
    own = follower.end_offset_for(leader.epoch, log_end_offset)
    if own.undefined:
        return TruncationState(min(leader.end_offset, log_end_offset), complete=True)
    if own.epoch != leader.epoch:
        return TruncationState(min(own.end_offset, log_end_offset), complete=False)
    return TruncationState(min(own.end_offset, leader.end_offset, log_end_offset), complete=True)


def write_leader_epoch_checkpoint(path: Path, cache: LeaderEpochCache) -> None:
    """Replace the partition's ``leader-epoch-checkpoint`` atomically."""
    write_checkpoint(path, [(entry.epoch, entry.start_offset) for entry in cache.entries])


def read_leader_epoch_checkpoint(path: Path) -> LeaderEpochCache:
    """The cache kept in ``path``; empty when there is no file."""
    return LeaderEpochCache(
        read_checkpoint(
            path,
            what="epoch start-offset",
            parse=lambda fields: EpochEntry(*map(int, fields)),
            fields=2,
        )
    )


class LeaderEpochFile:
    """A log's leader epoch cache and its ``leader-epoch-checkpoint``, written at each change."""

    def __init__(self, directory: Path, cache: LeaderEpochCache | None = None) -> None:
        self.path = directory / LEADER_EPOCH_CHECKPOINT
        self.cache = cache if cache is not None else LeaderEpochCache()

    @classmethod
    def load(
        cls,
        directory: Path,
        *,
        log_start_offset: int,
        log_end_offset: int,
        batch_epochs: Callable[[], Iterable[tuple[int, int]]],
    ) -> LeaderEpochFile:
        """The checkpoint, cut to the log that survived (a crash may have lost its tail); for a
        log written before strom kept epochs, rebuilt from ``batch_epochs`` ((base offset,
        partition leader epoch) of each batch) and written."""
        epochs = cls(directory, read_leader_epoch_checkpoint(directory / LEADER_EPOCH_CHECKPOINT))
        before = epochs.cache.entries
        if not epochs.path.exists():
            for base_offset, epoch in batch_epochs():
                if epoch >= 0:
                    epochs.cache.assign(epoch, base_offset)
        epochs.cache.truncate_from_end(log_end_offset)
        epochs.cache.truncate_from_start(log_start_offset)
        if epochs.cache.entries != before:
            epochs.write()
        return epochs

    def write(self) -> None:
        write_leader_epoch_checkpoint(self.path, self.cache)

    def assign(self, epoch: int, start_offset: int) -> None:
        if self.cache.assign(epoch, start_offset):
            self.write()

    def truncate_from_end(self, end_offset: int) -> None:
        if self.cache.truncate_from_end(end_offset):
            self.write()

    def truncate_from_start(self, start_offset: int) -> None:
        if self.cache.truncate_from_start(start_offset):
            self.write()

    def clear(self) -> None:
        if self.cache.entries:
            self.cache = LeaderEpochCache()
            self.write()
