"""What the setting tables share: Kafka's config types by name, ``ms`` and ``by_name``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from strom.config.setting import ConfigType, Setting, at_least

__all__ = [
    "BOOLEAN",
    "DOUBLE",
    "INT",
    "LIST",
    "LONG",
    "SHORT",
    "STRING",
    "by_name",
    "ms",
]

BOOLEAN, STRING, SHORT, INT, LONG, DOUBLE, LIST = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.SHORT,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)


def ms(name: str, default: int, doc: str, *, read_only: bool = True) -> Setting:
    """A non-negative INT setting in milliseconds."""
    return Setting(name, INT, default, doc, at_least(0), read_only=read_only)


_SettingT = TypeVar("_SettingT", bound=Setting)


def by_name(items: Iterable[_SettingT]) -> Mapping[str, _SettingT]:
    return {item.name: item for item in items}
