"""The TCP listener: accepts connections and shuts them down gracefully.

A listener speaks its security protocol (``ListenerSecurity``): TLS through the event loop's
own TLS transport, SASL through :class:`SaslConnection`; a PLAINTEXT listener has neither and
its connections pay nothing for them.

``stop`` stops accepting, lets every connection answer the requests it has already read (no new
ones are read), closes them, and after ``timeout`` seconds aborts whatever is still running.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strom.protocol.api import ApiKey
from strom.security.principal_mapping import PrincipalMapper
from strom.security.sasl_authenticator import SaslAuthenticator
from strom.server.client_quotas import ClientQuotas
from strom.server.handlers.registry import HandlerRegistry
from strom.server.network.connection import Connection, ConnectionSettings
from strom.server.network.connection_quotas import ConnectionQuotas
from strom.server.network.faults import Faults
from strom.server.network.request_time import CLUSTER_ACTIONS
from strom.server.network.sasl_connection import SaslConnection

__all__ = ["HostPort", "Listener", "ListenerSecurity"]

log = logging.getLogger(__name__)

_WILDCARDS = frozenset({"", "0.0.0.0", "::"})


@dataclass(frozen=True, slots=True)
class HostPort:
    """A listener address; ``host`` may be a name, an IPv4 or an IPv6 address (no brackets)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> HostPort:
        """``host:port``, ``[v6]:port`` or ``:port`` (every interface)."""
        host, sep, port_text = text.strip().rpartition(":")
        if not sep or not port_text.isdigit():
            raise ValueError(f"expected HOST:PORT, got {text!r}")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        elif ":" in host:
            raise ValueError(f"write an IPv6 address in brackets, as [{host}]:{port_text}")
        port = int(port_text)
        if port > 65535:
            raise ValueError(f"port {port} is out of range")
        return cls(host, port)

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    """How a listener secures its connections; the default is PLAINTEXT."""

    ssl_context: ssl.SSLContext | None = None
    """SSL and SASL_SSL: the server side of TLS."""
    principal_mapper: PrincipalMapper | None = None
    """SSL: names clients by their certificate's subject (``ssl.principal.mapping.rules``)."""
    sasl: Callable[[], SaslAuthenticator] | None = None
    """SASL_PLAINTEXT and SASL_SSL: a new connection's authenticator."""
    sasl_max_receive_size: int = 524288
    """``sasl.server.max.receive.size``: the largest frame a client may send before it has
    authenticated."""
    handshake_timeout: float = 10.0
    """Seconds a client has to finish the TLS handshake."""


_PLAINTEXT = ListenerSecurity()


