"""Every setting strom knows, defined once: Kafka's name, type, default, validator and doc line.

Two scopes, as in Kafka: server settings (``server.properties``, ``--override``) and topic settings
(CreateTopics/AlterConfigs). Most topic settings take their default from a server setting
(``retention.ms`` from ``log.retention.ms``); ``TopicSetting.server_default`` names it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Final, TypeVar

from strom.config_catalogued import ACTED_ON_AS_CATALOGUED, DEFINED_NOT_ACTED_ON
from strom.config_types import (
    INT_MAX,
    LONG_MAX,
    ConfigError,
    ConfigType,
    Setting,
    TopicSetting,
    Validator,
    Value,
    at_least,
    between,
    one_of,
)
from strom.kafka_settings import KAFKA_SETTINGS
from strom.security_settings import AUTHORIZER_SETTINGS, LOGIN_CONFIG_SETTING

__all__ = [
    "RECORDED_ONLY",
    "SERVER_SETTINGS",
    "TOPIC_SETTINGS",
    "ConfigError",
    "ConfigType",
    "ServerConfig",
    "Setting",
    "TopicConfig",
    "load_properties",
    "parse_properties",
]


def _settings(items: Iterable[_SettingT]) -> Mapping[str, _SettingT]:
    return {item.name: item for item in items}


_SettingT = TypeVar("_SettingT", bound=Setting)

_B, _S, _I, _L, _D, _LIST = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)
_CLEANUP = one_of("delete", "compact")
_TIMESTAMP_TYPE = one_of("CreateTime", "LogAppendTime")
_COMPRESSION = one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")


def _throttled_replicas(value: Value) -> str | None:
    """Kafka's ``ThrottledReplicaListValidator``: ``*`` or ``partition:broker`` entries."""
    entries = value if isinstance(value, tuple) else ()
    if entries == ("*",) or all(re.fullmatch(r"\d+:\d+", entry) for entry in entries):
        return None
    return "must be '*' or comma-separated {partition}:{brokerId} entries"


_WEEK_MS: Final = 7 * 24 * 3600 * 1000


def _ms(name: str, default: int, doc: str, *, read_only: bool = True) -> Setting:
    """A non-negative INT setting in milliseconds."""
    return Setting(name, _I, default, doc, at_least(0), read_only=read_only)


_PROTOCOL_MAP_DEFAULT: Final = (
    "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
)

_CLUSTER_SETTINGS: Final = [
    Setting(
        "process.roles",
        _LIST,
        (),
        "broker, controller, or both; empty runs a one-node cluster without a controller listener.",
        one_of("broker", "controller"),
        read_only=True,
    ),
    Setting(
        "controller.quorum.voters",
        _LIST,
        (),
        "The controller quorum as id@host:port entries.",
        read_only=True,
    ),
    Setting(
        "controller.quorum.bootstrap.servers",
        _LIST,
        (),
        "host:port of controllers to find the quorum through (when voters are not listed).",
        read_only=True,
    ),
    Setting(
        "controller.listener.names",
        _LIST,
        (),
        "Names of the listeners controllers serve (the first is the one others use).",
        read_only=True,
    ),
    Setting(
        "listener.security.protocol.map",
        _S,
        _PROTOCOL_MAP_DEFAULT,
        "Listener name to security protocol, as NAME:PROTOCOL entries.",
        read_only=True,
    ),
    Setting(
        "inter.broker.listener.name",
        _S,
        None,
        "The listener brokers use to reach each other.",
        read_only=True,
    ),
    Setting(
        "security.inter.broker.protocol",
        _S,
        "PLAINTEXT",
        "Security protocol between brokers when no inter-broker listener name is set.",
        one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
        read_only=True,
    ),
    Setting("broker.rack", _S, None, "The rack of this broker.", read_only=True),
    _ms("broker.heartbeat.interval.ms", 2000, "Time between a broker's heartbeats."),
    _ms("broker.session.timeout.ms", 9000, "A broker without heartbeats this long is fenced."),
    _ms(
        "initial.broker.registration.timeout.ms",
        60000,
        "How long a broker tries to register before it gives up.",
    ),
    _ms("controller.quorum.election.timeout.ms", 1000, "Election timeout of the quorum."),
    _ms("controller.quorum.fetch.timeout.ms", 2000, "A follower without a leader this long votes."),
    _ms("controller.quorum.election.backoff.max.ms", 1000, "Longest wait before a new election."),
    _ms("controller.quorum.request.timeout.ms", 2000, "Timeout of a quorum request."),
    _ms("controller.quorum.retry.backoff.ms", 20, "Wait before retrying a failed quorum request."),
    _ms(
        "controller.quorum.append.linger.ms",
        25,
        "Accepted; the leader writes each operation's batch at once.",
    ),
    Setting(
        "metadata.log.segment.bytes",
        _I,
        1073741824,
        "Segment size of the metadata log.",
        at_least(12),
        read_only=True,
    ),
    Setting(
        "metadata.log.max.record.bytes.between.snapshots",
        _L,
        20971520,
        "Snapshot after this many bytes of new metadata records.",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "metadata.log.max.snapshot.interval.ms",
        _L,
        3600000,
        "Snapshot after this long with new metadata records; 0 never.",
        at_least(0),
        read_only=True,
    ),
    _ms(
        "metadata.max.idle.interval.ms",
        500,
        "The active controller appends a no-op record after this long without writes; 0 never.",
    ),
]

