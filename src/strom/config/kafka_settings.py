"""Apache Kafka 4.0's broker and topic settings, as facts: name, type, default, validator, and
whether a broker setting can change at runtime.

``kafka_settings.json`` holds them, one per line, as Kafka renders them in DescribeConfigs. It
was generated from Kafka's ConfigDef definitions (``AbstractKafkaConfig.CONFIG_DEF`` for brokers,
``LogConfig`` for topics) without ZooKeeper's settings and Kafka's internal ones, and then
brought to 4.0's final values (KIP-1030's defaults and bounds; ``message.format.version``,
``message.timestamp.difference.max.ms`` and ``message.downconversion.enable`` removed).

``strom.config`` defines the settings strom acts on, with its own defaults where they differ
(a data directory under the working directory, say); every other setting here is known so that
clients can describe and set it as on Kafka, recorded but not acted on (docs/broker.md).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

from strom.config.setting import (
    ConfigType,
    Setting,
    TopicSetting,
    Validator,
    Value,
    at_least,
    between,
    non_empty,
    one_of,
)

__all__ = ["KAFKA_SETTINGS", "KafkaSettings"]


@dataclass(frozen=True)
class KafkaSettings:
    broker: Mapping[str, Setting]
    topic: Mapping[str, TopicSetting]
    """Each topic setting's default is its own; ``server_default`` names the broker setting
    that supplies it on a broker."""


_RECORDED: Final = "Kafka's setting; strom records it and does not act on it."


def _gzip_level(value: Value) -> str | None:
    if value is None or value == -1 or (isinstance(value, int) and 1 <= value <= 9):
        return None
    return f"must be -1 or between 1 and 9, got {value}"


def _validator(valid: Mapping[str, Any] | None) -> Validator | None:
    """Kafka's validator of a catalog entry (a free-form ``other`` one is not checked)."""
    if valid is None:
        return None
    if "in" in valid:
        return one_of(*valid["in"])
    if "nonempty" in valid:
        return non_empty()
    if "min" in valid:
        low, high = valid["min"], valid["max"]
        if high is None:
            return at_least(low) if low is not None else None
        return between(low if low is not None else float("-inf"), high)
    if valid.get("other") == "integer in [1,...,9] or -1":
        return _gzip_level
    return None


def _setting(entry: Mapping[str, Any]) -> Setting:
    mode = entry.get("mode")
    unparsed = Setting(
        entry["name"],
        ConfigType[entry["type"]],
        None,
        _RECORDED,
        _validator(entry["valid"]),
        read_only=mode == "read-only",
        per_broker=mode == "per-broker",
    )
    default = entry["default"]
    return dataclasses.replace(
        unparsed, default=None if default is None else unparsed.parse(default)
    )


def _load() -> KafkaSettings:
    catalog_file = resources.files("strom.config").joinpath("kafka_settings.json")
    catalog = json.loads(catalog_file.read_text(encoding="utf-8"))
    broker = {entry["name"]: _setting(entry) for entry in catalog["broker"]}
    topic = {}
    for entry in catalog["topic"]:
        plain = _setting(entry)
        topic[plain.name] = TopicSetting(
            plain.name,
            plain.type,
            plain.default,
            plain.doc,
            plain.validator,
            server_default=entry.get("server_default"),
        )
    return KafkaSettings(broker, topic)


KAFKA_SETTINGS: Final = _load()