class Listener:
    """Serves one address with the handlers of one registry."""

    def __init__(
        self,
        *,
        name: str = "PLAINTEXT",
        address: HostPort,
        registry: HandlerRegistry,
        settings: ConnectionSettings,
        backlog: int = 1024,
        faults: Faults | None = None,
        security: ListenerSecurity = _PLAINTEXT,
        client_quotas: ClientQuotas | None = None,
        request_exempt: frozenset[ApiKey] = CLUSTER_ACTIONS,
        connection_quotas: ConnectionQuotas | None = None,
    ) -> None:
        """``client_quotas``: the node's, enforced on each connection (producers' byte rates
        as requests are read, the request quota but for ``request_exempt``);
        ``connection_quotas``: the broker's connection limits, shared by its listeners."""
        self.name = name
        self._client_quotas = client_quotas
        self._request_exempt = request_exempt
        self._connection_quotas = connection_quotas
        self._admitted: set[Connection] = set()
        self._security = security
        self._address = address
        self._faults = faults
        self._registry = registry
        self._settings = settings
        self._backlog = backlog
        self._server: asyncio.Server | None = None
        self._connections: set[Connection] = set()
        self._indexes = itertools.count()
        self._bound: HostPort | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def bind(self) -> None:
        """Take the address (OSError when it is in use) without accepting connections yet."""
        if self._server is not None:
            raise RuntimeError("the listener is already bound")
        loop = self._loop = asyncio.get_running_loop()
        host = await self._bind_host(loop)
        self._server = await loop.create_server(
            self._new_connection,
            host=host,
            port=self._address.port,
            backlog=self._backlog,
            reuse_address=True,
            start_serving=False,
            ssl=self._security.ssl_context,
            ssl_handshake_timeout=(
                self._security.handshake_timeout if self._security.ssl_context else None
            ),
        )
        sockname = self._server.sockets[0].getsockname()
        self._bound = HostPort(str(sockname[0]), int(sockname[1]))
        if self._faults is not None:
            self._faults.on_drop(self._drop_connections_soon)

    async def start(self) -> None:
        """Accept connections (binding first if :meth:`bind` was not called)."""
        if self._server is None:
            await self.bind()
        assert self._server is not None
        await self._server.start_serving()

    async def _bind_host(self, loop: asyncio.AbstractEventLoop) -> str | None:
        """One address to bind (Kafka binds one), IPv4 first; None for every interface."""
        if self._address.host == "":
            return None
        if self._address.host in _WILDCARDS:
            return self._address.host
        infos = await loop.getaddrinfo(
            self._address.host, self._address.port, type=socket.SOCK_STREAM
        )
        if not infos:
            raise OSError(f"cannot resolve {self._address.host!r}")
        infos.sort(key=lambda info: info[0] != socket.AF_INET)
        return str(infos[0][4][0])

    @property
    def bound_address(self) -> HostPort:
        """The address actually bound (the real port when the configured one was 0)."""
        if self._bound is None:
            raise RuntimeError("the listener is not started")
        return self._bound

    @property
    def advertised_address(self) -> HostPort:
        """The configured host (unless it is a wildcard) with the bound port."""
        bound = self.bound_address
        if self._address.host in _WILDCARDS:
            return HostPort(socket.gethostname(), bound.port)
        return HostPort(self._address.host, bound.port)

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    def _new_connection(self) -> asyncio.Protocol:
        if self._faults is not None and self._faults.refusing:
            return _Refused()
        security = self._security
        arguments = self._connection_arguments()
        if security.sasl is None:
            return Connection(principal_mapper=security.principal_mapper, **arguments)
        return SaslConnection(
            authenticator=security.sasl(),
            max_receive_size=security.sasl_max_receive_size,
            **arguments,
        )

    def _connection_arguments(self) -> dict[str, Any]:
        return {
            "registry": self._registry,
            "settings": self._settings,
            "index": next(self._indexes),
            # tracked from connection_made: a TLS handshake that fails never gets there
            "on_started": self._started,
            "on_finished": self._finished,
            "faults": self._faults,
            "listener_name": self.name,
            "quotas": self._client_quotas,
            "request_exempt": self._request_exempt,
        }

    def _started(self, connection: Connection) -> None:
        self._connections.add(connection)
        quotas = self._connection_quotas
        if quotas is None:
            return
        refusal = quotas.admit(self.name, connection.client_host)
        if refusal is None:
            self._admitted.add(connection)
        else:
            connection.refuse(refusal)

    def _finished(self, connection: Connection) -> None:
        self._connections.discard(connection)
        if connection in self._admitted:
            self._admitted.discard(connection)
            assert self._connection_quotas is not None
            self._connection_quotas.release(self.name, connection.client_host)

    def _drop_connections_soon(self) -> None:
        """Any thread: drop every connection from the listener's loop."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._drop_connections)

    def _drop_connections(self) -> None:
        if self._connections:
            log.info("dropping %d client connection(s) (injected fault)", len(self._connections))
        for connection in list(self._connections):
            connection.abort()

    async def stop(self, *, timeout: float = 10.0) -> None:
        """Stop accepting, finish in-flight requests, close every connection."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        connections = list(self._connections)
        for connection in connections:
            connection.shutdown()
        waits = [asyncio.ensure_future(c.wait_finished()) for c in connections]
        if waits:
            _, pending = await asyncio.wait(waits, timeout=timeout)
            if pending:
                log.warning(
                    "aborting %d connections whose requests did not finish within %gs",
                    len(pending),
                    timeout,
                )
                for connection in connections:
                    connection.abort()
                await asyncio.wait(pending, timeout=1.0)
        await server.wait_closed()


class _Refused(asyncio.Protocol):
    """A connection accepted while a test refuses connections: closed at once."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        log.info("refused a connection (injected fault)")
        transport.close()
