"""Group configs: the settings one group may override (ConfigResource type GROUP, Kafka 4.0's
``GroupConfig`` for KIP-848 consumer groups and KIP-932 share groups).

Each group setting takes its default from a broker setting (``consumer.session.timeout.ms``
from ``group.consumer.session.timeout.ms``) and must lie within the broker's bounds for it
(``group.consumer.min.session.timeout.ms`` .. ``group.consumer.max.session.timeout.ms``); a
session timeout must exceed its heartbeat interval. :func:`validate_group_configs` checks a
group's whole set of overrides over the broker's values, as Kafka's ``GroupConfig.validate``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from strom.config.server_config import ServerConfig
from strom.config.setting import ConfigError, Setting, Value, at_least, one_of
from strom.config.shorthands import INT, STRING

__all__ = ["GROUP_SETTINGS", "GroupSetting", "group_config", "validate_group_configs"]


@dataclass(frozen=True, slots=True)
class GroupSetting(Setting):
    server_default: str = ""
    """The broker setting whose value is this group setting's default."""
    bounds: tuple[str, str] | None = None
    """The broker settings that bound it: (smallest, largest)."""


def _timing(name: str, family: str, what: str, doc: str, minimum: int = 1) -> GroupSetting:
    return GroupSetting(
        name,
        INT,
        None,
        doc,
        at_least(minimum),
        server_default=f"group.{family}.{what}",
        bounds=(f"group.{family}.min.{what}", f"group.{family}.max.{what}"),
    )


GROUP_SETTINGS: Final[Mapping[str, GroupSetting]] = {
    setting.name: setting
    for setting in (
        _timing(
            "consumer.session.timeout.ms",
            "consumer",
            "session.timeout.ms",
            "A consumer group member is removed when it sends no heartbeat for this long.",
        ),
        _timing(
            "consumer.heartbeat.interval.ms",
            "consumer",
            "heartbeat.interval.ms",
            "How often consumer group members heartbeat.",
        ),
        _timing(
            "share.session.timeout.ms",
            "share",
            "session.timeout.ms",
            "A share group member is removed when it sends no heartbeat for this long.",
        ),
        _timing(
            "share.heartbeat.interval.ms",
            "share",
            "heartbeat.interval.ms",
            "How often share group members heartbeat.",
        ),
        _timing(
            "share.record.lock.duration.ms",
            "share",
            "record.lock.duration.ms",
            "How long a share group member holds the records it was given.",
            minimum=1000,
        ),
        GroupSetting(
            "share.auto.offset.reset",
            STRING,
            "latest",
            "Where a share group starts reading a partition.",
            one_of("latest", "earliest"),
        ),
    )
}
"""Kafka 4.0's group settings, by name."""

_LONGER: Final = (
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
)


def group_config(server: ServerConfig, overrides: Mapping[str, str]) -> dict[str, Value]:
    """Every group setting's value for a group with ``overrides`` (assumed valid): its own, else
    the broker's."""
    values: dict[str, Value] = {}
    for name, setting in GROUP_SETTINGS.items():
        if name in overrides:
            values[name] = setting.parse(overrides[name])
        elif setting.server_default:
            values[name] = server[setting.server_default]
        else:
            values[name] = setting.default
    return values


def validate_group_configs(configs: Mapping[str, str], server: ServerConfig) -> None:
    """Raise ConfigError unless ``configs`` (a group's overrides) are known group settings with
    valid values, within the broker's bounds, each session timeout above its heartbeat."""
    for name, raw in configs.items():
        setting = GROUP_SETTINGS.get(name)
        if setting is None:
            raise ConfigError(name, "unknown group config name")
        setting.parse(raw)
    timings = {
        name: value
        for name, value in group_config(server, configs).items()
        if isinstance(value, int)
    }
    for name, value in timings.items():
        bounds = GROUP_SETTINGS[name].bounds
        if bounds is None:
            continue
        low, high = bounds
        if value < server.get_int(low):
            raise ConfigError(name, f"must be greater than or equal to {low} ({server[low]})")
        if value > server.get_int(high):
            raise ConfigError(name, f"must be less than or equal to {high} ({server[high]})")
    for longer, shorter in _LONGER:
        if timings[longer] <= timings[shorter]:
            raise ConfigError(longer, f"must be greater than {shorter}")
