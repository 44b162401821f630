"""Server settings from the command line: a properties file, ``--override``s and shortcuts."""

from __future__ import annotations

from pathlib import Path

from strom.config import ConfigError, ServerConfig, load_properties
from strom.server.network.listener import HostPort

__all__ = ["build_config"]


def build_config(
    *,
    properties_file: Path | None,
    overrides: tuple[str, ...],
    data_dir: Path | None,
    listener: str | None,
) -> ServerConfig:
    """Merge the sources of settings into a validated ``ServerConfig`` (raises ConfigError)."""
    values: dict[str, str] = {}
    if properties_file is not None:
        values.update(load_properties(properties_file))
    for override in overrides:
        name, sep, value = override.partition("=")
        if not sep or not name.strip():
            raise ConfigError("--override", f"expected name=value, got {override!r}")
        values[name.strip()] = value.strip()
    if data_dir is not None:
        values["log.dirs"] = str(data_dir)
    if listener is not None:
        try:
            address = HostPort.parse(listener)
        except ValueError as error:
            raise ConfigError("--listener", str(error)) from None
        values["listeners"] = f"PLAINTEXT://{address}"
    return ServerConfig(values)
