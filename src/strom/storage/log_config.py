"""The settings one partition log obeys, as plain fields with Kafka's defaults.

Storage never sees setting names: the server maps a topic's effective configuration
(``segment.bytes``, ``retention.ms``...) onto a :class:`LogConfig` and hands it in, and again
through :meth:`strom.storage.partition_log.PartitionLog.update_config` when it changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from strom.protocol.batch import Compression

LONG_MAX: Final = 2**63 - 1
_WEEK_MS: Final = 7 * 24 * 3600 * 1000

CREATE_TIME: Final = "CreateTime"
LOG_APPEND_TIME: Final = "LogAppendTime"


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    """One partition log's configuration; each field is the Kafka topic setting named beside it."""

    segment_bytes: int = 1024 * 1024 * 1024  # segment.bytes
    segment_ms: int = _WEEK_MS  # segment.ms
    segment_jitter_ms: int = 0  # segment.jitter.ms
    index_interval_bytes: int = 4096  # index.interval.bytes
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes
    max_message_bytes: int = 1048588  # max.message.bytes
    message_timestamp_type: str = CREATE_TIME  # message.timestamp.type
    retention_ms: int = _WEEK_MS  # retention.ms (-1: forever)
    retention_bytes: int = -1  # retention.bytes (-1: no limit)
    cleanup_policy: frozenset[str] = field(default=frozenset({"delete"}))  # cleanup.policy
    delete_retention_ms: int = 24 * 3600 * 1000  # delete.retention.ms
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX  # max.compaction.lag.ms
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    flush_messages: int = LONG_MAX  # flush.messages
    flush_ms: int = LONG_MAX  # flush.ms
    file_delete_delay_ms: int = 60000  # file.delete.delay.ms
    preallocate: bool = False  # preallocate
    compression: Compression | None = None  # compression.type (None: producer, keep the codec)

    def __post_init__(self) -> None:
        if self.message_timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise ValueError(
                f"message_timestamp_type must be {CREATE_TIME} or {LOG_APPEND_TIME}, "
                f"got {self.message_timestamp_type!r}"
            )
        if not self.cleanup_policy <= {"delete", "compact"}:
            raise ValueError(
                f"cleanup_policy must hold delete and/or compact: {self.cleanup_policy}"
            )
        if self.segment_bytes < 14:  # Kafka's minimum: a legacy record's overhead
            raise ValueError(f"segment_bytes must be at least 14, got {self.segment_bytes}")
        if self.segment_ms < 1:
            raise ValueError(f"segment_ms must be at least 1, got {self.segment_ms}")
        if self.segment_index_bytes < 4:
            raise ValueError(f"segment_index_bytes must be at least 4: {self.segment_index_bytes}")
        if self.index_interval_bytes < 0 or self.segment_jitter_ms < 0:
            raise ValueError("index_interval_bytes and segment_jitter_ms must not be negative")

    @property
    def log_append_time(self) -> bool:
        """True when the broker stamps batches with its own time (LogAppendTime)."""
        return self.message_timestamp_type == LOG_APPEND_TIME

    @property
    def deletes(self) -> bool:
        """Retention by time and size applies (``delete`` in cleanup.policy)."""
        return "delete" in self.cleanup_policy

    @property
    def compacts(self) -> bool:
        return "compact" in self.cleanup_policy