_REPLICATION_SETTINGS: Final = [
    Setting(
        "auto.leader.rebalance.enable",
        _B,
        True,
        "The active controller gives partitions back to their preferred replicas.",
        read_only=True,
    ),
    Setting(
        "leader.imbalance.check.interval.seconds",
        _L,
        300,
        "How often the controller looks for partitions not led by their preferred replica.",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "replica.lag.time.max.ms",
        _L,
        30000,
        "A follower not caught up for this long leaves the ISR.",
        at_least(1),
        read_only=True,
    ),
    _ms("replica.fetch.wait.max.ms", 500, "How long a follower's fetch waits for data."),
    Setting(
        "leader.replication.throttled.rate",
        _L,
        LONG_MAX,
        "Bytes per second this broker sends to throttled followers that are out of sync "
        "(leader.replication.throttled.replicas).",
        at_least(0),
    ),
    Setting(
        "follower.replication.throttled.rate",
        _L,
        LONG_MAX,
        "Bytes per second this broker fetches for throttled replicas that are out of sync "
        "(follower.replication.throttled.replicas).",
        at_least(0),
    ),
    Setting(
        "replication.quota.window.num",
        _I,
        11,
        "Windows the replication throttles measure their rate over.",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "replication.quota.window.size.seconds",
        _I,
        1,
        "Length of each window of the replication throttles.",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "unclean.leader.election.enable",
        _B,
        False,
        "Let a replica outside the ISR and the eligible leaders lead a partition that has no "
        "other (it may lose committed records).",
    ),
    Setting(
        "max.request.partition.size.limit",
        _I,
        2000,
        "The most partitions one DescribeTopicPartitions answer holds.",
        at_least(1),
        read_only=True,
    ),
    Setting("replica.fetch.min.bytes", _I, 1, "Bytes a follower's fetch waits for.", at_least(1)),
    Setting(
        "replica.fetch.max.bytes",
        _I,
        1048576,
        "Bytes a follower fetches per partition (a larger first batch comes whole).",
        at_least(0),
        read_only=True,
    ),
    Setting(
        "replica.fetch.response.max.bytes",
        _I,
        10485760,
        "Bytes a follower's fetch answer may hold.",
        at_least(0),
        read_only=True,
    ),
    _ms("replica.fetch.backoff.ms", 1000, "A follower's pause after a failed fetch."),
    _ms("replica.socket.timeout.ms", 30000, "A follower's fetch request timeout."),
    Setting(
        "offsets.commit.timeout.ms",
        _I,
        5000,
        "How long a group coordinator's write waits for the in-sync replicas.",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "request.timeout.ms",
        _I,
        30000,
        "How long a transaction coordinator's write waits for the in-sync replicas.",
        at_least(0),
        read_only=True,
    ),
    Setting(
        "replica.high.watermark.checkpoint.interval.ms",
        _L,
        5000,
        "How often high watermarks are written to replication-offset-checkpoint.",
        at_least(0),
        read_only=True,
    ),
]

