"""A topic's effective settings, and the validation of a topic's own."""

from __future__ import annotations

from collections.abc import Mapping

from strom.config.server_config import ServerConfig
from strom.config.setting import ConfigError, Value
from strom.config.topic_settings import TOPIC_SETTINGS

__all__ = ["TopicConfig", "validate_topic_configs"]


class TopicConfig:
    """A topic's effective settings: its own overrides over the server's defaults."""

    def __init__(self, server: ServerConfig, overrides: Mapping[str, str | Value]) -> None:
        self.overrides: dict[str, Value] = validate_topic_configs(overrides)
        self._server = server

    def __getitem__(self, name: str) -> Value:
        if name in self.overrides:
            return self.overrides[name]
        return self._server.topic_default(name)

    def get_int(self, name: str) -> int:
        value = self[name]
        assert isinstance(value, int), name
        return value

    def source(self, name: str) -> str:
        """Where the value comes from: topic, static (server file/override) or default."""
        if name in self.overrides:
            return "topic"
        setting = TOPIC_SETTINGS[name]
        if setting.server_default and self._server.is_explicit(setting.server_default):
            return "static"
        return "default"


def validate_topic_configs(configs: Mapping[str, str | Value]) -> dict[str, Value]:
    """Parse topic settings; raises ConfigError on an unknown name or an invalid value."""
    parsed: dict[str, Value] = {}
    for name, raw in configs.items():
        setting = TOPIC_SETTINGS.get(name)
        if setting is None:
            raise ConfigError(name, "unknown topic setting")
        parsed[name] = setting.parse(raw)
    return parsed
