"""The metadata log on disk: partition ``__cluster_metadata-0`` as a :class:`strom.raft.RaftLog`.

The partition is an ordinary :class:`~strom.storage.partition_log.PartitionLog` in the data
directory (segments, indexes, recovery after a crash, as every partition), opened and closed by
the ``LogManager``, never offered to clients, never touched by retention. On top of it:

* **batches** are appended whole with the offsets and leader epoch the quorum gave them
  (``append_as_follower`` for the leader's own batches too: they already carry their offsets);
* **leader epochs**: ``(epoch, start offset)`` pairs, read from the batch headers when the log
  opens (the metadata log is small) and kept up to date by appends and truncations;
* **snapshots**: ``<20-digit offset>-<10-digit epoch>.checkpoint`` files in the partition's
  directory, written whole (a temporary file, fsync, rename, fsync of the directory) on the
  ``snapshot_writer`` thread when one is given (:mod:`strom.server.raft.raft_disk`): until the file
  is
  durable the snapshot is served from memory, and the log start moves up to it (older snapshots
  removed) only once it is. Installing a snapshot fetched from the leader waits for its file,
  since it replaces the whole log (rare: the leader trimmed what this node needed);
* **flushing off the event loop**: :meth:`FileRaftLog.begin_flush` (event loop: dup'ed
  descriptors of the segments holding unflushed records), ``run()`` (a worker thread: fsync of
  those descriptors and of the directory), ``done()`` (event loop: the flushed offset moves, but
  never above a truncation that happened meanwhile). Appends may go on during ``run()``: they
  write to files the worker only fsyncs. The partition's recovery point lags behind (restart
  re-checks more of the log than it must); the quorum never counts what is not flushed here.
"""

from __future__ import annotations

import bisect
import concurrent.futures
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

from strom.common import Clock, TopicPartition
from strom.controller import CLUSTER_METADATA_TOPIC
from strom.raft.batches import RaftBatch, iter_batches
from strom.raft.log import FlushJob, OffsetAndEpoch, epoch_end
from strom.raft.snapshots import parse_snapshot_file_name, snapshot_file_name
from strom.storage._files import fsync_directory
from strom.storage.log_config import LogConfig
from strom.storage.partition_log import PartitionLog

if TYPE_CHECKING:
    from strom.server.raft.raft_disk import DiskWriter

__all__ = ["METADATA_LOG_CONFIG", "METADATA_PARTITION", "FileRaftLog"]

METADATA_PARTITION: Final = TopicPartition(CLUSTER_METADATA_TOPIC, 0)

METADATA_LOG_CONFIG: Final = LogConfig(
    max_message_bytes=8 * 1024 * 1024,  # Kafka's KafkaRaftClient.MAX_BATCH_SIZE_BYTES
    retention_ms=-1,
    retention_bytes=-1,
)
"""Kafka's ``metadata.log.*`` defaults: 1 GiB segments, rolled weekly, kept until snapshots make
them unnecessary (no time or size retention)."""

_READ_CHUNK: Final = 1024 * 1024
_NO_CUT: Final = 2**63