_STROM_SERVER_SETTINGS: Final[Mapping[str, Setting]] = _settings(
    [
        Setting("node.id", _I, 1, "This node's id in the cluster.", at_least(0), read_only=True),
        Setting("log.dirs", _S, "./data", "Directory holding the partition logs.", read_only=True),
        Setting("listeners", _S, "PLAINTEXT://localhost:9092", "Listener address.", read_only=True),
        Setting(
            "advertised.listeners",
            _S,
            None,
            "Address given to clients, when it differs from the listener.",
            read_only=True,
        ),
        Setting("cluster.id", _S, None, "Cluster id; generated on first start.", read_only=True),
        Setting("num.partitions", _I, 1, "Partitions of an auto-created topic.", at_least(1)),
        Setting(
            "default.replication.factor",
            _I,
            1,
            "Replication factor of auto-created topics.",
            at_least(1),
        ),
        Setting("auto.create.topics.enable", _B, True, "Create unknown topics on metadata."),
        Setting("delete.topic.enable", _B, True, "Allow DeleteTopics."),
        Setting(
            "message.max.bytes",
            _I,
            1048588,
            "Largest record batch the broker accepts.",
            at_least(0),
        ),
        Setting(
            "socket.request.max.bytes",
            _I,
            104857600,
            "Largest request frame accepted.",
            at_least(1),
        ),
        Setting(
            "num.io.threads",
            _I,
            8,
            "Accepted for compatibility; strom is single-threaded.",
            at_least(1),
        ),
        Setting(
            "num.network.threads",
            _I,
            3,
            "Accepted for compatibility; asyncio serves all.",
            at_least(1),
        ),
        Setting("log.segment.bytes", _I, 1073741824, "Size of a log segment file.", at_least(14)),
        Setting("log.roll.ms", _L, None, "Roll a segment after this long (overrides hours)."),
        Setting("log.roll.hours", _I, 168, "Roll a segment after this many hours.", at_least(1)),
        Setting(
            "log.retention.ms", _L, None, "Keep data this long; -1 forever (overrides others)."
        ),
        Setting("log.retention.minutes", _I, None, "Keep data this many minutes."),
        Setting("log.retention.hours", _I, 168, "Keep data this many hours."),
        Setting("log.retention.bytes", _L, -1, "Keep at most this many bytes per partition."),
        Setting(
            "log.retention.check.interval.ms",
            _L,
            300000,
            "How often retention runs.",
            at_least(1),
        ),
        Setting("log.index.interval.bytes", _I, 4096, "Bytes between index entries.", at_least(0)),
        Setting(
            "log.index.size.max.bytes", _I, 10485760, "Maximum size of an index file.", at_least(4)
        ),
        Setting("log.cleanup.policy", _LIST, ("delete",), "delete and/or compact.", _CLEANUP),
        Setting("log.cleaner.enable", _B, True, "Run the log cleaner for compacted topics."),
        Setting(
            "log.cleaner.delete.retention.ms",
            _L,
            86400000,
            "Keep tombstones this long after compaction.",
            at_least(0),
        ),
        Setting(
            "log.cleaner.min.cleanable.ratio",
            _D,
            0.5,
            "Dirty ratio that makes a log worth cleaning.",
            between(0, 1),
        ),
        Setting(
            "log.cleaner.min.compaction.lag.ms",
            _L,
            0,
            "Records stay uncompacted at least this long.",
            at_least(0),
        ),
        Setting(
            "log.cleaner.max.compaction.lag.ms",
            _L,
            LONG_MAX,
            "Records are compacted within this long.",
            at_least(1),
        ),
        Setting(
            "log.cleaner.backoff.ms", _L, 15000, "Pause when nothing needs cleaning.", at_least(0)
        ),
        Setting(
            "log.flush.interval.messages",
            _L,
            LONG_MAX,
            "fsync after this many messages.",
            at_least(1),
        ),
        Setting("log.flush.interval.ms", _L, None, "fsync after this long."),
        Setting(
            "log.flush.scheduler.interval.ms",
            _L,
            LONG_MAX,
            "How often to check for logs to flush.",
        ),
        Setting(
            "log.flush.offset.checkpoint.interval.ms",
            _I,
            60000,
            "How often recovery points are checkpointed.",
            at_least(0),
        ),
        Setting("log.preallocate", _B, False, "Preallocate segment files."),
        Setting(
            "log.message.timestamp.type",
            _S,
            "CreateTime",
            "CreateTime or LogAppendTime.",
            _TIMESTAMP_TYPE,
        ),
        Setting(
            "log.message.timestamp.before.max.ms",
            _L,
            LONG_MAX,
            "How far in the past a timestamp may be.",
            at_least(0),
        ),
        Setting(
            "log.message.timestamp.after.max.ms",
            _L,
            3600000,
            "How far in the future a timestamp may be (Kafka 4.0: an hour).",
            at_least(0),
        ),
        Setting("compression.type", _S, "producer", "Codec of stored batches.", _COMPRESSION),
        Setting("min.insync.replicas", _I, 1, "Replicas that must ack acks=all.", at_least(1)),
        Setting(
            "log.segment.delete.delay.ms",
            _L,
            60000,
            "Delay before a deleted segment's files go.",
            at_least(0),
        ),
        Setting(
            "offsets.topic.num.partitions", _I, 50, "Partitions of __consumer_offsets.", at_least(1)
        ),
        Setting(
            "offsets.topic.replication.factor",
            ConfigType.SHORT,
            3,
            "Replication factor of __consumer_offsets (at most the brokers alive).",
            at_least(1),
        ),
        Setting(
            "offsets.topic.segment.bytes",
            _I,
            104857600,
            "Segment size of __consumer_offsets.",
            at_least(1),
        ),
        Setting(
            "offsets.retention.minutes",
            _I,
            10080,
            "Keep offsets of empty groups this long.",
            at_least(1),
        ),
        Setting(
            "offsets.retention.check.interval.ms",
            _L,
            600000,
            "How often offset expiry runs.",
            at_least(1),
        ),
        Setting(
            "group.initial.rebalance.delay.ms",
            _I,
            3000,
            "Wait for more members before the first rebalance.",
            at_least(0),
        ),
        Setting("group.min.session.timeout.ms", _I, 6000, "Smallest session timeout.", at_least(0)),
        Setting(
            "group.max.session.timeout.ms", _I, 1800000, "Largest session timeout.", at_least(0)
        ),
        Setting("group.max.size", _I, INT_MAX, "Most members in one group.", at_least(1)),
        Setting(
            "offset.metadata.max.bytes",
            _I,
            4096,
            "Largest metadata string of a committed offset.",
            at_least(0),
        ),
        Setting(
            "transaction.max.timeout.ms",
            _I,
            900000,
            "Largest transaction timeout a producer may ask for.",
            at_least(1),
        ),
        Setting(
            "transaction.state.log.num.partitions",
            _I,
            50,
            "Partitions of __transaction_state.",
            at_least(1),
        ),
        Setting(
            "transactional.id.expiration.ms",
            _I,
            604800000,
            "Forget idle transactional ids after this long.",
            at_least(1),
        ),
        Setting(
            "transaction.state.log.replication.factor",
            ConfigType.SHORT,
            3,
            "Replication factor of __transaction_state (at most the brokers alive).",
            at_least(1),
        ),
        Setting(
            "transaction.state.log.min.isr",
            _I,
            2,
            "min.insync.replicas of __transaction_state (at most its replicas).",
            at_least(1),
        ),
        Setting(
            "transaction.state.log.segment.bytes",
            _I,
            104857600,
            "Segment size of __transaction_state.",
            at_least(1),
        ),
        Setting(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            _I,
            10000,
            "How often transactions older than their timeout are aborted.",
            at_least(1),
        ),
        Setting(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            _I,
            3600000,
            "How often expired transactional ids are removed.",
            at_least(1),
        ),
        Setting(
            "producer.id.expiration.ms",
            _I,
            86400000,
            "Forget idle idempotent producers after this long.",
            at_least(1),
        ),
        Setting(
            "producer.id.expiration.check.interval.ms",
            _I,
            600000,
            "How often idle idempotent producers are forgotten.",
            at_least(1),
        ),
        *_CLUSTER_SETTINGS,
        *_REPLICATION_SETTINGS,
        *AUTHORIZER_SETTINGS,
        LOGIN_CONFIG_SETTING,
    ]
)

