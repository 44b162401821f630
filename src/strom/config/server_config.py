"""A node's validated server settings, ``listener.name.<listener>.`` overrides included."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Final

from strom.config.replication import BALANCER_ALIASES
from strom.config.server_settings import SERVER_SETTINGS
from strom.config.setting import LONG_MAX, ConfigError, Setting, Value
from strom.config.topic_settings import TOPIC_SETTINGS

__all__ = ["ServerConfig", "unknown_settings"]

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


def unknown_settings(names: Iterable[str]) -> dict[str, str | None]:
    """Each name that is neither a server setting nor a listener's override of one, with the
    setting it is likely a typo of (or None)."""
    unknown = [
        n
        for n in names
        if n not in SERVER_SETTINGS and n not in BALANCER_ALIASES and _listener_prefixed(n) is None
    ]
    if not unknown:
        return {}
    import difflib  # noqa: PLC0415 - only for a name that is no setting

    return {
        name: next(iter(difflib.get_close_matches(name, SERVER_SETTINGS, n=1, cutoff=0.85)), None)
        for name in unknown
    }


class ServerConfig:
    """Validated server settings; unknown names and invalid values are refused up front, all
    named in one ``ConfigError`` (``unknown_settings`` finds the names to leave out first).

    ``listener.name.<listener>.<setting>`` (lower-case listener name) overrides a setting for one
    listener; ``for_listener`` reads it with the fallback to the plain setting. Confluent's
    ``confluent.balancer.*`` names (``BALANCER_ALIASES``) set their ``strom.balancer.*`` settings;
    both names of one setting with different values are refused.
    """

    def __init__(self, overrides: Mapping[str, str | Value] | None = None) -> None:
        values: dict[str, Value] = {name: s.default for name, s in SERVER_SETTINGS.items()}
        explicit: set[str] = set()
        errors: list[ConfigError] = []
        given = dict(overrides or {})
        for alias, name in BALANCER_ALIASES.items():
            if alias not in given:
                continue
            raw = given.pop(alias)
            if name in given and given[name] != raw:
                errors.append(ConfigError(alias, f"is {name}: set one of the two"))
            given[name] = raw
        for name, raw in given.items():
            setting = SERVER_SETTINGS.get(name) or _listener_prefixed(name)
            try:
                if setting is None:
                    raise ConfigError(name, "unknown setting")
                values[name] = setting.parse(raw)
            except ConfigError as error:
                errors.append(error)
            explicit.add(name)
        if errors:
            raise ConfigError.of_all(errors)
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
