"""What a setting is: Kafka's config types, values, validators, and ``Setting`` itself.

The setting tables of ``strom.config`` define the settings strom acts on;
``strom.config.kafka_settings`` the rest of Apache Kafka's catalog. Both build on this module.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "INT_MAX",
    "LONG_MAX",
    "ConfigError",
    "ConfigType",
    "Setting",
    "TopicSetting",
    "Validator",
    "Value",
    "at_least",
    "between",
    "non_empty",
    "one_of",
]

Value = bool | int | float | str | tuple[str, ...] | None

LONG_MAX: Final = 2**63 - 1
INT_MAX: Final = 2**31 - 1


class ConfigError(ValueError):
    """An unknown setting or an invalid value; the message names the setting."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason

    @classmethod
    def of_all(cls, errors: Sequence[ConfigError]) -> ConfigError:
        """One error naming every setting of ``errors`` (the error itself when alone)."""
        if len(errors) == 1:
            return errors[0]
        error = cls(", ".join(e.name for e in errors), "; ".join(e.reason for e in errors))
        error.args = ("; ".join(str(e) for e in errors),)
        return error


class ConfigType(enum.IntEnum):
    """Kafka's config types, numbered as DescribeConfigs reports them."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


Validator = Callable[[Value], str | None]
"""Returns None when the value is valid, otherwise why it is not."""


def at_least(minimum: float) -> Validator:
    def check(value: Value) -> str | None:
        if value is None or (isinstance(value, int | float) and value >= minimum):
            return None
        return f"must be at least {minimum:g}, got {value}"

    return check


def between(low: float, high: float) -> Validator:
    def check(value: Value) -> str | None:
        if value is None or (isinstance(value, int | float) and low <= value <= high):
            return None
        return f"must be between {low:g} and {high:g}, got {value}"

    return check


def one_of(*choices: str) -> Validator:
    def check(value: Value) -> str | None:
        items = value if isinstance(value, tuple) else (value,)
        bad = [item for item in items if item not in choices]
        if not bad:
            return None
        return f"{bad[0]!r} is not one of {', '.join(choices)}"

    return check


def non_empty() -> Validator:
    def check(value: Value) -> str | None:
        if value is None or value not in ("", ()):
            return None
        return "must not be empty"

    return check


_RANGES: Final[Mapping[ConfigType, tuple[int, int]]] = {
    ConfigType.SHORT: (-(2**15), 2**15 - 1),
    ConfigType.INT: (-(2**31), INT_MAX),
    ConfigType.LONG: (-(2**63), LONG_MAX),
}


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    type: ConfigType
    default: Value
    doc: str
    validator: Validator | None = None
    read_only: bool = False
    """Server settings that cannot change without a restart."""
    per_broker: bool = False
    """Kafka's update mode ``per-broker``: set for one broker, never cluster-wide."""

    def parse(self, raw: str | Value) -> Value:
        """Turn a raw string (or an already typed value) into this setting's typed value."""
        value = self._convert(raw)
        if self.validator is not None:
            reason = self.validator(value)
            if reason is not None:
                raise ConfigError(self.name, reason)
        return value

    def _convert(self, raw: str | Value) -> Value:
        if not isinstance(raw, str):
            return raw
        text = raw.strip()
        if self.type in (ConfigType.STRING, ConfigType.CLASS, ConfigType.PASSWORD):
            return text
        if self.type is ConfigType.LIST:
            return tuple(item.strip() for item in text.split(",") if item.strip())
        if text == "" or text.lower() == "null":
            if self.default is None:
                return None
            raise ConfigError(self.name, "a value is required")
        if self.type is ConfigType.BOOLEAN:
            if text.lower() in ("true", "false"):
                return text.lower() == "true"
            raise ConfigError(self.name, f"expected true or false, got {text!r}")
        if self.type is ConfigType.DOUBLE:
            try:
                return float(text)
            except ValueError:
                raise ConfigError(self.name, f"expected a number, got {text!r}") from None
        try:
            number = int(text)
        except ValueError:
            raise ConfigError(self.name, f"expected an integer, got {text!r}") from None
        low, high = _RANGES[self.type]
        if not low <= number <= high:
            raise ConfigError(self.name, f"{number} is out of range for a {self.type.name}")
        return number

    def render(self, value: Value) -> str | None:
        """The value as Kafka prints it in DescribeConfigs."""
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, tuple):
            return ",".join(value)
        return str(value)


@dataclass(frozen=True, slots=True)
class TopicSetting(Setting):
    server_default: str | None = None
    """The server setting whose value is this topic setting's default."""
