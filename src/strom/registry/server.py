"""Running one registry instance: its settings (Confluent's names), the service, the election
and the HTTP(S) listener (uvicorn), in the calling thread or a thread of its own."""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from strom.registry.app import create_app
from strom.registry.compatibility import CompatibilityLevel
from strom.registry.election import GroupElection
from strom.registry.http import BasicAuth
from strom.registry.service import RegistryService

__all__ = ["RegistryServer", "RegistrySettings"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RegistrySettings:
    """One instance's settings; ``from_properties`` reads them under Confluent's names."""

    bootstrap_servers: str
    listener: str = "localhost:8081"
    topic: str = "_schemas"
    group_id: str = "schema-registry"
    compatibility: CompatibilityLevel = CompatibilityLevel.BACKWARD
    advertised_url: str | None = None
    users_file: str | None = None
    realm: str = "SchemaRegistry"
    certfile: str | None = None
    keyfile: str | None = None
    client_config: Mapping[str, Any] = field(default_factory=dict)
    max_body_bytes: int = 16 << 20
    timeout: float = 30.0

    @classmethod
    def from_properties(cls, values: Mapping[str, str]) -> RegistrySettings:
        """Settings from ``schema.registry.*``-style properties: ``listeners``,
        ``kafkastore.bootstrap.servers``, ``kafkastore.topic``, ``schema.registry.group.id``,
        ``schema.compatibility.level``, ``host.name``, ``authentication.method`` (BASIC) with
        ``authentication.realm`` and ``authentication.users.file``, ``ssl.certificate.location``
        and ``ssl.key.location`` (PEM)."""
        listener = values.get("listeners", "http://localhost:8081").split(",")[0]
        scheme, _, address = listener.rpartition("://")
        basic = values.get("authentication.method", "NONE").upper() == "BASIC"
        return cls(
            bootstrap_servers=values["kafkastore.bootstrap.servers"].replace("PLAINTEXT://", ""),
            listener=address,
            topic=values.get("kafkastore.topic", "_schemas"),
            group_id=values.get("schema.registry.group.id", "schema-registry"),
            compatibility=CompatibilityLevel(
                values.get("schema.compatibility.level", "backward").upper()
            ),
            advertised_url=values.get("advertised.url"),
            users_file=values.get("authentication.users.file") if basic else None,
            realm=values.get("authentication.realm", "SchemaRegistry"),
            certfile=values.get("ssl.certificate.location") if scheme == "https" else None,
            keyfile=values.get("ssl.key.location") if scheme == "https" else None,
        )


class RegistryServer:
    """A started instance: ``url`` is where it answers."""

    def __init__(self, settings: RegistrySettings) -> None:
        self.settings = settings
        host, _, port = settings.listener.rpartition(":")
        self._socket = socket.create_server((host or "0.0.0.0", int(port)), reuse_port=False)
        bound_port = self._socket.getsockname()[1]
        scheme = "https" if settings.certfile else "http"
        shown_host = "localhost" if host in ("", "0.0.0.0") else host
        self.url = settings.advertised_url or f"{scheme}://{shown_host}:{bound_port}"
        self.service = RegistryService(
            bootstrap_servers=settings.bootstrap_servers,
            topic=settings.topic,
            default_compatibility=settings.compatibility,
            client_config=dict(settings.client_config),
            timeout=settings.timeout,
        )
        self.election = GroupElection(
            bootstrap_servers=settings.bootstrap_servers,
            topic=settings.topic,
            group_id=settings.group_id,
            url=self.url,
            client_config=dict(settings.client_config),
        )
        auth = (
            BasicAuth.from_file(settings.users_file, settings.realm)
            if settings.users_file
            else None
        )
        app = create_app(self.service, auth=auth, max_body_bytes=settings.max_body_bytes)
        self._uvicorn = uvicorn.Server(
            uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                ssl_certfile=settings.certfile,
                ssl_keyfile=settings.keyfile,
                ssl_version=ssl.PROTOCOL_TLS_SERVER,
                timeout_graceful_shutdown=2,
            )
        )
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Replay ``_schemas``, join the election and listen, in a thread of its own."""
        self.service.start(self.election)
        self.election.start()
        self._thread = threading.Thread(target=self._serve, name="registry-http", daemon=True)
        self._thread.start()
        self.election.primary_url()  # returns once some instance is primary

    def serve_forever(self) -> None:
        """Start and serve in the calling thread until interrupted."""
        self.service.start(self.election)
        self.election.start()
        log.info("ready: schema registry listening on %s", self.url)
        try:
            self._serve()
        finally:
            self.service.stop()

    def _serve(self) -> None:
        self._uvicorn.run(sockets=[self._socket])

    def stop(self) -> None:
        self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.service.stop()
        self._socket.close()
