"""Server settings from the command line: a properties file, ``--override``s and shortcuts."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from strom.config import ConfigError, ServerConfig, load_properties, unknown_settings
from strom.security.jaas import LOGIN_CONFIG, login_config_from_jvm_options
from strom.server.configs.node_config import HostPort

__all__ = ["REGISTRY_PREFIX", "build_config", "registry_section"]

log = logging.getLogger("strom.config")

REGISTRY_PREFIX = "registry."
"""Settings under this prefix run a schema registry beside the node (``strom server``)."""


def _values(properties_file: Path | None, overrides: tuple[str, ...]) -> dict[str, str]:
    values: dict[str, str] = {}
    if properties_file is not None:
        values.update(load_properties(properties_file))
    for override in overrides:
        name, sep, value = override.partition("=")
        if not sep or not name.strip():
            raise ConfigError("--override", f"expected name=value, got {override!r}")
        values[name.strip()] = value.strip()
    return values


def registry_section(*, properties_file: Path | None, overrides: tuple[str, ...]) -> dict[str, str]:
    """The ``registry.*`` settings without their prefix (empty: no registry)."""
    return {
        name.removeprefix(REGISTRY_PREFIX): value
        for name, value in _values(properties_file, overrides).items()
        if name.startswith(REGISTRY_PREFIX)
    }


def build_config(
    *,
    properties_file: Path | None,
    overrides: tuple[str, ...],
    data_dir: Path | None,
    listener: str | None,
    environ: Mapping[str, str] = os.environ,
) -> ServerConfig:
    """Merge the sources of settings into a validated ``ServerConfig`` (raises ConfigError,
    naming every invalid value); the ``registry.*`` section is not the node's. Unknown names
    are left out with one warning naming them all, as Kafka warns about them and starts.
    Without a ``java.security.auth.login.config`` setting, the JAAS file is the
    ``-Djava.security.auth.login.config=`` of ``$KAFKA_OPTS``, as Kafka's start script hands
    it to the JVM."""
    values = {
        name: value
        for name, value in _values(properties_file, overrides).items()
        if not name.startswith(REGISTRY_PREFIX)
    }
    if LOGIN_CONFIG not in values:
        jaas_file = login_config_from_jvm_options(environ.get("KAFKA_OPTS", ""))
        if jaas_file:
            values[LOGIN_CONFIG] = jaas_file
    if data_dir is not None:
        values["log.dirs"] = str(data_dir)
    if listener is not None:
        try:
            address = HostPort.parse(listener)
        except ValueError as error:
            raise ConfigError("--listener", str(error)) from None
        values["listeners"] = f"PLAINTEXT://{address}"
    unknown = unknown_settings(values)
    if unknown:
        log.warning(
            "ignoring unknown setting(s), as Kafka does: %s",
            ", ".join(
                name if typo_of is None else f"{name} (did you mean {typo_of}?)"
                for name, typo_of in unknown.items()
            ),
        )
    return ServerConfig({name: v for name, v in values.items() if name not in unknown})
