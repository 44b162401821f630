"""Running one registry instance: its settings (Confluent's names), the service, the election
and the HTTP(S) listener (uvicorn), in the calling thread or a thread of its own."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from strom.registry.app import create_app
from strom.registry.compatibility import CompatibilityLevel
from strom.registry.election import GroupElection
from strom.registry.service import RegistryService
from strom.web.http import BasicAuth
from strom.web.security import ListenerSecurity
from strom.web.server import HttpServer, Listener

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
    security: ListenerSecurity = field(default_factory=ListenerSecurity)
    """The listener's ``ssl.*`` (https) and basic authentication."""
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
        listener = Listener.parse(values.get("listeners", "http://localhost:8081"))
        return cls(
            bootstrap_servers=values["kafkastore.bootstrap.servers"].replace("PLAINTEXT://", ""),
            listener=f"{listener.host}:{listener.port}",
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
            security=ListenerSecurity.from_properties(
                values,
                listener.scheme,
                realm="SchemaRegistry",
                jvm_options=environ.get("SCHEMA_REGISTRY_OPTS", ""),
            ),
        )


class RegistryServer:
    """A started instance: ``url`` is where it answers."""

    def __init__(self, settings: RegistrySettings) -> None:
        self.settings = settings
        auth = BasicAuth.of(settings.security)
        context = settings.security.ssl_context()
        host, _, port = settings.listener.rpartition(":")
        scheme = "https" if context is not None else "http"
        self.service = RegistryService(
            bootstrap_servers=settings.bootstrap_servers,
            topic=settings.topic,
            default_compatibility=settings.compatibility,
            validate_defaults=settings.validate_defaults,
            client_config=dict(settings.client_config),
            timeout=settings.timeout,
        )
        self._app = create_app(self.service, auth=auth, max_body_bytes=settings.max_body_bytes)
        self._http = HttpServer(
            Listener(scheme, host, int(port)),
            ssl_context=context,
            advertised_url=settings.advertised_url,
            name="registry-http",
        )
        self.url = self._http.url
        self.election = GroupElection(
            bootstrap_servers=settings.bootstrap_servers,
            topic=settings.topic,
            group_id=settings.group_id,
            url=self.url,
            client_config=dict(settings.client_config),
        )

    def start(self) -> None:
        """Replay ``_schemas``, join the election and listen, in a thread of its own."""
        self.service.start(self.election)
        self.election.start()
        self._http.start(self._app)
        self.election.primary_url()  # returns once some instance is primary

    def serve_forever(self) -> None:
        """Start and serve in the calling thread until interrupted."""
        self.service.start(self.election)
        self.election.start()
        log.info("ready: schema registry listening on %s", self.url)
        try:
            self._http.serve(self._app)
        finally:
            self.service.stop()

    def stop(self) -> None:
        self._http.stop()
        self.service.stop()
