"""The cleaner's checkpoints: ``<data dir>/cleaner-offset-checkpoint`` holds each compacted log's
first dirty offset (where its clean part ends), keyed by topic-partition, in the format of the
other offset checkpoints. Read once per data directory, written whenever an entry changes.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Final

from strom.common import TopicPartition
from strom.storage.checkpoint import (
    CheckpointError,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from strom.storage.partition_log import PartitionLog

__all__ = ["CLEANER_OFFSET_CHECKPOINT", "CleanerCheckpoints"]

CLEANER_OFFSET_CHECKPOINT: Final = "cleaner-offset-checkpoint"

_log = logging.getLogger(__name__)


class CleanerCheckpoints:
    """The first dirty offset of every log, over every data directory (owner thread only)."""

    def __init__(self) -> None:
        self._offsets: dict[Path, dict[TopicPartition, int]] = {}

    def _of(self, data_dir: Path) -> dict[TopicPartition, int]:
        offsets = self._offsets.get(data_dir)
        if offsets is None:
            try:
                offsets = read_offset_checkpoint(data_dir / CLEANER_OFFSET_CHECKPOINT)
            except CheckpointError as error:
                # Every log is then dirty from its start: more work, never a loss.
                _log.warning("ignoring unreadable cleaner checkpoint: %s", error)
                offsets = {}
            self._offsets[data_dir] = offsets
        return offsets

    def _write(self, data_dir: Path) -> None:
        write_offset_checkpoint(data_dir / CLEANER_OFFSET_CHECKPOINT, self._of(data_dir))

    def first_dirty_offset(self, log: PartitionLog) -> int:
        """Where the dirty part of ``log`` starts: its checkpoint, or the log start offset when
        there is none or it is out of ``[log start, log end]`` (Kafka resets it the same way)."""
        checkpoint = self._of(log.directory.parent).get(_partition(log))
        if checkpoint is None or not log.log_start_offset <= checkpoint <= log.log_end_offset:
            return log.log_start_offset
        return checkpoint

    def cleaned(self, log: PartitionLog, end: int) -> None:
        """A pass cleaned ``log`` below ``end``: its new first dirty offset."""
        data_dir = log.directory.parent
        self._of(data_dir)[_partition(log)] = end
        self._write(data_dir)

    def lower(self, log: PartitionLog, offset: int) -> None:
        """The log ends at ``offset`` now: a checkpoint above it comes down to it."""
        data_dir = log.directory.parent
        offsets = self._of(data_dir)
        tp = _partition(log)
        if offsets.get(tp, -1) > offset:
            offsets[tp] = offset
            self._write(data_dir)

    def remove(self, log: PartitionLog) -> None:
        """The log is being deleted: its entry goes."""
        data_dir = log.directory.parent
        if self._of(data_dir).pop(_partition(log), None) is not None:
            self._write(data_dir)


def _partition(log: PartitionLog) -> TopicPartition:
    return TopicPartition.from_dir_name(log.directory.name)
