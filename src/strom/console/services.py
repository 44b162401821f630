"""The services beside strom that the console's pages talk to over HTTP (a schema registry, a
Kafka Connect cluster, a SQL server, the nodes' metrics listeners): where they are, and one
small client that answers with their JSON or raises their error as one line (``RestError``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx

from strom.rest.errors import RestError

__all__ = ["TIMEOUT_S", "ServiceClient", "Services"]

TIMEOUT_S: Final = 10.0


@dataclass(frozen=True)
class Services:
    """The URLs of the services given (``--registry``, ``--connect``, ``--metrics``,
    ``--sql``)."""

    registry: str | None = None
    connect: str | None = None
    metrics: tuple[str, ...] = ()
    """The nodes' metrics listeners' ``/metrics`` URLs."""
    sql: str | None = None

    @classmethod
    def from_properties(cls, values: Mapping[str, str]) -> Services:
        metrics = values.get("console.metrics.urls", "").split(",")
        return cls(
            registry=values.get("schema.registry.url") or None,
            connect=values.get("console.connect.url") or None,
            metrics=tuple(url.strip() for url in metrics if url.strip()),
            sql=values.get("console.sql.url") or None,
        )


@dataclass(frozen=True)
class ServiceClient:
    """Requests to one service: ``name`` and ``flag`` say in errors which one, and how to
    give it when ``url`` is None."""

    name: str
    flag: str
    url: str | None

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        """The service's JSON answer (None when it has no body); its error, one line."""
        if self.url is None:
            raise RestError(404, 404, f"No {self.name}: start the console with {self.flag} URL.")
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
                answer = await client.request(method, self.url.rstrip("/") + path, json=body)
        except httpx.HTTPError as error:
            message = f"Cannot reach the {self.name} at {self.url}: {error}"
            raise RestError(502, 502, message) from None
        try:
            found = answer.json() if answer.content else None
        except ValueError:
            found = None
        if answer.is_error:
            said = found.get("message") if isinstance(found, dict) else answer.reason_phrase
            first = str(said).strip().splitlines()[0] if str(said).strip() else answer.reason_phrase
            raise RestError(answer.status_code, answer.status_code, f"{self.name}: {first}")
        return found

    async def get(self, path: str) -> Any:
        return await self.call("GET", path)
