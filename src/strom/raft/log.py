"""What the core needs of the metadata log (Kafka's ``ReplicatedLog``), and an in-memory one.

Offsets and epochs follow Kafka: every batch carries the epoch of the leader that wrote it;
``end_offset_for_epoch(e)`` is ``(e', end)`` with ``e'`` the largest epoch at most ``e`` that the
log (or its snapshot) has and ``end`` the first offset after that epoch's records, which is how a
leader finds where a follower's log diverges from its own.

Snapshots are kept beside the log, named by ``(end_offset, epoch)``: a snapshot holds the state
after every record below ``end_offset``; the log may then drop everything below it.

Durability is the shell's job: the core reads ``flushed_end_offset`` and never counts unflushed
records (see the package's NOTES.md). A flush is a :class:`FlushJob` in three steps, so that the
slow part can run in another thread while the log goes on serving: ``begin_flush`` (the log's
thread: what to fsync), ``job.run()`` (any thread: the fsyncs), ``job.done()`` (the log's thread
again: the flushed offset moves, but never over records truncated meanwhile).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from strom.raft.batches import RaftBatch, iter_batches

__all__ = ["FlushJob", "InMemoryRaftLog", "OffsetAndEpoch", "RaftLog", "epoch_end"]


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    offset: int
    epoch: int


@dataclass
class FlushJob:
    """Records below ``target`` to make durable: ``run`` (any thread), then ``done`` (the
    log's thread)."""

    target: int
    fsync: Callable[[], None]
    finish: Callable[[int], None]

    def run(self) -> None:
        self.fsync()

    def done(self) -> None:
        self.finish(self.target)


class RaftLog(Protocol):
    @property
    def start_offset(self) -> int:
        """The first offset the log holds (the latest snapshot's end offset once trimmed)."""
        ...

    @property
    def end_offset(self) -> int:
        """The offset the next record gets."""
        ...

    @property
    def flushed_end_offset(self) -> int:
        """Everything below is on disk."""
        ...

    @property
    def last_epoch(self) -> int:
        """The epoch of the last batch, or of the latest snapshot when the log is empty; 0."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """``(e', end)`` as the module doc says; ``(-1, -1)`` for an epoch below all."""
        ...

    def append(self, batch: bytes) -> RaftBatch:
        """Append one whole batch whose base offset is the end offset (leader and follower)."""
        ...

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset`` (at least one, whatever its size)."""
        ...

    def batches(self, offset: int, end: int) -> Iterator[RaftBatch]:
        """The batches holding the records from ``offset`` up to (not including) ``end``."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Drop everything at and above ``offset`` (never below the start offset)."""
        ...

    def begin_flush(self) -> FlushJob:
        """Everything appended so far, to be made durable."""
        ...

    def latest_snapshot(self) -> OffsetAndEpoch | None: ...

    def read_snapshot(self, snapshot: OffsetAndEpoch) -> bytes | None: ...

    def store_snapshot(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        """Keep a complete snapshot (durably)."""
        ...

    def delete_before_snapshot(self, snapshot: OffsetAndEpoch) -> None:
        """Drop the records below the snapshot's end offset, and older snapshots."""
        ...

    def reset_to_snapshot(self, snapshot: OffsetAndEpoch) -> None:
        """Drop the whole log; it restarts empty at the (stored) snapshot's end offset."""
        ...


def epoch_end(epochs: list[tuple[int, int]], end_offset: int, epoch: int) -> OffsetAndEpoch:
    """``end_offset_for_epoch`` over ``(epoch, start offset)`` pairs in order (Kafka's
    ``LeaderEpochFileCache.endOffsetFor``)."""
    found: OffsetAndEpoch | None = None
    for index, (start_epoch, _) in enumerate(epochs):
        if start_epoch > epoch:
            break
        next_start = epochs[index + 1][1] if index + 1 < len(epochs) else end_offset
        found = OffsetAndEpoch(next_start, start_epoch)
    return found if found is not None else OffsetAndEpoch(-1, -1)


@dataclass
class InMemoryRaftLog:
    """A metadata log in memory (the simulation's and the unit tests'): a crash keeps only what
    was flushed (:meth:`crash`)."""

    _batches: list[RaftBatch] = field(default_factory=list)
    _data: list[bytes] = field(default_factory=list)
    _start: int = 0
    _flushed: int = 0
    _snapshots: dict[OffsetAndEpoch, bytes] = field(default_factory=dict)
    _cut: int = 2**63
    """The lowest offset truncated to since the last ``begin_flush``."""

    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._batches[-1].next_offset if self._batches else self._start

    @property
    def flushed_end_offset(self) -> int:
        return min(self._flushed, self.end_offset) if self._batches else self._start

    @property
    def last_epoch(self) -> int:
        if self._batches:
            return self._batches[-1].epoch
        snapshot = self.latest_snapshot()
        return snapshot.epoch if snapshot is not None else 0

    def _epochs(self) -> list[tuple[int, int]]:
        epochs: list[tuple[int, int]] = []
        snapshot = self.latest_snapshot()
        if snapshot is not None and snapshot.offset == self._start:
            epochs.append((snapshot.epoch, self._start))
        for batch in self._batches:
            if not epochs or batch.epoch > epochs[-1][0]:
                epochs.append((batch.epoch, batch.base_offset))
        return epochs

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        return epoch_end(self._epochs(), self.end_offset, epoch)

    def append(self, batch: bytes) -> RaftBatch:
        [parsed] = iter_batches(batch)
        if parsed.base_offset != self.end_offset:
            raise ValueError(f"batch at {parsed.base_offset}, log ends at {self.end_offset}")
        self._batches.append(parsed)
        self._data.append(bytes(batch))
        return parsed

    def read(self, offset: int, max_bytes: int) -> bytes:
        out: list[bytes] = []
        size = 0
        for batch, data in zip(self._batches, self._data, strict=True):
            if batch.last_offset < offset:
                continue
            if out and size + len(data) > max_bytes:
                break
            out.append(data)
            size += len(data)
        return b"".join(out)

    def batches(self, offset: int, end: int) -> Iterator[RaftBatch]:
        for batch in list(self._batches):
            if batch.last_offset >= offset and batch.base_offset < end:
                yield batch

    def truncate_to(self, offset: int) -> None:
        offset = max(offset, self._start)
        keep = [i for i, batch in enumerate(self._batches) if batch.last_offset < offset]
        count = len(keep)
        del self._batches[count:]
        del self._data[count:]
        self._flushed = min(self._flushed, self.end_offset)
        self._cut = min(self._cut, self.end_offset)

    def begin_flush(self) -> FlushJob:
        self._cut = 2**63
        return FlushJob(self.end_offset, fsync=lambda: None, finish=self._flushed_to)

    def _flushed_to(self, target: int) -> None:
        self._flushed = max(self._flushed, min(target, self._cut))

    def flush(self) -> None:
        """Flush at once (the simulation's and the tests' shortcut)."""
        job = self.begin_flush()
        job.run()
        job.done()

    def crash(self) -> None:
        """Lose what was not flushed, as a process kill with a dirty page cache would."""
        self.truncate_to(self.flushed_end_offset)

    def latest_snapshot(self) -> OffsetAndEpoch | None:
        return max(self._snapshots, default=None)

    def read_snapshot(self, snapshot: OffsetAndEpoch) -> bytes | None:
        return self._snapshots.get(snapshot)

    def store_snapshot(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        self._snapshots[snapshot] = data

    def delete_before_snapshot(self, snapshot: OffsetAndEpoch) -> None:
        if snapshot.offset <= self._start or snapshot not in self._snapshots:
            return
        drop = [i for i, batch in enumerate(self._batches) if batch.last_offset < snapshot.offset]
        if drop and self._batches[len(drop) - 1].last_offset != snapshot.offset - 1:
            return  # the snapshot ends inside a batch: keep the batch
        del self._batches[: len(drop)]
        del self._data[: len(drop)]
        self._start = snapshot.offset
        for older in [s for s in self._snapshots if s < snapshot]:
            del self._snapshots[older]

    def reset_to_snapshot(self, snapshot: OffsetAndEpoch) -> None:
        self._batches.clear()
        self._data.clear()
        self._start = snapshot.offset
        self._flushed = snapshot.offset
        self._cut = min(self._cut, snapshot.offset)
        for older in [s for s in self._snapshots if s < snapshot]:
            del self._snapshots[older]
