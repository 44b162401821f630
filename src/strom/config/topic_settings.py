"""Every topic setting: those strom acts on, each with the server setting that supplies its
default, over the rest of Kafka's catalog."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from strom.config.kafka_settings import KAFKA_SETTINGS
from strom.config.log import CLEANUP_POLICY, COMPRESSION_TYPE, TIMESTAMP_TYPE
from strom.config.server_settings import SERVER_SETTINGS
from strom.config.setting import (
    LONG_MAX,
    ConfigType,
    TopicSetting,
    Validator,
    Value,
    at_least,
    between,
)
from strom.config.shorthands import BOOLEAN, DOUBLE, INT, LIST, LONG, STRING, by_name

__all__ = ["STROM_TOPIC_SETTINGS", "TOPIC_SETTINGS"]


def _throttled_replicas(value: Value) -> str | None:
    """Kafka's ``ThrottledReplicaListValidator``: ``*`` or ``partition:broker`` entries."""
    entries = value if isinstance(value, tuple) else ()
    if entries == ("*",) or all(re.fullmatch(r"\d+:\d+", entry) for entry in entries):
        return None
    return "must be '*' or comma-separated {partition}:{brokerId} entries"


_WEEK_MS: Final = 7 * 24 * 3600 * 1000


def _topic(
    name: str,
    type_: ConfigType,
    server_default: str | None,
    doc: str,
    validator: Validator | None = None,
    *,
    default: Value = None,
) -> TopicSetting:
    if server_default is not None:
        default = SERVER_SETTINGS[server_default].default
    return TopicSetting(name, type_, default, doc, validator, server_default=server_default)


STROM_TOPIC_SETTINGS: Final[Mapping[str, TopicSetting]] = by_name(
    [
        _topic(
            "cleanup.policy", LIST, "log.cleanup.policy", "delete and/or compact.", CLEANUP_POLICY
        ),
        _topic(
            "leader.replication.throttled.replicas",
            LIST,
            None,
            "Replicas whose leader throttles what it sends them while they are out of sync.",
            _throttled_replicas,
            default=(),
        ),
        _topic(
            "follower.replication.throttled.replicas",
            LIST,
            None,
            "Replicas that throttle what they fetch while they are out of sync.",
            _throttled_replicas,
            default=(),
        ),
        _topic(
            "compression.type",
            STRING,
            "compression.type",
            "Codec of stored batches.",
            COMPRESSION_TYPE,
        ),
        _topic(
            "delete.retention.ms",
            LONG,
            "log.cleaner.delete.retention.ms",
            "Keep tombstones this long after compaction.",
            at_least(0),
        ),
        _topic(
            "file.delete.delay.ms",
            LONG,
            "log.segment.delete.delay.ms",
            "Delay before a deleted segment's files go.",
            at_least(0),
        ),
        _topic(
            "flush.messages", LONG, "log.flush.interval.messages", "fsync every N.", at_least(1)
        ),
        _topic("flush.ms", LONG, None, "fsync after this long.", at_least(0), default=LONG_MAX),
        _topic(
            "index.interval.bytes",
            INT,
            "log.index.interval.bytes",
            "Bytes between index entries.",
            at_least(0),
        ),
        _topic(
            "max.compaction.lag.ms",
            LONG,
            "log.cleaner.max.compaction.lag.ms",
            "Records are compacted within this long.",
            at_least(1),
        ),
        _topic(
            "max.message.bytes",
            INT,
            "message.max.bytes",
            "Largest record batch accepted.",
            at_least(0),
        ),
        _topic(
            "message.timestamp.type",
            STRING,
            "log.message.timestamp.type",
            "CreateTime or LogAppendTime.",
            TIMESTAMP_TYPE,
        ),
        _topic(
            "message.timestamp.before.max.ms",
            LONG,
            "log.message.timestamp.before.max.ms",
            "How far in the past a timestamp may be.",
            at_least(0),
        ),
        _topic(
            "message.timestamp.after.max.ms",
            LONG,
            "log.message.timestamp.after.max.ms",
            "How far in the future a timestamp may be.",
            at_least(0),
        ),
        _topic(
            "min.cleanable.dirty.ratio",
            DOUBLE,
            "log.cleaner.min.cleanable.ratio",
            "Dirty ratio that makes a log worth cleaning.",
            between(0, 1),
        ),
        _topic(
            "min.compaction.lag.ms",
            LONG,
            "log.cleaner.min.compaction.lag.ms",
            "Records stay uncompacted at least this long.",
            at_least(0),
        ),
        _topic(
            "min.insync.replicas",
            INT,
            "min.insync.replicas",
            "Replicas that must ack acks=all.",
            at_least(1),
        ),
        _topic("preallocate", BOOLEAN, "log.preallocate", "Preallocate segment files."),
        _topic(
            "retention.bytes",
            LONG,
            "log.retention.bytes",
            "Keep at most this many bytes; -1 no limit.",
        ),
        _topic("retention.ms", LONG, None, "Keep data this long; -1 forever.", default=_WEEK_MS),
        _topic(
            "segment.bytes", INT, "log.segment.bytes", "Size of a log segment file.", at_least(14)
        ),
        _topic(
            "segment.index.bytes",
            INT,
            "log.index.size.max.bytes",
            "Maximum size of an index file.",
            at_least(4),
        ),
        _topic(
            "segment.jitter.ms", LONG, None, "Random jitter on segment.ms.", at_least(0), default=0
        ),
        _topic(
            "segment.ms",
            LONG,
            None,
            "Roll a segment after this long.",
            at_least(1),
            default=_WEEK_MS,
        ),
        _topic(
            "unclean.leader.election.enable",
            BOOLEAN,
            "unclean.leader.election.enable",
            "Allow out-of-sync replicas to lead.",
        ),
    ]
)
"""The topic settings strom defines itself; it acts on all but ``DEFINED_NOT_ACTED_ON``."""

TOPIC_SETTINGS: Final[Mapping[str, TopicSetting]] = {
    **{
        name: _topic(
            name,
            setting.type,
            setting.server_default,
            setting.doc,
            setting.validator,
            default=setting.default,
        )
        for name, setting in KAFKA_SETTINGS.topic.items()
    },
    **STROM_TOPIC_SETTINGS,
}
"""Every topic setting: strom's own, then the rest of Kafka's catalog (recorded only)."""