SERVER_SETTINGS: Final[Mapping[str, Setting]] = {
    **KAFKA_SETTINGS.broker,
    **{
        name: dataclasses.replace(setting, per_broker=KAFKA_SETTINGS.broker[name].per_broker)
        if name in KAFKA_SETTINGS.broker
        else setting
        for name, setting in _STROM_SERVER_SETTINGS.items()
    },
}
"""Every broker setting: strom's own, then the rest of Kafka's catalog (recorded only)."""


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


_STROM_TOPIC_SETTINGS: Final[Mapping[str, TopicSetting]] = _settings(
    [
        _topic("cleanup.policy", _LIST, "log.cleanup.policy", "delete and/or compact.", _CLEANUP),
        _topic(
            "leader.replication.throttled.replicas",
            _LIST,
            None,
            "Replicas whose leader throttles what it sends them while they are out of sync.",
            _throttled_replicas,
            default=(),
        ),
        _topic(
            "follower.replication.throttled.replicas",
            _LIST,
            None,
            "Replicas that throttle what they fetch while they are out of sync.",
            _throttled_replicas,
            default=(),
        ),
        _topic(
            "compression.type", _S, "compression.type", "Codec of stored batches.", _COMPRESSION
        ),
        _topic(
            "delete.retention.ms",
            _L,
            "log.cleaner.delete.retention.ms",
            "Keep tombstones this long after compaction.",
            at_least(0),
        ),
        _topic(
            "file.delete.delay.ms",
            _L,
            "log.segment.delete.delay.ms",
            "Delay before a deleted segment's files go.",
            at_least(0),
        ),
        _topic("flush.messages", _L, "log.flush.interval.messages", "fsync every N.", at_least(1)),
        _topic("flush.ms", _L, None, "fsync after this long.", at_least(0), default=LONG_MAX),
        _topic(
            "index.interval.bytes",
            _I,
            "log.index.interval.bytes",
            "Bytes between index entries.",
            at_least(0),
        ),
        _topic(
            "max.compaction.lag.ms",
            _L,
            "log.cleaner.max.compaction.lag.ms",
            "Records are compacted within this long.",
            at_least(1),
        ),
        _topic(
            "max.message.bytes",
            _I,
            "message.max.bytes",
            "Largest record batch accepted.",
            at_least(0),
        ),
        _topic(
            "message.timestamp.type",
            _S,
            "log.message.timestamp.type",
            "CreateTime or LogAppendTime.",
            _TIMESTAMP_TYPE,
        ),
        _topic(
            "message.timestamp.before.max.ms",
            _L,
            "log.message.timestamp.before.max.ms",
            "How far in the past a timestamp may be.",
            at_least(0),
        ),
        _topic(
            "message.timestamp.after.max.ms",
            _L,
            "log.message.timestamp.after.max.ms",
            "How far in the future a timestamp may be.",
            at_least(0),
        ),
        _topic(
            "min.cleanable.dirty.ratio",
            _D,
            "log.cleaner.min.cleanable.ratio",
            "Dirty ratio that makes a log worth cleaning.",
            between(0, 1),
        ),
        _topic(
            "min.compaction.lag.ms",
            _L,
            "log.cleaner.min.compaction.lag.ms",
            "Records stay uncompacted at least this long.",
            at_least(0),
        ),
        _topic(
            "min.insync.replicas",
            _I,
            "min.insync.replicas",
            "Replicas that must ack acks=all.",
            at_least(1),
        ),
        _topic("preallocate", _B, "log.preallocate", "Preallocate segment files."),
        _topic(
            "retention.bytes",
            _L,
            "log.retention.bytes",
            "Keep at most this many bytes; -1 no limit.",
        ),
        _topic("retention.ms", _L, None, "Keep data this long; -1 forever.", default=_WEEK_MS),
        _topic(
            "segment.bytes", _I, "log.segment.bytes", "Size of a log segment file.", at_least(14)
        ),
        _topic(
            "segment.index.bytes",
            _I,
            "log.index.size.max.bytes",
            "Maximum size of an index file.",
            at_least(4),
        ),
        _topic(
            "segment.jitter.ms", _L, None, "Random jitter on segment.ms.", at_least(0), default=0
        ),
        _topic(
            "segment.ms", _L, None, "Roll a segment after this long.", at_least(1), default=_WEEK_MS
        ),
        _topic(
            "unclean.leader.election.enable",
            _B,
            "unclean.leader.election.enable",
            "Allow out-of-sync replicas to lead.",
        ),
    ]
)

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
    **_STROM_TOPIC_SETTINGS,
}
"""Every topic setting: strom's own, then the rest of Kafka's catalog (recorded only)."""

