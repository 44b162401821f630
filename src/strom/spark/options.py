"""The options of the ``strom`` data source, checked and typed once, with Spark's names.

Every option Spark's Kafka source and sink know keeps its name and meaning. ``kafka.``-prefixed
options are client settings: the prefix is dropped, Java client names that librdkafka spells
differently are translated, and the settings the source or sink must own are refused with the
reason, as Spark refuses them. Option names are case-insensitive, as Spark's are.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from strom.client.java_tls import TLS_STORE_SETTINGS, tls_settings
from strom.common import TopicPartition
from strom.spark.offsets import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    SpecKind,
    parse_offsets_json,
    parse_partitions_json,
    parse_timestamps_json,
)

__all__ = [
    "OptionError",
    "ReadOptions",
    "Subscription",
    "SubscriptionKind",
    "WriteOptions",
    "client_config",
    "parse_duration_ms",
    "parse_read_options",
    "parse_write_options",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000
DEFAULT_POLL_TIMEOUT_MS = 120_000
DEFAULT_API_TIMEOUT_MS = 60_000
DEFAULT_FETCH_RECORDS = 10_000


class OptionError(ValueError):
    """A bad option: the message names it and says what is expected."""


class SubscriptionKind(Enum):
    ASSIGN = "assign"
    SUBSCRIBE = "subscribe"
    SUBSCRIBE_PATTERN = "subscribePattern"


@dataclass(frozen=True)
class Subscription:
    """Which partitions a query reads: fixed ones, named topics, or topics matching a pattern."""

    kind: SubscriptionKind
    topics: tuple[str, ...] = ()
    pattern: str = ""
    partitions: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        """Whether a topic of the cluster belongs to this subscription."""
        if self.kind is SubscriptionKind.SUBSCRIBE:
            return topic in self.topics
        if self.kind is SubscriptionKind.SUBSCRIBE_PATTERN:
            return re.fullmatch(self.pattern, topic) is not None
        return any(tp.topic == topic for tp in self.partitions)


@dataclass(frozen=True)
class ReadOptions:
    """The source's options, for a batch or a streaming read."""

    client: dict[str, str]
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    fail_on_data_loss: bool = True
    include_headers: bool = False
    timestamp_not_found_latest: bool = False
    max_offsets_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    min_partitions: int | None = None
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    api_timeout_ms: int = DEFAULT_API_TIMEOUT_MS
    fetch_records: int = DEFAULT_FETCH_RECORDS
    commit_to_group: str | None = None


@dataclass(frozen=True)
class WriteOptions:
    """The sink's options."""

    client: dict[str, str]
    topic: str | None = None
    api_timeout_ms: int = DEFAULT_API_TIMEOUT_MS
    exactly_once: bool = False
    transactional_id_prefix: str | None = None
    """Exactly-once writes: None derives it from the streaming query id."""
    include_timestamp: bool = False
    """Write the ``timestamp`` column (epoch milliseconds) as the records' timestamps."""


# Settings the source or sink owns; Spark refuses them with these reasons.
_SOURCE_REFUSED = {
    "auto.offset.reset": (
        "is not supported: set the source option 'startingOffsets' to 'earliest' or 'latest' "
        "instead. The query tracks the offsets it consumed itself, so no data is missed when "
        "topics or partitions come and go; 'startingOffsets' applies only when a new query "
        "starts, and a restarted query always resumes where it stopped"
    ),
    "enable.auto.commit": (
        "is not supported: the query tracks the offsets it consumed itself and commits none "
        "to Kafka (see the option 'commitToGroup')"
    ),
    "key.deserializer": (
        "is not supported: keys are always read as bytes; deserialize them with DataFrame "
        "operations"
    ),
    "value.deserializer": (
        "is not supported: values are always read as bytes; deserialize them with DataFrame "
        "operations"
    ),
    "interceptor.classes": "is not supported: the source does not run client interceptors",
}
_SINK_REFUSED = {
    "key.serializer": (
        "is not supported: keys are written as bytes; serialize them to a string or binary "
        "column 'key' with DataFrame operations"
    ),
    "value.serializer": (
        "is not supported: values are written as bytes; serialize them to a string or binary "
        "column 'value' with DataFrame operations"
    ),
    "interceptor.classes": "is not supported: the sink does not run client interceptors",
}
# Java client names that librdkafka spells differently (for both roles unless noted).
_RENAMED = {
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "max.request.size": "message.max.bytes",
}
_CONSUMER_RENAMED = {"request.timeout.ms": "socket.timeout.ms"}
# Java client settings with no librdkafka counterpart and no effect worth refusing.
_IGNORED = frozenset(
    {
        "metric.reporters",
        "metrics.num.samples",
        "metrics.sample.window.ms",
        "metrics.recording.level",
        "auto.include.jmx.reporter",
    }
)
_JAAS = re.compile(r'(username|password)\s*=\s*"([^"]*)"')


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in options.items()}


