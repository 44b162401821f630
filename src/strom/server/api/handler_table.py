"""The handler table: one handler per Kafka API, each declaring the versions it implements.

The network layer looks handlers up here by API key, and decodes only the versions registered
here; the ApiVersions handler builds its answer from the same table, so the broker never
advertises an API or a version it does not handle.

A handler is any object with ``api_key``, ``versions`` and ``async handle(context)``. It returns a
kio response body of the request's version (the usual case: the connection encodes it with the
right header), a pre-encoded ``Response`` (when the body holds file regions, as Fetch's does), or
``NO_RESPONSE`` (produce with acks=0, which Kafka never answers).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol, TypeAlias

from kio.static.protocol import RequestPayload, ResponsePayload

from strom.protocol.api import (
    KAFKA_BROKER_VERSIONS,
    ApiKey,
    Request,
    VersionRange,
    api_name,
)
from strom.protocol.headers import RequestHeader
from strom.protocol.produce_request import ProduceRequestData
from strom.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from strom.security.principal import ANONYMOUS, KafkaPrincipal
from strom.server.api.response import Response
from strom.server.auth.authorizer import Authorizer

__all__ = [
    "NO_RESPONSE",
    "CloseConnection",
    "Handler",
    "HandlerResult",
    "HandlerTable",
    "NoResponse",
    "RequestContext",
]


class NoResponse(enum.Enum):
    """The answer of a request that gets none on the wire (produce with acks=0)."""

    NO_RESPONSE = enum.auto()


NO_RESPONSE = NoResponse.NO_RESPONSE


class CloseConnection(Exception):
    """Raised by a handler to close the client's connection as Kafka would (an acks=0 produce
    that failed): an expected outcome, logged in one line, not a broker fault."""


HandlerResult: TypeAlias = ResponsePayload | Response | NoResponse


def _not_throttled(throttle_ms: int) -> None:
    """Requests made without a connection are not muted."""


def _never_closed(callback: Callable[[], None]) -> None:
    """Requests made without a connection have none to close."""


def _not_counted() -> int:
    """Requests exempt from the request quota (or with none) are never throttled by it."""
    return 0


@dataclass(frozen=True, slots=True)
class RequestContext:
    """One decoded request and where it came from (Kafka's ``RequestContext``)."""

    request: Request
    client_address: str
    """``host:port`` of the client, for log lines."""
    connection_id: str
    """``local-remote-index``, as Kafka names connections; unique while the broker runs."""
    listener_name: str = "PLAINTEXT"
    """The listener the request came in on: brokers are described by their endpoint on it."""
    principal: KafkaPrincipal = ANONYMOUS
    """Who sent it: the SASL user, the TLS client certificate's mapped subject, or ANONYMOUS."""
    authorizer: Authorizer | None = None
    """The listener's authorizer; None lets everything through (no ``authorizer.class.name``)."""

    @property
    def client_host(self) -> str:
        """The client's host, as ACLs name it (``client_address`` without the port)."""
        return self.client_address.rsplit(":", 1)[0].strip("[]")

    def authorize(
        self,
        operation: AclOperation,
        resource_type: ResourceType = ResourceType.CLUSTER,
        name: str = CLUSTER_NAME,
        *,
        audit: bool = True,
    ) -> bool:
        """Whether the principal may do ``operation`` on the resource (the cluster by default);
        always True without an authorizer."""
        authorizer = self.authorizer
        return authorizer is None or authorizer.authorize(
            self.principal, self.client_host, operation, (resource_type, name), audit=audit
        )

    def authorize_any(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether the principal may do ``operation`` on some resource of the type."""
        authorizer = self.authorizer
        return authorizer is None or authorizer.authorize_any(
            self.principal, self.client_host, operation, resource_type
        )

    throttle: Callable[[int], None] = _not_throttled
    """Mutes the client's connection for that many ms (KIP-219): a handler whose answer
    carries a quota's throttle time calls it."""
    throttle_ms: int = 0
    """The throttle time the connection gave the request as it read it (Produce)."""
    when_closed: Callable[[Callable[[], None]], None] = _never_closed
    """Runs the callback once the request's connection has closed (the controller watches
    the connections brokers heartbeat on)."""
    request_throttle: Callable[[], int] = _not_counted
    """Records the time the handler has run so far against the client's
    ``request_percentage``, mutes the connection for the throttle, and returns it in ms (later
    calls answer the same; see ``strom.server.network.request_time``). The connection does
    this for the answers it encodes; a handler answering with a pre-encoded ``Response``
    (Produce, Fetch) calls it itself and puts the largest of its throttles in the answer."""

    @property
    def user(self) -> str:
        """The principal's name, as quotas name users."""
        return self.principal.name

    @property
    def client_id(self) -> str:
        return self.request.header.client_id or ""

    @property
    def header(self) -> RequestHeader:
        return self.request.header

    @property
    def body(self) -> RequestPayload | ProduceRequestData:
        return self.request.body

    @property
    def kio_body(self) -> RequestPayload:
        """The body as kio's object: any request's but Produce (``ProduceRequestData``)."""
        body = self.request.body
        if isinstance(body, ProduceRequestData):
            raise TypeError(f"{self.request} was read without kio")
        return body

    @property
    def api_key(self) -> ApiKey:
        return self.request.api_key

    @property
    def api_version(self) -> int:
        return self.request.api_version


class Handler(Protocol):
    """What serves one Kafka API."""

    @property
    def api_key(self) -> ApiKey: ...

    @property
    def versions(self) -> VersionRange:
        """The versions this handler implements; all of them are advertised."""
        ...

    async def handle(self, context: RequestContext) -> HandlerResult: ...


class HandlerTable:
    """API key -> handler, and the version ranges ApiVersions advertises.

    With a ``ceiling`` (the versions of an emulated Kafka release, ``protocol.kafka_releases``)
    each handler serves only the versions both it and the ceiling have, and an API the ceiling
    lacks is neither advertised nor served.
    """

    def __init__(
        self,
        *,
        ceiling: Mapping[ApiKey, VersionRange] | None = None,
        reference: Mapping[ApiKey, VersionRange] = KAFKA_BROKER_VERSIONS,
    ) -> None:
        """``reference``: what the Kafka listener of this kind serves (a broker's by default,
        ``KAFKA_CONTROLLER_VERSIONS`` for a controller listener)."""
        self._handlers: dict[ApiKey, Handler] = {}
        self._builders: dict[ApiKey, tuple[Callable[[], Iterable[Handler]], frozenset[ApiKey]]] = {}
        """What builds the handler of an API registered lazily (until its first request), and
        the APIs it was registered for (those an emulated release lacks among them)."""
        self._reference = reference
        self._ceiling = ceiling
        self._versions: Mapping[ApiKey, VersionRange] = MappingProxyType({})
        self.authorizer: Authorizer | None = None
        """Handed to every request's context (``authorizer.class.name``)."""

    def register(self, handler: Handler) -> None:
        """Add a handler; its versions must be ones the Kafka 4.x listener of this kind serves
        (and kio ships)."""
        api_key = ApiKey(handler.api_key)
        if api_key in self:
            raise ValueError(f"a handler for {api_name(api_key)} is already registered")
        reference = self._reference_of(api_key)
        if not handler.versions.issubset(reference):
            raise ValueError(
                f"{api_name(api_key)} handler declares {handler.versions}, "
                f"outside the {reference} Kafka serves on this listener"
            )
        served = self._within_ceiling(api_key, handler.versions)
        if served is None:
            return
        self._handlers[api_key] = handler
        self._advertise(api_key, served)

    def register_lazy(
        self, api_keys: Iterable[ApiKey], build: Callable[[], Iterable[Handler]]
    ) -> None:
        """Serve ``api_keys`` with the handlers ``build()`` returns, made on the first request
        to any of them: their modules, and the kio schemas those import, load then instead of
        at start. Each serves every version Kafka's listener of this kind serves (checked when
        built)."""
        group = frozenset(api_keys)
        for api_key in group:
            if api_key in self:
                raise ValueError(f"a handler for {api_name(api_key)} is already registered")
            served = self._within_ceiling(api_key, self._reference_of(api_key))
            if served is not None:
                self._builders[api_key] = (build, group)
                self._advertise(api_key, served)

    def _build(self, api_key: ApiKey) -> Handler | None:
        """Build the handlers of ``api_key``'s lazy registration (and of the other APIs of it)."""
        build, group = self._builders[api_key]
        keys = {key for key, (other, _) in self._builders.items() if other is build}
        for key in keys:
            del self._builders[key]
        for handler in build():
            key = ApiKey(handler.api_key)
            if key not in group:
                raise ValueError(f"a handler for {api_name(key)} was built, not registered")
            if handler.versions != self._reference_of(key):
                raise ValueError(
                    f"{api_name(key)} handler declares {handler.versions}, "
                    f"not the {self._reference_of(key)} it was registered for"
                )
            if key in keys:
                self._handlers[key] = handler
        if missing := keys - self._handlers.keys():
            names = ", ".join(sorted(api_name(key) for key in missing))
            raise ValueError(f"no handler was built for {names}")
        return self._handlers[api_key]

    def _reference_of(self, api_key: ApiKey) -> VersionRange:
        reference = self._reference.get(api_key)
        if reference is None:
            raise ValueError(f"{api_name(api_key)} is not an API Kafka serves on this listener")
        return reference

    def _advertise(self, api_key: ApiKey, served: VersionRange) -> None:
        self._versions = MappingProxyType(dict(sorted({**self._versions, api_key: served}.items())))

    def _within_ceiling(self, api_key: ApiKey, versions: VersionRange) -> VersionRange | None:
        if self._ceiling is None:
            return versions
        ceiling = self._ceiling.get(api_key)
        if ceiling is None:
            return None
        low = max(versions.min_version, ceiling.min_version)
        high = min(versions.max_version, ceiling.max_version)
        return VersionRange(low, high) if low <= high else None

    def get(self, api_key: ApiKey) -> Handler | None:
        handler = self._handlers.get(api_key)
        if handler is None and api_key in self._builders:
            return self._build(api_key)
        return handler

    @property
    def versions(self) -> Mapping[ApiKey, VersionRange]:
        """API key -> versions served, in API key order (what ApiVersions advertises)."""
        return self._versions

    def __contains__(self, api_key: object) -> bool:
        return api_key in self._handlers or api_key in self._builders