RECORDED_ONLY: Final[frozenset[str]] = frozenset(
    (KAFKA_SETTINGS.broker.keys() - _STROM_SERVER_SETTINGS.keys() - ACTED_ON_AS_CATALOGUED)
    | (KAFKA_SETTINGS.topic.keys() - _STROM_TOPIC_SETTINGS.keys())
    | DEFINED_NOT_ACTED_ON
)
"""Kafka's settings strom accepts, validates, stores and describes, and does not act on
(docs/broker.md lists them)."""


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text: ``key=value`` or ``key: value`` lines, ``#`` comments."""
    result: dict[str, str] = {}
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.strip()
        if not line or line[0] in "#!":
            continue
        separators = [i for i in (line.find("="), line.find(":")) if i > 0]
        if not separators:
            raise ConfigError(f"line {number}", f"expected name=value, got {line!r}")
        cut = min(separators)
        result[line[:cut].strip()] = line[cut + 1 :].strip()
    return result


def load_properties(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(str(path), f"cannot read properties file: {error.strerror}") from None
    return parse_properties(text)


_LISTENER_PREFIX: Final = "listener.name."
_JAAS: Final = "sasl.jaas.config"


def _listener_prefixed(name: str) -> Setting | None:
    """The setting a ``listener.name.<listener>.<setting>`` name overrides for one listener
    (``<mechanism>.sasl.jaas.config`` included), as Kafka's ``ListenerName.configPrefix``."""
    listener, sep, rest = name.removeprefix(_LISTENER_PREFIX).partition(".")
    if not name.startswith(_LISTENER_PREFIX) or not sep or not listener:
        return None
    if rest.endswith("." + _JAAS):
        rest = _JAAS
    return SERVER_SETTINGS.get(rest)


class ServerConfig:
    """Validated server settings; unknown names and invalid values are refused up front.

    ``listener.name.<listener>.<setting>`` (lower-case listener name) overrides a setting for one
    listener; ``for_listener`` reads it with the fallback to the plain setting.
    """

    def __init__(self, overrides: Mapping[str, str | Value] | None = None) -> None:
        values: dict[str, Value] = {name: s.default for name, s in SERVER_SETTINGS.items()}
        explicit: set[str] = set()
        for name, raw in (overrides or {}).items():
            setting = SERVER_SETTINGS.get(name) or _listener_prefixed(name)
            if setting is None:
                raise ConfigError(name, "unknown setting")
            values[name] = setting.parse(raw)
            explicit.add(name)
        self._values = values
        self._explicit = frozenset(explicit)

    def for_listener(self, listener: str, name: str, *, mechanism: str | None = None) -> Value:
        """``name`` for one listener: ``listener.name.<listener>.[<mechanism>.]<name>`` when
        set, else the plain setting."""
        prefix = f"{_LISTENER_PREFIX}{listener.lower()}."
        if mechanism is not None:
            prefix += f"{mechanism.lower()}."
        return self._values.get(prefix + name, self._values[name])

    def __getitem__(self, name: str) -> Value:
        return self._values[name]

    def get_int(self, name: str) -> int:
        value = self._values[name]
        assert isinstance(value, int), name
        return value

    def get_str(self, name: str) -> str:
        value = self._values[name]
        assert isinstance(value, str), name
        return value

    def get_bool(self, name: str) -> bool:
        value = self._values[name]
        assert isinstance(value, bool), name
        return value

    def is_explicit(self, name: str) -> bool:
        """True when the setting came from the properties file or an override."""
        return name in self._explicit

    def with_overrides(self, overrides: Mapping[str, str | Value]) -> ServerConfig:
        merged: dict[str, str | Value] = {name: self._values[name] for name in self._explicit}
        merged.update(overrides)
        return ServerConfig(merged)

    @property
    def retention_ms(self) -> int:
        """log.retention.ms, else minutes, else hours, as Kafka resolves them."""
        ms = self._values["log.retention.ms"]
        if isinstance(ms, int):
            return ms
        minutes = self._values["log.retention.minutes"]
        if isinstance(minutes, int):
            return -1 if minutes < 0 else minutes * 60_000
        hours = self.get_int("log.retention.hours")
        return -1 if hours < 0 else hours * 3_600_000

    @property
    def roll_ms(self) -> int:
        ms = self._values["log.roll.ms"]
        return ms if isinstance(ms, int) else self.get_int("log.roll.hours") * 3_600_000

    @property
    def flush_ms(self) -> int:
        ms = self._values["log.flush.interval.ms"]
        return ms if isinstance(ms, int) else LONG_MAX

    def topic_default(self, name: str) -> Value:
        """The value a topic setting takes when the topic does not override it."""
        setting = TOPIC_SETTINGS[name]
        derived: Mapping[str, Callable[[], Value]] = {
            "retention.ms": lambda: self.retention_ms,
            "segment.ms": lambda: self.roll_ms,
            "flush.ms": lambda: self.flush_ms,
        }
        if name in derived:
            return derived[name]()
        if setting.server_default is not None:
            return self._values[setting.server_default]
        return setting.default


class TopicConfig:
    """A topic's effective settings: its own overrides over the server's defaults."""

    def __init__(self, server: ServerConfig, overrides: Mapping[str, str | Value]) -> None:
        self.overrides: dict[str, Value] = validate_topic_configs(overrides)
        self._server = server

    def __getitem__(self, name: str) -> Value:
        if name in self.overrides:
            return self.overrides[name]
        return self._server.topic_default(name)

    def get_int(self, name: str) -> int:
        value = self[name]
        assert isinstance(value, int), name
        return value

    def source(self, name: str) -> str:
        """Where the value comes from: topic, static (server file/override) or default."""
        if name in self.overrides:
            return "topic"
        setting = TOPIC_SETTINGS[name]
        if setting.server_default and self._server.is_explicit(setting.server_default):
            return "static"
        return "default"


def validate_topic_configs(configs: Mapping[str, str | Value]) -> dict[str, Value]:
    """Parse topic settings; raises ConfigError on an unknown name or an invalid value."""
    parsed: dict[str, Value] = {}
    for name, raw in configs.items():
        setting = TOPIC_SETTINGS.get(name)
        if setting is None:
            raise ConfigError(name, "unknown topic setting")
        parsed[name] = setting.parse(raw)
    return parsed
