"""Running one registry instance: its settings (Confluent's names), the service, the election
and the HTTP(S) listener (uvicorn), in the calling thread or a thread of its own."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from strom.registry.app import create_app
from strom.registry.compatibility import CompatibilityLevel
from strom.registry.election import GroupElection
from strom.registry.http import BasicAuth
from strom.registry.security import SecurityError, jaas_users, listener_ssl_context
from strom.registry.service import RegistryService
from strom.security.jaas import LOGIN_CONFIG, login_config_from_jvm_options

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
    validate_defaults: bool = False
    advertised_url: str | None = None
    tls: Mapping[str, str] | None = None  # the https listener's ssl.* settings
    jaas_config: str | None = None
    realm: str = "SchemaRegistry"
    roles: frozenset[str] = frozenset({"*"})
    client_config: Mapping[str, Any] = field(default_factory=dict)
    max_body_bytes: int = 16 << 20
    timeout: float = 30.0

    @classmethod
    def from_properties(
        cls, values: Mapping[str, str], environ: Mapping[str, str] = os.environ
    ) -> RegistrySettings:
        """Settings from Confluent's ``schema-registry.properties`` names (docs/registry.md);
        the JAAS file may also come as ``-Djava.security.auth.login.config=`` in
        ``$SCHEMA_REGISTRY_OPTS``, as Confluent's start script passes it."""
        listener = values.get("listeners", "http://localhost:8081").split(",")[0]
        scheme, _, address = listener.rpartition("://")
        method = values.get("authentication.method", "NONE").upper()
        if method not in ("NONE", "BASIC"):
            raise SecurityError(f"authentication.method={method} is not supported (NONE, BASIC)")
        jaas = values.get(LOGIN_CONFIG) or login_config_from_jvm_options(
            environ.get("SCHEMA_REGISTRY_OPTS", "")
        )
        if method == "BASIC" and not jaas:
            raise SecurityError("authentication.method=BASIC needs java.security.auth.login.config")
        roles = values.get("authentication.roles", "*")
        return cls(
            bootstrap_servers=values["kafkastore.bootstrap.servers"].replace("PLAINTEXT://", ""),
            listener=address,
            topic=values.get("kafkastore.topic", "_schemas"),
            group_id=values.get("schema.registry.group.id", "schema-registry"),
            compatibility=CompatibilityLevel(
                values.get("schema.compatibility.level", "backward").upper()
            ),
            validate_defaults=values.get("schema.providers.avro.validate.defaults", "false")
            .strip()
            .lower()
            == "true",
            advertised_url=values.get("advertised.url"),
            tls={k: v for k, v in values.items() if k.startswith("ssl.")}
            if scheme.lower() == "https"
            else None,
            jaas_config=jaas if method == "BASIC" else None,
            realm=values.get("authentication.realm", "SchemaRegistry"),
            roles=frozenset(role.strip() for role in roles.split(",") if role.strip()),
        )


class RegistryServer:
    """A started instance: ``url`` is where it answers."""

    def __init__(self, settings: RegistrySettings) -> None:
        self.settings = settings
        auth = (
            BasicAuth(
                settings.realm, jaas_users(settings.jaas_config, settings.realm), settings.roles
            )
            if settings.jaas_config
            else None
        )
        context = listener_ssl_context(settings.tls) if settings.tls is not None else None
        host, _, port = settings.listener.rpartition(":")
        self._socket = socket.create_server((host or "0.0.0.0", int(port)), reuse_port=False)
        bound_port = self._socket.getsockname()[1]
        scheme = "https" if settings.tls is not None else "http"
        shown_host = "localhost" if host in ("", "0.0.0.0") else host
        self.url = settings.advertised_url or f"{scheme}://{shown_host}:{bound_port}"
        self.service = RegistryService(
            bootstrap_servers=settings.bootstrap_servers,
            topic=settings.topic,
            default_compatibility=settings.compatibility,
            validate_defaults=settings.validate_defaults,
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
        app = create_app(self.service, auth=auth, max_body_bytes=settings.max_body_bytes)
        self._uvicorn = uvicorn.Server(
            uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                ssl_context_factory=(lambda _config, _default: context) if context else None,
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
