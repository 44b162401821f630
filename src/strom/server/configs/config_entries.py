"""Describing configs as Kafka's DescribeConfigs does: values, sources, synonyms, types, docs.

A setting's value comes from the first of these layers that has it, and each layer is a
``config_source`` of the protocol:

=============================  ==  ==========================================================
TOPIC_CONFIG                    1  the topic's override (topics only)
DYNAMIC_BROKER_CONFIG           2  a dynamic setting of this broker (``ConfigRecord``, id)
DYNAMIC_DEFAULT_BROKER_CONFIG   3  a dynamic cluster-wide broker default (``ConfigRecord``, "")
STATIC_BROKER_CONFIG            4  the properties file or ``--override``
DEFAULT_CONFIG                  5  Kafka's default
GROUP_CONFIG                    8  the group's override (groups only)
=============================  ==  ==========================================================

A group setting is the group's override, else (DEFAULT_CONFIG) the broker's value of the setting
it defaults to (``strom.config.group_config``), as Kafka's ``ConfigHelper`` describes a group.

The synonyms of a setting list, layer by layer, every broker setting it can come from (Kafka's
``ConfigHelper.configSynonyms``): a topic's ``retention.ms`` comes from ``log.retention.ms``,
``log.retention.minutes`` or ``log.retention.hours``. The first synonym is where the value comes
from, which is the entry's ``config_source``.

One deliberate difference: for a topic setting Kafka drops every synonym listed before the
first one named like the primary broker setting, so a topic's ``retention.ms`` under a static
``log.retention.hours=24`` reports DEFAULT_CONFIG and no synonyms (the value is right, the
source is not). strom keeps them: STATIC_BROKER_CONFIG with ``log.retention.hours`` as synonym.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from strom.config import (
    SERVER_SETTINGS,
    TOPIC_SETTINGS,
    ConfigType,
    ServerConfig,
    Setting,
    TopicConfig,
)
from strom.config.group_config import GROUP_SETTINGS, group_config
from strom.metadata import ConfigResource, MetadataImage
from strom.server.configs.log_configs import TopicConfigResolver

__all__ = [
    "BROKER_SYNONYMS",
    "TOPIC_SYNONYMS",
    "ConfigDescriber",
    "ConfigSource",
    "ConfigSynonym",
    "DescribedConfig",
]


class ConfigSource(enum.IntEnum):
    """DescribeConfigs' ``config_source`` ids (Kafka's ``DescribeConfigsResponse.ConfigSource``)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    GROUP_CONFIG = 8


_RETENTION: Final = ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
_ROLL: Final = ("log.roll.ms", "log.roll.hours")
_FLUSH: Final = ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")

BROKER_SYNONYMS: Final[Mapping[str, tuple[str, ...]]] = {
    **dict.fromkeys(_RETENTION, _RETENTION),
    **dict.fromkeys(_ROLL, _ROLL),
    "log.flush.interval.ms": _FLUSH,
}
"""Broker settings that are set through others (Kafka's ``brokerConfigSynonyms``); any other
setting's only synonym is itself."""


def _topic_synonyms() -> dict[str, tuple[str, ...]]:
    synonyms: dict[str, tuple[str, ...]] = {
        name: (setting.server_default,)
        for name, setting in TOPIC_SETTINGS.items()
        if setting.server_default is not None
    }
    synonyms.update({"retention.ms": _RETENTION, "segment.ms": _ROLL, "flush.ms": _FLUSH})
    return synonyms


