"""Topic settings -> the ``LogConfig`` storage obeys: one mapping, in one place.

A topic's effective settings are, highest precedence first, as in Kafka: the topic's own
overrides (``ConfigRecord``s of the topic), this broker's dynamic settings, the cluster-wide
dynamic broker defaults (both from ``ConfigRecord``s of broker resources), the static settings
(properties file, ``--override``) and Kafka's defaults. :func:`log_config_of` maps such a
:class:`~strom.config.TopicConfig` onto every field of :class:`~strom.storage.log_config.LogConfig`;
:class:`TopicConfigResolver` builds them from a metadata image and caches what it can.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from strom.config import ConfigError, ServerConfig, TopicConfig
from strom.metadata import ConfigurationsImage, MetadataImage
from strom.protocol.batch import Compression
from strom.storage.log_config import LogConfig

__all__ = [
    "TopicConfigResolver",
    "dynamic_broker_overrides",
    "effective_server_config",
    "log_config_of",
]

log = logging.getLogger(__name__)


def log_config_of(topic: TopicConfig) -> LogConfig:
    """The partition log settings of a topic's effective configuration (every field)."""
    return LogConfig(
        segment_bytes=_int(topic, "segment.bytes"),
        segment_ms=_int(topic, "segment.ms"),
        segment_jitter_ms=_int(topic, "segment.jitter.ms"),
        index_interval_bytes=_int(topic, "index.interval.bytes"),
        segment_index_bytes=_int(topic, "segment.index.bytes"),
        max_message_bytes=_int(topic, "max.message.bytes"),
        message_timestamp_type=_str(topic, "message.timestamp.type"),
        retention_ms=_int(topic, "retention.ms"),
        retention_bytes=_int(topic, "retention.bytes"),
        cleanup_policy=frozenset(_list(topic, "cleanup.policy")),
        delete_retention_ms=_int(topic, "delete.retention.ms"),
        min_compaction_lag_ms=_int(topic, "min.compaction.lag.ms"),
        max_compaction_lag_ms=_int(topic, "max.compaction.lag.ms"),
        min_cleanable_dirty_ratio=_float(topic, "min.cleanable.dirty.ratio"),
        flush_messages=_int(topic, "flush.messages"),
        flush_ms=_int(topic, "flush.ms"),
        file_delete_delay_ms=_int(topic, "file.delete.delay.ms"),
        preallocate=_bool(topic, "preallocate"),
        compression=_CODECS[_str(topic, "compression.type")],
    )


_CODECS: dict[str, Compression | None] = {
    "producer": None,
    "uncompressed": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}
"""``compression.type`` -> the codec the broker stores batches in (None: the producer's)."""


def _int(topic: TopicConfig, name: str) -> int:
    value = topic[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} is not an integer: {value!r}")
    return value


def _float(topic: TopicConfig, name: str) -> float:
    value = topic[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} is not a number: {value!r}")
    return float(value)


def _str(topic: TopicConfig, name: str) -> str:
    value = topic[name]
    if not isinstance(value, str):
        raise TypeError(f"{name} is not a string: {value!r}")
    return value


def _bool(topic: TopicConfig, name: str) -> bool:
    value = topic[name]
    if not isinstance(value, bool):
        raise TypeError(f"{name} is not a boolean: {value!r}")
    return value


def _list(topic: TopicConfig, name: str) -> tuple[str, ...]:
    value = topic[name]
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, tuple):
        raise TypeError(f"{name} is not a list: {value!r}")
    return value


def dynamic_broker_overrides(configs: ConfigurationsImage, node_id: int) -> dict[str, str]:
    """Dynamic broker settings that apply to this node: cluster defaults, then its own."""
    return {**configs.broker_configs(), **configs.broker_configs(node_id)}


def effective_server_config(
    static: ServerConfig, configs: ConfigurationsImage, node_id: int
) -> ServerConfig:
    """The static settings with this node's dynamic broker settings on top.

    The controller validated every dynamic value; one that no longer parses (a setting this
    version does not know) is skipped with a warning rather than stopping the broker.
    """
    overrides = dynamic_broker_overrides(configs, node_id)
    if not overrides:
        return static
    try:
        return static.with_overrides(overrides)
    except ConfigError:
        usable: dict[str, str] = {}
        for name, value in overrides.items():
            try:
                static.with_overrides({name: value})
            except ConfigError as error:
                log.warning("ignoring dynamic broker setting %s", error)
                continue
            usable[name] = value
        return static.with_overrides(usable)


class TopicConfigResolver:
    """Effective topic settings and log configs as of a metadata image.

    The effective server settings are rebuilt only when the image's configs change (a
    ``ConfigurationsImage`` is reused by images that did not change it).
    """

    def __init__(self, static: ServerConfig, *, node_id: int) -> None:
        self.static = static
        self.node_id = node_id
        self._cached_for: ConfigurationsImage | None = None
        self._server: ServerConfig = static

    def server_config(self, image: MetadataImage) -> ServerConfig:
        """Static settings plus the dynamic broker settings of ``image``."""
        if image.configs is not self._cached_for:
            self._server = effective_server_config(self.static, image.configs, self.node_id)
            self._cached_for = image.configs
        return self._server

    def topic_config(
        self, image: MetadataImage, topic: str, overrides: Mapping[str, str] | None = None
    ) -> TopicConfig:
        """The topic's settings; ``overrides`` replaces the image's (a topic being created)."""
        own = image.topic_configs(topic) if overrides is None else overrides
        return TopicConfig(self.server_config(image), own)

    def log_config(self, image: MetadataImage, topic: str) -> LogConfig:
        return log_config_of(self.topic_config(image, topic))

    def default_log_config(self) -> LogConfig:
        """A topic without overrides under the static settings (logs loaded before the
        metadata is)."""
        return log_config_of(TopicConfig(self.static, {}))
