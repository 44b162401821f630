"""What every v3 handler needs: the request's login (its own when principals are propagated),
its Kafka clients, the links of the cluster it names (404 for another cluster), and its JSON
body."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from starlette.requests import Request

from strom.rest.errors import RestError, from_kafka, not_found
from strom.rest.gateway import AsyncProducer, KafkaClients, Login, result
from strom.rest.resources import Links
from strom.rest.settings import RestSettings

__all__ = ["TOO_LARGE", "ProxyContext", "parse_json"]

TOO_LARGE = RestError(413, 413, "HTTP 413 Payload Too Large")


@dataclass
class ProxyContext:
    settings: RestSettings
    clients: KafkaClients
    _cluster_ids: dict[Login, str] = field(default_factory=dict)

    def login(self, request: Request) -> Login:
        """The HTTP user's name and password when principals are propagated (the listener
        has already checked them), else None: the proxy's own login."""
        if not self.settings.propagate:
            return None
        header = request.headers.get("authorization", "")
        try:
            name, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise RestError(401, 401, "Unauthorized") from None
        return name, password

    def admin(self, request: Request) -> AdminClient:
        return self.clients.admin(self.login(request))

    def producer(self, request: Request) -> AsyncProducer:
        return self.clients.producer(self.login(request))

    async def cluster_id(self, request: Request) -> str:
        login = self.login(request)
        if login not in self._cluster_ids:
            try:
                described = await result(self.clients.admin(login).describe_cluster())
            except KafkaException as error:
                raise from_kafka(error) from error
            self._cluster_ids[login] = described.cluster_id
        return self._cluster_ids[login]

    async def links(self, request: Request) -> Links:
        """The links of the cluster the path names; 404 when it is not this proxy's."""
        cluster_id = await self.cluster_id(request)
        named = request.path_params.get("cluster_id", cluster_id)
        if named != cluster_id:
            raise not_found(f"Cluster {named} cannot be found.")
        return Links(str(request.base_url).rstrip("/"), cluster_id)

    async def json(self, request: Request) -> Any:
        """The request's JSON; 400 for a body that is not JSON, 413 for one over
        ``max.request.size``, 422 for none."""
        return parse_json(await self.body(request))

    async def body(self, request: Request) -> bytes:
        """The whole body, refused with 413 past ``max.request.size`` (a produce stream is
        limited per record instead)."""
        limit = self.settings.max_body_bytes
        if int(request.headers.get("content-length") or 0) > limit:
            raise TOO_LARGE
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise TOO_LARGE
            chunks.append(chunk)
        return b"".join(chunks)


def parse_json(raw: bytes) -> Any:
    """A body's JSON; 400 for one that is not JSON, 422 for none."""
    if not raw.strip():
        raise RestError(422, 422, "Payload error. Request body is empty. Data is required.")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise RestError(400, 400, f"Cannot parse the request body as JSON: {error}") from None
