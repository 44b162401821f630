"""A real schema registry for tests, beside a broker: ``with Registry(broker.bootstrap_servers)
as registry: registry.url``. It runs in this process (its HTTP listener and Kafka clients on
threads of their own), on an ephemeral port, with its state in the broker's ``_schemas`` topic
(or the ``topic`` given, so that tests sharing a broker do not share a registry)."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

from strom.registry.server import RegistryServer, RegistrySettings
from strom.testing.broker import unique_topic_name

__all__ = ["Registry"]


class Registry:
    """One registry instance; several with one ``topic`` and ``group_id`` form a cluster."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        topic: str | None = None,
        group_id: str | None = None,
        **settings: Any,
    ) -> None:
        name = unique_topic_name("_schemas")
        self.settings = RegistrySettings(
            bootstrap_servers=bootstrap_servers,
            listener="127.0.0.1:0",
            topic=topic or name,
            group_id=group_id or f"{name}-group",
            **settings,
        )
        self.server: RegistryServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None, "the registry is not started"
        return self.server.url

    def start(self) -> None:
        self.server = RegistryServer(self.settings)
        self.server.start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def client(self, **config: Any) -> Any:
        """confluent-kafka's ``SchemaRegistryClient`` for this registry."""
        from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: PLC0415

        return SchemaRegistryClient({"url": self.url, **config})

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