TOPIC_SYNONYMS: Final[Mapping[str, tuple[str, ...]]] = _topic_synonyms()
"""Topic setting -> the broker settings its default comes from, the primary one first (Kafka's
``ServerTopicConfigSynonyms``); topic settings without one default to Kafka's value."""


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class DescribedConfig:
    """One entry of a DescribeConfigs result (and of CreateTopics v5+ results)."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    is_sensitive: bool
    synonyms: tuple[ConfigSynonym, ...]
    """Every synonym; the handler leaves them out unless the client asked for them."""
    config_type: ConfigType
    documentation: str


@dataclass(frozen=True)
class _BrokerLayers:
    """The broker-setting layers below the topic's own, as strings by setting name."""

    dynamic_broker: Mapping[str, str]
    dynamic_default: Mapping[str, str]
    static: Mapping[str, str]
    defaults: Mapping[str, str]

    def synonyms(self, names: Iterable[str]) -> list[ConfigSynonym]:
        """Layer by layer, each of ``names`` that the layer has (Kafka's order)."""
        names = tuple(names)
        found: list[ConfigSynonym] = []
        for layer, source in (
            (self.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (self.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (self.static, ConfigSource.STATIC_BROKER_CONFIG),
            (self.defaults, ConfigSource.DEFAULT_CONFIG),
        ):
            found.extend(
                ConfigSynonym(name, layer[name], source) for name in names if name in layer
            )
        return found


def _render_defaults() -> dict[str, str]:
    rendered = {name: setting.render(setting.default) for name, setting in SERVER_SETTINGS.items()}
    return {name: value for name, value in rendered.items() if value is not None}


_DEFAULTS: Final = _render_defaults()


class ConfigDescriber:
    """Describes topic, broker and group configs as of a metadata image."""

    def __init__(self, resolver: TopicConfigResolver) -> None:
        self._resolver = resolver
        self._static = static_server_values(resolver.static)

    @property
    def node_id(self) -> int:
        return self._resolver.node_id

    def _layers(self, image: MetadataImage) -> _BrokerLayers:
        return _BrokerLayers(
            dynamic_broker=image.configs.broker_configs(self.node_id),
            dynamic_default=image.configs.broker_configs(),
            static=self._static,
            defaults=_DEFAULTS,
        )

    def topic(
        self,
        image: MetadataImage,
        topic: str,
        *,
        overrides: Mapping[str, str] | None = None,
        names: Sequence[str] | None = None,
    ) -> list[DescribedConfig]:
        """Every topic setting (or those of ``names`` that exist), sorted by name.

        ``overrides`` stands for the topic's own settings when it is not in the image yet.
        """
        config = self._resolver.topic_config(image, topic, overrides)
        layers = self._layers(image)
        return [
            self._topic_entry(name, TOPIC_SETTINGS[name], config, layers)
            for name in _select(TOPIC_SETTINGS, names)
        ]

    def _topic_entry(
        self, name: str, setting: Setting, config: TopicConfig, layers: _BrokerLayers
    ) -> DescribedConfig:
        sensitive = setting.type is ConfigType.PASSWORD
        value = None if sensitive else setting.render(config[name])
        synonyms = layers.synonyms(TOPIC_SYNONYMS.get(name, ()))
        if name in config.overrides:
            synonyms.insert(0, ConfigSynonym(name, value, ConfigSource.TOPIC_CONFIG))
        return DescribedConfig(
            name=name,
            value=value,
            source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
            read_only=False,
            is_sensitive=sensitive,
            synonyms=tuple(synonyms),
            config_type=setting.type,
            documentation=setting.doc,
        )

    def broker(
        self, image: MetadataImage, *, names: Sequence[str] | None = None
    ) -> list[DescribedConfig]:
        """This broker's settings: every one (or those of ``names``), sorted by name."""
        effective = self._resolver.server_config(image)
        layers = self._layers(image)
        entries: list[DescribedConfig] = []
        for name in _select(SERVER_SETTINGS, names):
            setting = SERVER_SETTINGS[name]
            synonyms = layers.synonyms(BROKER_SYNONYMS.get(name, (name,)))
            # Kafka: drop what comes before the setting's own name (its other spellings).
            while synonyms and synonyms[0].name != name:
                synonyms.pop(0)
            entries.append(self._broker_entry(setting, setting.render(effective[name]), synonyms))
        return entries

    def cluster_defaults(
        self, image: MetadataImage, *, names: Sequence[str] | None = None
    ) -> list[DescribedConfig]:
        """The cluster-wide dynamic broker defaults (the broker resource named "")."""
        dynamic = image.configs.broker_configs()
        layers = self._layers(image)
        entries: list[DescribedConfig] = []
        for name in _select(dynamic, names):
            setting = SERVER_SETTINGS.get(name)
            if setting is None:
                continue
            synonyms = [
                synonym
                for synonym in layers.synonyms(BROKER_SYNONYMS.get(name, (name,)))
                if synonym.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            ]
            entries.append(self._broker_entry(setting, dynamic[name], synonyms))
        return entries

    def group(
        self, image: MetadataImage, group_id: str, *, names: Sequence[str] | None = None
    ) -> list[DescribedConfig]:
        """Every group setting of ``group_id`` (or those of ``names``), sorted by name."""
        overrides = image.configs.configs(ConfigResource.group(group_id))
        values = group_config(self._resolver.server_config(image), overrides)
        entries: list[DescribedConfig] = []
        for name in _select(GROUP_SETTINGS, names):
            setting = GROUP_SETTINGS[name]
            value = setting.render(values[name])
            synonyms = (
                (ConfigSynonym(name, value, ConfigSource.GROUP_CONFIG),)
                if name in overrides
                else ()
            )
            entries.append(
                DescribedConfig(
                    name=name,
                    value=value,
                    source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                    read_only=False,
                    is_sensitive=False,
                    synonyms=synonyms,
                    config_type=setting.type,
                    documentation=setting.doc,
                )
            )
        return entries

    @staticmethod
    def _broker_entry(
        setting: Setting, value: str | None, synonyms: list[ConfigSynonym]
    ) -> DescribedConfig:
        sensitive = setting.type is ConfigType.PASSWORD
        return DescribedConfig(
            name=setting.name,
            value=None if sensitive else value,
            source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
            read_only=setting.read_only,
            is_sensitive=sensitive,
            synonyms=tuple(synonyms),
            config_type=setting.type,
            documentation=setting.doc,
        )


def _select(available: Mapping[str, object], names: Sequence[str] | None) -> list[str]:
    """``names`` that exist (all of them when None or empty, as Kafka), sorted."""
    if not names:
        return sorted(available)
    return sorted({name for name in names if name in available})


def static_server_values(config: ServerConfig) -> dict[str, str]:
    """The explicitly set settings of ``config`` as DescribeConfigs prints them."""
    return {
        name: rendered
        for name, setting in SERVER_SETTINGS.items()
        if config.is_explicit(name) and (rendered := setting.render(config[name])) is not None
    }
