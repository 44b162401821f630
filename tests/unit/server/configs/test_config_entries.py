"""DescribeConfigs' values, sources and synonyms, layer by layer."""

from __future__ import annotations

from strom.config import TOPIC_SETTINGS, ConfigType, ServerConfig
from strom.metadata import ConfigResource, ConfigurationsImage, MetadataImage
from strom.server.configs.config_entries import (
    ConfigDescriber,
    ConfigSource,
    ConfigSynonym,
    DescribedConfig,
)
from strom.server.configs.log_configs import TopicConfigResolver


def describer(**overrides: str) -> ConfigDescriber:
    static = ServerConfig({k.replace("_", "."): v for k, v in overrides.items()})
    return ConfigDescriber(TopicConfigResolver(static, node_id=1))


def image(resources: dict[ConfigResource, dict[str, str]] | None = None) -> MetadataImage:
    return MetadataImage(configs=ConfigurationsImage(resources or {}))


def by_name(entries: list[DescribedConfig]) -> dict[str, DescribedConfig]:
    return {entry.name: entry for entry in entries}


def test_topic_defaults() -> None:
    entries = by_name(describer().topic(image(), "t"))
    assert sorted(entries) == sorted(TOPIC_SETTINGS)
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source, segment.read_only) == (
        "1073741824",
        ConfigSource.DEFAULT_CONFIG,
        False,
    )
    assert segment.synonyms == (
        ConfigSynonym("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG),
    )
    assert segment.config_type is ConfigType.INT
    assert entries["cleanup.policy"].value == "delete"
    assert entries["cleanup.policy"].config_type is ConfigType.LIST
    assert entries["retention.ms"].value == "604800000"
    # no broker setting behind it: Kafka's default, no synonyms
    assert entries["segment.jitter.ms"].synonyms == ()
    assert entries["segment.jitter.ms"].source is ConfigSource.DEFAULT_CONFIG


def test_topic_value_from_every_layer() -> None:
    resources = {
        ConfigResource.topic("t"): {"cleanup.policy": "compact"},
        ConfigResource.broker(1): {"log.retention.bytes": "300"},
        ConfigResource.broker(): {"log.retention.bytes": "200", "log.index.interval.bytes": "9"},
    }
    entries = by_name(
        describer(log_retention_bytes="100", log_segment_bytes="4096").topic(image(resources), "t")
    )
    assert entries["cleanup.policy"].source is ConfigSource.TOPIC_CONFIG
    assert entries["cleanup.policy"].synonyms[0] == ConfigSynonym(
        "cleanup.policy", "compact", ConfigSource.TOPIC_CONFIG
    )
    retention = entries["retention.bytes"]
    assert (retention.value, retention.source) == ("300", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert [s.source for s in retention.synonyms] == [
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        ConfigSource.STATIC_BROKER_CONFIG,
        ConfigSource.DEFAULT_CONFIG,
    ]
    assert entries["index.interval.bytes"].source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert entries["segment.bytes"].source is ConfigSource.STATIC_BROKER_CONFIG
    assert entries["segment.bytes"].value == "4096"


def test_retention_ms_comes_from_hours_minutes_or_ms() -> None:
    entries = by_name(describer(log_retention_hours="24").topic(image(), "t"))
    retention = entries["retention.ms"]
    assert retention.value == "86400000"
    assert retention.source is ConfigSource.STATIC_BROKER_CONFIG
    assert retention.synonyms == (
        ConfigSynonym("log.retention.hours", "24", ConfigSource.STATIC_BROKER_CONFIG),
        ConfigSynonym("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG),
    )


def test_topic_being_created_and_selected_names() -> None:
    entries = describer().topic(
        image(),
        "new",
        overrides={"retention.ms": "5"},
        names=["retention.ms", "no.such", "segment.bytes"],
    )
    assert [(e.name, e.value, e.source) for e in entries] == [
        ("retention.ms", "5", ConfigSource.TOPIC_CONFIG),
        ("segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG),
    ]


def test_broker_settings() -> None:
    resources = {
        ConfigResource.broker(1): {"log.retention.ms": "1000"},
        ConfigResource.broker(): {"num.partitions": "3"},
    }
    entries = by_name(describer(log_retention_hours="2").broker(image(resources)))
    assert entries["node.id"].read_only
    assert not entries["num.partitions"].read_only
    assert (entries["num.partitions"].value, entries["num.partitions"].source) == (
        "3",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    ms = entries["log.retention.ms"]
    assert (ms.value, ms.source) == ("1000", ConfigSource.DYNAMIC_BROKER_CONFIG)
    hours = entries["log.retention.hours"]
    # Kafka: the synonyms listed before the setting's own name are dropped
    assert hours.synonyms == (
        ConfigSynonym("log.retention.hours", "2", ConfigSource.STATIC_BROKER_CONFIG),
        ConfigSynonym("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG),
    )
    assert entries["advertised.listeners"].value is None
    assert entries["advertised.listeners"].source is ConfigSource.DEFAULT_CONFIG


def test_cluster_wide_defaults_list_only_what_is_set() -> None:
    resources = {ConfigResource.broker(): {"num.partitions": "3", "log.retention.ms": "5"}}
    entries = describer(num_partitions="2").cluster_defaults(image(resources))
    assert [(e.name, e.value, e.source) for e in entries] == [
        ("log.retention.ms", "5", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("num.partitions", "3", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    ]
    assert all(
        s.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG for e in entries for s in e.synonyms
    )
