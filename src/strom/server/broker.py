"""The broker: the composition root that wires settings, the data directory, handlers and network.

Today it owns the handler registry (ApiVersions) and the listener. The storage engine
(``strom.storage``), the metadata log and image (``strom.metadata``, ``strom.controller``) and the
replica manager are created here as they arrive, and handed to the handlers that need them; no
other module wires things together.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from strom.config import ConfigError, ServerConfig
from strom.server.handlers.api_versions import ApiVersionsHandler
from strom.server.handlers.registry import HandlerRegistry
from strom.server.meta_properties import MetaProperties, ensure_meta_properties
from strom.server.network.connection import ConnectionSettings
from strom.server.network.listener import HostPort, Listener

__all__ = ["Broker", "parse_listeners"]

log = logging.getLogger(__name__)


def parse_listeners(text: str) -> HostPort:
    """The address of Kafka's ``listeners`` setting (``PLAINTEXT://host:port``); one for now."""
    entries = [entry.strip() for entry in text.split(",") if entry.strip()]
    if len(entries) != 1:
        raise ConfigError("listeners", f"strom serves exactly one listener, got {text!r}")
    scheme, sep, address = entries[0].rpartition("://")
    if sep and scheme.upper() != "PLAINTEXT":
        raise ConfigError("listeners", f"only PLAINTEXT listeners are supported, got {scheme}")
    try:
        return HostPort.parse(address)
    except ValueError as error:
        raise ConfigError("listeners", str(error)) from None


def data_dir_of(config: ServerConfig) -> Path:
    """The single data directory of Kafka's ``log.dirs`` setting."""
    text = config.get_str("log.dirs").strip()
    if not text or "," in text:
        raise ConfigError("log.dirs", f"strom uses exactly one data directory, got {text!r}")
    return Path(text)


class Broker:
    """A single node: broker and (later) controller of a one-voter cluster."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.data_dir = data_dir_of(config).absolute()
        self.listener_address = parse_listeners(config.get_str("listeners"))
        self.node_id = config.get_int("node.id")
        self.registry = HandlerRegistry()
        self.registry.register(ApiVersionsHandler(self.registry))
        self._listener: Listener | None = None
        self._meta: MetaProperties | None = None

    @property
    def cluster_id(self) -> str:
        if self._meta is None:
            raise RuntimeError("the broker is not started")
        return self._meta.cluster_id

    @property
    def bound_address(self) -> HostPort:
        """Where the listener is bound (the real port when the configured one is 0)."""
        if self._listener is None:
            raise RuntimeError("the broker is not started")
        return self._listener.bound_address

    @property
    def advertised_address(self) -> HostPort:
        if self._listener is None:
            raise RuntimeError("the broker is not started")
        return self._listener.advertised_address

    async def start(self) -> None:
        """Check or create the data directory, start serving, log the ready line.

        Raises ``MetaPropertiesError`` for a data directory of another node or cluster and
        ``OSError`` when the address cannot be bound.
        """
        if self._listener is not None:
            raise RuntimeError("the broker is already started")
        started = time.monotonic()
        cluster_id = self.config["cluster.id"]
        self._meta = ensure_meta_properties(
            self.data_dir,
            node_id=self.node_id,
            cluster_id=cluster_id if isinstance(cluster_id, str) and cluster_id else None,
        )
        listener = Listener(
            address=self.listener_address,
            registry=self.registry,
            settings=ConnectionSettings(
                max_request_size=self.config.get_int("socket.request.max.bytes")
            ),
        )
        await listener.start()
        self._listener = listener
        log.info(
            "ready: listening on %s, data dir %s, cluster id %s, node id %d (%.0f ms)",
            listener.bound_address,
            self.data_dir,
            self._meta.cluster_id,
            self.node_id,
            (time.monotonic() - started) * 1000,
        )

    async def stop(self, *, timeout: float = 10.0) -> None:
        """Stop accepting, finish in-flight requests within ``timeout`` seconds, close."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        await listener.stop(timeout=timeout)
        log.info("stopped")