class FileRaftLog:
    """The quorum's log over one :class:`PartitionLog` (see the module doc)."""

    def __init__(
        self, partition: PartitionLog, *, clock: Clock, snapshot_writer: DiskWriter | None = None
    ) -> None:
        self._log = partition
        self._snapshot_writer = snapshot_writer
        self._unwritten: dict[OffsetAndEpoch, tuple[bytes, concurrent.futures.Future[None]]] = {}
        """Snapshots being written: their data and their write."""
        self._trim_when_written: OffsetAndEpoch | None = None
        self._clock = clock
        self.directory: Path = partition.directory
        self._snapshots = sorted(
            found
            for path in self.directory.iterdir()
            if (found := parse_snapshot_file_name(path.name)) is not None
        )
        for leftover in self.directory.glob("*.checkpoint.tmp"):
            leftover.unlink()
        self._epochs: list[tuple[int, int]] = []
        for segment in partition.segments:
            for _, header in segment.batches(0):
                self._note_epoch(header.partition_leader_epoch, header.base_offset)
        self._flushed = partition.recovery_point
        self._cut = _NO_CUT

    def _note_epoch(self, epoch: int, offset: int) -> None:
        if not self._epochs or epoch > self._epochs[-1][0]:
            self._epochs.append((epoch, offset))

    # --- offsets and epochs --------------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        return self._log.log_start_offset

    @property
    def end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def flushed_end_offset(self) -> int:
        return min(self._flushed, self.end_offset)

    @property
    def last_epoch(self) -> int:
        if self.end_offset > self.start_offset and self._epochs:
            return self._epochs[-1][0]
        snapshot = self.latest_snapshot()
        if snapshot is not None:
            return snapshot.epoch
        return max(self._epochs[-1][0], 0) if self._epochs else 0

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        epochs = list(self._epochs)
        snapshot = self.latest_snapshot()
        if (
            snapshot is not None
            and snapshot.offset == self.start_offset
            and (not epochs or epochs[0][0] > snapshot.epoch)
        ):
            epochs.insert(0, (snapshot.epoch, snapshot.offset))
        return epoch_end(epochs, self.end_offset, epoch)

    # --- appending, reading, truncating --------------------------------------------------------

    def append(self, batch: bytes) -> RaftBatch:
        [parsed] = iter_batches(batch)
        if parsed.base_offset != self.end_offset:
            raise ValueError(f"batch at {parsed.base_offset}, the log ends at {self.end_offset}")
        self._log.append_as_follower(batch)
        self._note_epoch(parsed.epoch, parsed.base_offset)
        return parsed

    def read(self, offset: int, max_bytes: int) -> bytes:
        if offset >= self.end_offset:
            return b""
        return self._log.read_bytes(max(offset, self.start_offset), max_bytes=max_bytes)

    def batches(self, offset: int, end: int) -> Iterator[RaftBatch]:
        position = max(offset, self.start_offset)
        while position < min(end, self.end_offset):
            data = self._log.read_bytes(position, max_bytes=_READ_CHUNK)
            if not data:
                return
            for batch in iter_batches(data):
                if batch.base_offset >= end:
                    return
                yield batch
                position = batch.next_offset

    def truncate_to(self, offset: int) -> None:
        offset = max(offset, self.start_offset)
        self._log.truncate_to(offset)
        end = self.end_offset
        self._epochs = [(epoch, start) for epoch, start in self._epochs if start < end]
        self._flushed = min(self._flushed, end)
        self._cut = min(self._cut, end)

    # --- flushing --------------------------------------------------------------------------------

    def begin_flush(self) -> FlushJob:
        target = self.end_offset
        descriptors = [
            segment.dup_log_fd()
            for segment in self._log.segments
            if segment.next_offset > self._flushed or segment is self._log.active_segment
        ]
        directory = self.directory
        self._cut = _NO_CUT

        def fsync() -> None:
            try:
                for fd in descriptors:
                    os.fsync(fd)
                fsync_directory(directory)
            finally:
                for fd in descriptors:
                    os.close(fd)

        return FlushJob(target, fsync=fsync, finish=self._flushed_to)

    def _flushed_to(self, target: int) -> None:
        self._flushed = max(self._flushed, min(target, self._cut, self.end_offset))

    def flush(self) -> None:
        """Flush on this thread (tests, and the end of a node's life)."""
        job = self.begin_flush()
        job.run()
        job.done()

    # --- snapshots -------------------------------------------------------------------------------

    def latest_snapshot(self) -> OffsetAndEpoch | None:
        return self._snapshots[-1] if self._snapshots else None

    def read_snapshot(self, snapshot: OffsetAndEpoch) -> bytes | None:
        if snapshot in self._unwritten:
            return self._unwritten[snapshot][0]
        try:
            return (self.directory / snapshot_file_name(snapshot)).read_bytes()
        except FileNotFoundError:
            return None

    def store_snapshot(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        path = self.directory / snapshot_file_name(snapshot)

        def write() -> None:
            temporary = path.with_name(path.name + ".tmp")
            with temporary.open("wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            temporary.replace(path)
            fsync_directory(path.parent)

        if self._snapshot_writer is None:
            write()
        elif snapshot not in self._unwritten:
            future = self._snapshot_writer.submit(write, lambda: self._written(snapshot))
            self._unwritten[snapshot] = (data, future)
        if snapshot not in self._snapshots:
            bisect.insort(self._snapshots, snapshot)

    def _written(self, snapshot: OffsetAndEpoch) -> None:
        self._unwritten.pop(snapshot, None)
        if self._trim_when_written == snapshot:
            self._trim_when_written = None
            self.delete_before_snapshot(snapshot)

    def delete_before_snapshot(self, snapshot: OffsetAndEpoch) -> None:
        if snapshot not in self._snapshots or snapshot.offset > self.end_offset:
            return
        if snapshot in self._unwritten:  # trimmed once the snapshot is durable
            self._trim_when_written = snapshot
            return
        if snapshot.offset > self.start_offset:
            self._log.advance_log_start_offset(snapshot.offset)
            self._epochs = _epochs_from(self._epochs, snapshot.offset)
        self._drop_snapshots_before(snapshot)

    def reset_to_snapshot(self, snapshot: OffsetAndEpoch) -> None:
        if snapshot in self._unwritten:  # the whole log goes: its replacement must be durable
            self._unwritten[snapshot][1].result()
            self._unwritten.pop(snapshot)
        self._log.truncate_fully_and_start_at(snapshot.offset)
        self._epochs = []
        self._flushed = snapshot.offset
        self._cut = min(self._cut, snapshot.offset)
        self._drop_snapshots_before(snapshot)

    def _drop_snapshots_before(self, snapshot: OffsetAndEpoch) -> None:
        for older in [s for s in self._snapshots if s < snapshot]:
            path = self.directory / snapshot_file_name(older)

            def remove(path: Path = path) -> None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

            if self._snapshot_writer is None:
                remove()
            else:  # after its own write, if that is still to come
                self._snapshot_writer.submit(remove)
            self._unwritten.pop(older, None)
            self._snapshots.remove(older)


def _epochs_from(epochs: list[tuple[int, int]], start: int) -> list[tuple[int, int]]:
    """The epoch list once the log starts at ``start``: the epoch holding ``start`` begins
    there."""
    kept = [(epoch, offset) for epoch, offset in epochs if offset >= start]
    holding = [(epoch, offset) for epoch, offset in epochs if offset < start]
    if holding and (not kept or kept[0][1] > start):
        kept.insert(0, (holding[-1][0], start))
    return kept
