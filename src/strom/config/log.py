"""The partition logs' settings (Kafka's ``log.*``): segments, retention, indexes, cleaning,
flushing, timestamps and compression; most are the server defaults of topic settings."""

from __future__ import annotations

from typing import Final

from strom.config.setting import LONG_MAX, Setting, at_least, between, one_of
from strom.config.shorthands import BOOLEAN, DOUBLE, INT, LIST, LONG, STRING

__all__ = ["CLEANUP_POLICY", "COMPRESSION_TYPE", "LOG_SETTINGS", "TIMESTAMP_TYPE"]

# Validators a log setting shares with the topic setting it is the default of.
CLEANUP_POLICY: Final = one_of("delete", "compact")
TIMESTAMP_TYPE: Final = one_of("CreateTime", "LogAppendTime")
COMPRESSION_TYPE: Final = one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")

LOG_SETTINGS: Final = (
    Setting("log.segment.bytes", INT, 1073741824, "Size of a log segment file.", at_least(14)),
    Setting("log.roll.ms", LONG, None, "Roll a segment after this long (overrides hours)."),
    Setting("log.roll.hours", INT, 168, "Roll a segment after this many hours.", at_least(1)),
    Setting("log.retention.ms", LONG, None, "Keep data this long; -1 forever (overrides others)."),
    Setting("log.retention.minutes", INT, None, "Keep data this many minutes."),
    Setting("log.retention.hours", INT, 168, "Keep data this many hours."),
    Setting("log.retention.bytes", LONG, -1, "Keep at most this many bytes per partition."),
    Setting(
        "log.retention.check.interval.ms",
        LONG,
        300000,
        "How often retention runs.",
        at_least(1),
    ),
    Setting("log.index.interval.bytes", INT, 4096, "Bytes between index entries.", at_least(0)),
    Setting(
        "log.index.size.max.bytes", INT, 10485760, "Maximum size of an index file.", at_least(4)
    ),
    Setting("log.cleanup.policy", LIST, ("delete",), "delete and/or compact.", CLEANUP_POLICY),
    Setting("log.cleaner.enable", BOOLEAN, True, "Run the log cleaner for compacted topics."),
    Setting(
        "log.cleaner.delete.retention.ms",
        LONG,
        86400000,
        "Keep tombstones this long after compaction.",
        at_least(0),
    ),
    Setting(
        "log.cleaner.min.cleanable.ratio",
        DOUBLE,
        0.5,
        "Dirty ratio that makes a log worth cleaning.",
        between(0, 1),
    ),
    Setting(
        "log.cleaner.min.compaction.lag.ms",
        LONG,
        0,
        "Records stay uncompacted at least this long.",
        at_least(0),
    ),
    Setting(
        "log.cleaner.max.compaction.lag.ms",
        LONG,
        LONG_MAX,
        "Records are compacted within this long.",
        at_least(1),
    ),
    Setting(
        "log.cleaner.backoff.ms", LONG, 15000, "Pause when nothing needs cleaning.", at_least(0)
    ),
    Setting(
        "log.flush.interval.messages",
        LONG,
        LONG_MAX,
        "fsync after this many messages.",
        at_least(1),
    ),
    Setting("log.flush.interval.ms", LONG, None, "fsync after this long."),
    Setting(
        "log.flush.scheduler.interval.ms",
        LONG,
        LONG_MAX,
        "How often to check for logs to flush.",
    ),
    Setting(
        "log.flush.offset.checkpoint.interval.ms",
        INT,
        60000,
        "How often recovery points are checkpointed.",
        at_least(0),
    ),
    Setting("log.preallocate", BOOLEAN, False, "Preallocate segment files."),
    Setting(
        "log.message.timestamp.type",
        STRING,
        "CreateTime",
        "CreateTime or LogAppendTime.",
        TIMESTAMP_TYPE,
    ),
    Setting(
        "log.message.timestamp.before.max.ms",
        LONG,
        LONG_MAX,
        "How far in the past a timestamp may be.",
        at_least(0),
    ),
    Setting(
        "log.message.timestamp.after.max.ms",
        LONG,
        3600000,
        "How far in the future a timestamp may be (Kafka 4.0: an hour).",
        at_least(0),
    ),
    Setting("compression.type", STRING, "producer", "Codec of stored batches.", COMPRESSION_TYPE),
    Setting("min.insync.replicas", INT, 1, "Replicas that must ack acks=all.", at_least(1)),
    Setting(
        "log.segment.delete.delay.ms",
        LONG,
        60000,
        "Delay before a deleted segment's files go.",
        at_least(0),
    ),
)