def _client_settings(
    options: Mapping[str, str], *, refused: Mapping[str, str], consumer: bool
) -> tuple[dict[str, str], dict[str, str]]:
    """librdkafka settings from the ``kafka.`` options, and the Java-only ones the data source
    reads itself (``max.poll.records``, ``default.api.timeout.ms``)."""
    own: dict[str, str] = {}
    tls = {
        key.removeprefix("kafka."): value
        for key, value in options.items()
        if key.removeprefix("kafka.") in TLS_STORE_SETTINGS
    }
    settings, problem = tls_settings(tls)
    if problem is not None:
        raise OptionError(f"Kafka options {', '.join(sorted(tls))}: {problem}")
    for key, value in options.items():
        if not key.startswith("kafka."):
            continue
        name = key.removeprefix("kafka.")
        if name in refused:
            raise OptionError(f"Kafka option '{name}' {refused[name]}")
        if name in TLS_STORE_SETTINGS:
            continue
        if name in _IGNORED:
            log.warning("ignoring Kafka option '%s' (a Java client setting)", name)
        elif name in ("max.poll.records", "default.api.timeout.ms"):
            own[name] = value
        elif name == "sasl.jaas.config":
            settings.update({f"sasl.{k}": v for k, v in _JAAS.findall(value)})
        elif name == "buffer.memory":
            settings["queue.buffering.max.kbytes"] = str(max(1, _integer(key, value) // 1024))
        elif consumer and name in _CONSUMER_RENAMED:
            settings[_CONSUMER_RENAMED[name]] = value
        else:
            settings[_RENAMED.get(name, name)] = value
    if not settings.get("bootstrap.servers"):
        role = "consumer" if consumer else "producer"
        raise OptionError(f"Option 'kafka.bootstrap.servers' must be specified for the {role}")
    return settings, own


def client_config(options: Mapping[str, str]) -> dict[str, str]:
    """The librdkafka settings of a client the data source does not make (an admin client)
    from ``kafka.`` options, translated as the source's and sink's are."""
    return _client_settings(options, refused={}, consumer=False)[0]


def _integer(name: str, text: str, *, minimum: int = 0) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise OptionError(f"option '{name}' must be an integer, got {text!r}") from None
    if value < minimum:
        raise OptionError(f"option '{name}' must be at least {minimum}, got {value}")
    return value


def _boolean(name: str, text: str) -> bool:
    word = text.strip().lower()
    if word not in ("true", "false"):
        raise OptionError(f"option '{name}' must be 'true' or 'false', got {text!r}")
    return word == "true"


_DURATION = re.compile(r"\s*(\d+)\s*(us|ms|s|m|min|h|d)?\s*", re.IGNORECASE)
_UNIT_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}


def parse_duration_ms(name: str, text: str) -> int:
    """A duration as Spark writes them (``15m``, ``30s``, ``500ms``; no unit: milliseconds)."""
    match = _DURATION.fullmatch(text)
    if match is None:
        raise OptionError(
            f"option '{name}' must be a duration such as '30s' or '15m', got {text!r}"
        )
    unit = (match[2] or "ms").lower()
    return int(int(match[1]) * _UNIT_MS.get(unit, 86_400_000))


def _subscription(options: Mapping[str, str]) -> Subscription:
    given = [k for k in ("assign", "subscribe", "subscribepattern") if k in options]
    names = "subscribe, subscribePattern, assign"
    if not given:
        raise OptionError(f"One of the options {names} must be specified for the strom source")
    if len(given) > 1:
        raise OptionError(f"Only one of the options {names} can be specified for the strom source")
    value = options[given[0]]
    if given[0] == "assign":
        partitions = parse_partitions_json("assign", value)
        if not partitions:
            raise OptionError(f"No topic partitions to assign: option 'assign' is {value!r}")
        return Subscription(SubscriptionKind.ASSIGN, partitions=partitions)
    if given[0] == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError(f"No topics to subscribe to: option 'subscribe' is {value!r}")
        return Subscription(SubscriptionKind.SUBSCRIBE, topics=topics)
    if not value.strip():
        raise OptionError(f"Pattern to subscribe is empty: option 'subscribePattern' is {value!r}")
    try:
        re.compile(value)
    except re.error as exc:
        raise OptionError(f"option 'subscribePattern' is not a valid pattern: {exc}") from None
    return Subscription(SubscriptionKind.SUBSCRIBE_PATTERN, pattern=value)


def _offset_spec(options: Mapping[str, str], which: str, default: OffsetSpec) -> OffsetSpec:
    """The ``starting``/``ending`` spec; by-timestamp options win, as in Spark."""
    by_partition = f"{which}offsetsbytimestamp"
    global_ts = f"{which}timestamp"
    plain = f"{which}offsets"
    spark_name = {"starting": "startingOffsets", "ending": "endingOffsets"}[which]
    try:
        if by_partition in options:
            return parse_timestamps_json(f"{spark_name}ByTimestamp", options[by_partition])
        if global_ts in options:
            name = f"{which}Timestamp"
            return OffsetSpec(SpecKind.TIMESTAMP, timestamp=_integer(name, options[global_ts]))
        if plain in options:
            return parse_offsets_json(spark_name, options[plain])
    except ValueError as exc:
        raise OptionError(str(exc)) from None
    return default


def _check_batch_offsets(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """Batch queries start at no 'latest' and end at no 'earliest', as in Spark."""
    if starting.kind is SpecKind.LATEST:
        raise OptionError("starting offset can't be latest for batch queries")
    if ending.kind is SpecKind.EARLIEST:
        raise OptionError("ending offset can't be earliest for batch queries")
    for tp, offset in starting.offsets.items():
        if starting.kind is SpecKind.OFFSETS and offset == LATEST:
            raise OptionError(
                f"startingOffsets for {tp.topic}-{tp.partition} can't be latest for batch queries"
            )
    for tp, offset in ending.offsets.items():
        if ending.kind is SpecKind.OFFSETS and offset == EARLIEST:
            raise OptionError(
                f"endingOffsets for {tp.topic}-{tp.partition} can't be earliest for batch queries"
            )


def parse_read_options(raw: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """The source's options for a streaming (``readStream``) or batch (``read``) query."""
    options = _lower(raw)
    client, own = _client_settings(options, refused=_SOURCE_REFUSED, consumer=True)
    subscription = _subscription(options)
    if streaming:
        for name in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"):
            if name in options:
                raise OptionError(f"option '{name}' is not valid in streaming queries")
        starting = _offset_spec(options, "starting", OffsetSpec.latest())
        ending = OffsetSpec.latest()
    else:
        for name in ("maxoffsetspertrigger", "minoffsetspertrigger", "maxbytespertrigger"):
            if name in options:
                log.warning("option '%s' is ignored by batch queries", name)
        starting = _offset_spec(options, "starting", OffsetSpec.earliest())
        ending = _offset_spec(options, "ending", OffsetSpec.latest())
        _check_batch_offsets(starting, ending)
    strategy = options.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError(
            "option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
            f"got {strategy!r}"
        )

    def optional_int(name: str, spark_name: str, minimum: int) -> int | None:
        return _integer(spark_name, options[name], minimum=minimum) if name in options else None

    min_partitions = optional_int("minpartitions", "minPartitions", 1)
    prefix = options.get("groupidprefix", "").strip()
    if prefix and "group.id" not in client:
        client["group.id"] = f"{prefix}-{uuid.uuid4()}"
    return ReadOptions(
        client=client,
        subscription=subscription,
        starting=starting,
        ending=ending,
        fail_on_data_loss=_boolean("failOnDataLoss", options.get("failondataloss", "true")),
        include_headers=_boolean("includeHeaders", options.get("includeheaders", "false")),
        timestamp_not_found_latest=strategy == "latest",
        max_offsets_per_trigger=optional_int("maxoffsetspertrigger", "maxOffsetsPerTrigger", 1),
        max_bytes_per_trigger=optional_int("maxbytespertrigger", "maxBytesPerTrigger", 1),
        min_offsets_per_trigger=optional_int("minoffsetspertrigger", "minOffsetsPerTrigger", 1),
        max_trigger_delay_ms=parse_duration_ms(
            "maxTriggerDelay", options.get("maxtriggerdelay", f"{DEFAULT_MAX_TRIGGER_DELAY_MS}ms")
        ),
        min_partitions=min_partitions,
        poll_timeout_ms=_integer(
            "kafkaConsumer.pollTimeoutMs",
            options.get("kafkaconsumer.polltimeoutms", str(DEFAULT_POLL_TIMEOUT_MS)),
            minimum=1,
        ),
        api_timeout_ms=_integer(
            "kafka.default.api.timeout.ms",
            own.get("default.api.timeout.ms", str(DEFAULT_API_TIMEOUT_MS)),
            minimum=1,
        ),
        fetch_records=_integer(
            "kafka.max.poll.records",
            own.get("max.poll.records", str(DEFAULT_FETCH_RECORDS)),
            minimum=1,
        ),
        commit_to_group=options.get("committogroup") or None,
    )


def _check_exactly_once(client: Mapping[str, str]) -> None:
    """Refuse producer settings a transactional sink cannot honour."""
    if "transactional.id" in client:
        raise OptionError(
            "Kafka option 'transactional.id' is not supported with exactlyOnce: the sink "
            "derives one per Spark partition (set 'transactionalIdPrefix' to choose its prefix)"
        )
    if client.get("enable.idempotence", "true").strip().lower() != "true":
        raise OptionError(
            "exactlyOnce needs an idempotent producer: drop 'kafka.enable.idempotence'"
        )
    if client.get("acks", "all").strip().lower() not in ("all", "-1"):
        raise OptionError("exactlyOnce needs 'kafka.acks' = all")


def parse_write_options(raw: Mapping[str, str]) -> WriteOptions:
    """The sink's options (batch or streaming)."""
    options = _lower(raw)
    client, own = _client_settings(options, refused=_SINK_REFUSED, consumer=False)
    exactly_once = _boolean("exactlyOnce", options.get("exactlyonce", "false"))
    if exactly_once:
        _check_exactly_once(client)
    if client.get("acks", "all").strip().lower() in ("all", "-1"):
        # Idempotent unless settings conflict, as Java producers since Kafka 3.2.
        client.setdefault("enable.idempotence", "true")
    topic = options.get("topic")
    prefix = options.get("transactionalidprefix", "").strip()
    if prefix and not exactly_once:
        log.warning("option 'transactionalIdPrefix' is ignored without exactlyOnce=true")
    return WriteOptions(
        client=client,
        topic=topic.strip() if topic and topic.strip() else None,
        api_timeout_ms=_integer(
            "kafka.default.api.timeout.ms",
            own.get("default.api.timeout.ms", str(DEFAULT_API_TIMEOUT_MS)),
            minimum=1,
        ),
        exactly_once=exactly_once,
        transactional_id_prefix=prefix or None,
        include_timestamp=_boolean("includeTimestamp", options.get("includetimestamp", "false")),
    )
