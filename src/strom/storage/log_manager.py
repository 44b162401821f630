"""All partition logs of one data directory, and the files that describe them together.

``<data dir>/`` holds one ``<topic>-<partition>/`` directory per log, the two offset
checkpoints (:mod:`strom.storage.checkpoint`) and, between a clean shutdown and the next start,
``.kafka_cleanshutdown``. With the marker present at start, logs load without rescanning;
without it, each log recovers from its checkpointed recovery point. The marker is removed
once everything is loaded, so a crash from then on is seen as one. ``meta.properties`` is the
server's.

A deleted partition's directory is first renamed ``<topic>-<partition>.<uuid>-delete`` (Kafka's
convention), then removed; leftovers of that kind are removed at start.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from strom.common import Clock, TopicPartition
from strom.storage._files import fsync_directory
from strom.storage.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    CheckpointError,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from strom.storage.log_config import LogConfig
from strom.storage.partition_log import PartitionLog

__all__ = ["CLEAN_SHUTDOWN_FILE", "LogManager"]

CLEAN_SHUTDOWN_FILE: Final = ".kafka_cleanshutdown"
_DELETE_SUFFIX: Final = "-delete"

_log = logging.getLogger(__name__)


def _default_config(_: TopicPartition) -> LogConfig:
    return LogConfig()


class LogManager:
    """Owns every :class:`PartitionLog` under ``data_dir``; loads them all when built.

    ``config_for`` gives each existing partition its configuration at load time (the server
    maps topic configs); new logs get theirs in :meth:`get_or_create`. ``on_delete`` is told of
    each log :meth:`delete` removes, before it is closed (the cleaner forgets it).
    """

    def __init__(
        self,
        data_dir: Path,
        clock: Clock,
        *,
        config_for: Callable[[TopicPartition], LogConfig] = _default_config,
        on_delete: Callable[[PartitionLog], None] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self._clock = clock
        self._on_delete = on_delete
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._closed = False
        data_dir.mkdir(parents=True, exist_ok=True)
        marker = data_dir / CLEAN_SHUTDOWN_FILE
        self.had_clean_shutdown = marker.exists()
        self.clean_shutdown_broker_epoch = _marker_epoch(marker) if self.had_clean_shutdown else -1
        """The broker epoch the last clean shutdown recorded (-1: none, or an unclean end)."""
        recovery_points = self._read_checkpoint(RECOVERY_POINT_CHECKPOINT)
        log_starts = self._read_checkpoint(LOG_START_OFFSET_CHECKPOINT)
        for child in sorted(data_dir.iterdir()):
            if not child.is_dir():
                continue
            if child.name.endswith(_DELETE_SUFFIX):
                shutil.rmtree(child, ignore_errors=True)
                continue
            try:
                tp = TopicPartition.from_dir_name(child.name)
            except ValueError:
                continue
            self._logs[tp] = PartitionLog.open(
                child,
                config=config_for(tp),
                clock=clock,
                recovery_point=recovery_points.get(tp, 0),
                log_start_offset=log_starts.get(tp, 0),
                had_clean_shutdown=self.had_clean_shutdown,
            )
        if self.had_clean_shutdown:
            marker.unlink()
            fsync_directory(data_dir)

    def _read_checkpoint(self, name: str) -> dict[TopicPartition, int]:
        try:
            return read_offset_checkpoint(self.data_dir / name)
        except CheckpointError as error:
            # Without it every log recovers from its first segment: slower, never lossy.
            _log.warning("ignoring unreadable checkpoint: %s", error)
            return {}

    # --- logs ------------------------------------------------------------------------------

    def get(self, tp: TopicPartition) -> PartitionLog | None:
        return self._logs.get(tp)

    def get_or_create(self, tp: TopicPartition, config: LogConfig | None = None) -> PartitionLog:
        """The partition's log, created empty if absent; ``config`` replaces its settings."""
        log = self._logs.get(tp)
        if log is None:
            log = PartitionLog.open(
                self.data_dir / tp.dir_name,
                config=config or LogConfig(),
                clock=self._clock,
                had_clean_shutdown=True,  # a new directory has nothing to recover
            )
            self._logs[tp] = log
            fsync_directory(self.data_dir)
        elif config is not None and config != log.config:
            log.update_config(config)
        return log

    def delete(self, tp: TopicPartition) -> bool:
        """Remove the partition's log and directory; False if there was none."""
        log = self._logs.pop(tp, None)
        if log is None:
            return False
        if self._on_delete is not None:
            self._on_delete(log)
        log.close_without_flush()
        doomed = self.data_dir / f"{tp.dir_name}.{uuid.uuid4().hex}{_DELETE_SUFFIX}"
        log.directory.rename(doomed)
        fsync_directory(self.data_dir)
        shutil.rmtree(doomed, ignore_errors=True)
        return True

    def all(self) -> dict[TopicPartition, PartitionLog]:
        """A snapshot of the logs by partition."""
        return dict(self._logs)

    # --- periodic work ---------------------------------------------------------------------

    def checkpoint(self) -> None:
        """Write both checkpoint files from the logs' current recovery points and starts."""
        write_offset_checkpoint(
            self.data_dir / RECOVERY_POINT_CHECKPOINT,
            {tp: log.recovery_point for tp, log in self._logs.items()},
        )
        write_offset_checkpoint(
            self.data_dir / LOG_START_OFFSET_CHECKPOINT,
            {tp: log.log_start_offset for tp, log in self._logs.items()},
        )

    def flush_dirty(self) -> None:
        """Apply each log's flush.messages / flush.ms (a periodic task calls this)."""
        for log in self._logs.values():
            log.maybe_flush()

    def run_retention(
        self, now_ms: int, high_watermarks: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        """Delete old segments of every log with a known high watermark; return the counts.

        Logs missing from ``high_watermarks`` are skipped (nothing is known to be safe).
        """
        deleted: dict[TopicPartition, int] = {}
        for tp, log in self._logs.items():
            high_watermark = high_watermarks.get(tp)
            if high_watermark is None:
                continue
            count = log.delete_old_segments(now_ms, high_watermark)
            if count:
                deleted[tp] = count
        if deleted:
            write_offset_checkpoint(
                self.data_dir / LOG_START_OFFSET_CHECKPOINT,
                {tp: log.log_start_offset for tp, log in self._logs.items()},
            )
        return deleted

    def remove_expired_producers(self, now_ms: int, *, expiration_ms: int) -> int:
        """Forget idempotent producers idle for ``expiration_ms`` in every log; how many."""
        return sum(
            len(log.remove_expired_producers(now_ms, expiration_ms=expiration_ms))
            for log in self._logs.values()
        )

    # --- shutdown --------------------------------------------------------------------------

    def close(self, *, broker_epoch: int = -1) -> None:
        """Clean shutdown: flush and close every log, checkpoint, write the marker."""
        if self._closed:
            return
        for log in self._logs.values():
            log.close()
        self.checkpoint()
        marker = self.data_dir / CLEAN_SHUTDOWN_FILE
        with marker.open("w", encoding="utf-8") as file:
            file.write(json.dumps({"version": 0, "brokerEpoch": broker_epoch}))
            file.flush()
            os.fsync(file.fileno())
        fsync_directory(self.data_dir)
        self._closed = True

    def close_without_flush(self) -> None:
        """Release every file as a crash would: no flush, no checkpoint, no marker."""
        for log in self._logs.values():
            log.close_without_flush()
        self._closed = True


def _marker_epoch(marker: Path) -> int:
    """The broker epoch in a clean-shutdown marker; -1 when it names none or cannot be read."""
    try:
        epoch = json.loads(marker.read_text(encoding="utf-8")).get("brokerEpoch", -1)
    except (OSError, ValueError, AttributeError):
        return -1
    return epoch if isinstance(epoch, int) else -1
