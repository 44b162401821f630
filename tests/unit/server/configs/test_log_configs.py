"""Topic settings -> LogConfig: every field mapped, precedence of the layers."""

from __future__ import annotations

import dataclasses

from strom.config import ServerConfig, TopicConfig
from strom.metadata import ConfigResource, ConfigurationsImage, MetadataImage
from strom.protocol.batch import Compression
from strom.server.configs.log_configs import (
    TopicConfigResolver,
    dynamic_broker_overrides,
    effective_server_config,
    log_config_of,
)
from strom.storage.log_config import LogConfig

EVERY_SETTING_CHANGED = {
    "segment.bytes": "2048",
    "segment.ms": "1000",
    "segment.jitter.ms": "10",
    "index.interval.bytes": "100",
    "segment.index.bytes": "4096",
    "max.message.bytes": "5000",
    "message.timestamp.type": "LogAppendTime",
    "retention.ms": "60000",
    "retention.bytes": "123456",
    "cleanup.policy": "compact,delete",
    "delete.retention.ms": "5",
    "min.compaction.lag.ms": "6",
    "max.compaction.lag.ms": "7",
    "min.cleanable.dirty.ratio": "0.25",
    "flush.messages": "8",
    "flush.ms": "9",
    "file.delete.delay.ms": "11",
    "preallocate": "true",
    "compression.type": "zstd",
}


def test_kafka_defaults_give_storage_defaults() -> None:
    assert log_config_of(TopicConfig(ServerConfig(), {})) == LogConfig()


def test_every_log_config_field_comes_from_its_topic_setting() -> None:
    config = log_config_of(TopicConfig(ServerConfig(), EVERY_SETTING_CHANGED))
    default = LogConfig()
    unchanged = [
        field.name
        for field in dataclasses.fields(LogConfig)
        if getattr(config, field.name) == getattr(default, field.name)
    ]
    assert unchanged == []
    assert config.cleanup_policy == frozenset({"compact", "delete"})
    assert config.min_cleanable_dirty_ratio == 0.25
    assert config.log_append_time
    assert config.preallocate
    assert config.compression == Compression.ZSTD


def test_server_settings_are_topic_defaults() -> None:
    server = ServerConfig(
        {"log.retention.hours": "1", "log.roll.ms": "5000", "log.segment.bytes": "4096"}
    )
    config = log_config_of(TopicConfig(server, {"segment.bytes": "8192"}))
    assert config.retention_ms == 3_600_000
    assert config.segment_ms == 5000
    assert config.segment_bytes == 8192


def _image(**resources: dict[str, str]) -> MetadataImage:
    configs = {
        ConfigResource.broker(None if name == "default" else int(name[1:])): values
        for name, values in resources.items()
    }
    return MetadataImage(configs=ConfigurationsImage(configs))


def test_dynamic_broker_settings_layer_over_static_ones() -> None:
    static = ServerConfig({"log.retention.bytes": "100", "log.segment.bytes": "4096"})
    image = _image(
        default={"log.retention.bytes": "200", "log.index.interval.bytes": "7"},
        b1={"log.retention.bytes": "300"},
        b2={"log.segment.bytes": "9999"},
    )
    assert dynamic_broker_overrides(image.configs, 1) == {
        "log.retention.bytes": "300",
        "log.index.interval.bytes": "7",
    }
    effective = effective_server_config(static, image.configs, 1)
    assert effective["log.retention.bytes"] == 300
    assert effective["log.index.interval.bytes"] == 7
    assert effective["log.segment.bytes"] == 4096  # broker 2's setting is not ours
    assert effective_server_config(static, ConfigurationsImage(), 1) is static


def test_an_unparsable_dynamic_setting_is_skipped() -> None:
    image = _image(default={"log.retention.bytes": "300", "no.such.setting": "1"})
    effective = effective_server_config(ServerConfig(), image.configs, 1)
    assert effective["log.retention.bytes"] == 300


def test_resolver_applies_topic_overrides_over_dynamic_broker_settings() -> None:
    resolver = TopicConfigResolver(ServerConfig(), node_id=1)
    image = MetadataImage(
        configs=ConfigurationsImage(
            {
                ConfigResource.broker(1): {"log.retention.ms": "1000", "log.segment.bytes": "5000"},
                ConfigResource.topic("orders"): {"retention.ms": "2000"},
            }
        )
    )
    assert resolver.log_config(image, "orders").retention_ms == 2000
    assert resolver.log_config(image, "orders").segment_bytes == 5000
    assert resolver.log_config(image, "other").retention_ms == 1000
    assert resolver.server_config(image) is resolver.server_config(image)  # cached
    config = resolver.topic_config(image, "new", {"retention.ms": "3"})
    assert config["retention.ms"] == 3
    assert resolver.default_log_config() == LogConfig()
