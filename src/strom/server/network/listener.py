"""The TCP listener: accepts connections and shuts them down gracefully.

A listener speaks its security protocol (``ListenerSecurity``): TLS through the event loop's
own TLS transport, SASL through :class:`SaslConnection`; a PLAINTEXT listener has neither and
its connections pay nothing for them.

It accepts in a loop of its own (``_accept``) rather than asyncio's server, so that it can stop
accepting while the broker's connection limits (``ConnectionQuotas``) leave it no slot, as
Kafka's acceptor does: the connection accepted waits for a slot, the next ones wait in the
kernel's backlog, and a client sees a slow connection rather than an error.

``stop`` stops accepting, lets every connection answer the requests it has already read (no new
ones are read), closes them, and after ``timeout`` seconds aborts whatever is still running.
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import logging
import socket
from typing import Any

from strom.protocol.api import ApiKey
from strom.server.api.handler_table import HandlerTable
from strom.server.auth.listener_security import ListenerSecurity
from strom.server.configs.node_config import HostPort
from strom.server.network.connection import Connection, ConnectionSettings, format_address
from strom.server.network.connection_quotas import ConnectionQuotas
from strom.server.network.faults import Faults
from strom.server.network.request_time import CLUSTER_ACTIONS
from strom.server.network.sasl_connection import SaslConnection
from strom.server.quotas.client_quotas import ClientQuotas

__all__ = ["Listener"]

log = logging.getLogger(__name__)

_WILDCARDS = frozenset({"", "0.0.0.0", "::"})
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


_PLAINTEXT = ListenerSecurity()


class Listener:
    """Serves one address with the handlers of one registry."""

    def __init__(
        self,
        *,
        name: str = "PLAINTEXT",
        address: HostPort,
        registry: HandlerTable,
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
        self._admitted: dict[Connection, str] = {}
        """Connections counted by the connection quotas -> their IP address."""
        self._slot_freed: asyncio.Future[None] | None = None
        """Set while the accept loop waits for a connection slot."""
        self._security = security
        self._address = address
        self._faults = faults
        self._registry = registry
        self._settings = settings
        self._backlog = backlog
        self._sockets: list[socket.socket] = []
        self._accepting: list[asyncio.Task[None]] = []
        self._handshakes: set[asyncio.Task[None]] = set()
        self._connections: set[Connection] = set()
        self._indexes = itertools.count()
        self._bound: HostPort | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def bind(self) -> None:
        """Take the address (OSError when it is in use) without accepting connections yet."""
        if self._sockets:
            raise RuntimeError("the listener is already bound")
        loop = self._loop = asyncio.get_running_loop()
        host = await self._bind_host(loop)
        self._sockets = _listening_sockets(host, self._address.port, self._backlog)
        sockname = self._sockets[0].getsockname()
        self._bound = HostPort(str(sockname[0]), int(sockname[1]))
        if self._faults is not None:
            self._faults.on_drop(self._drop_connections_soon)
        if self._connection_quotas is not None:
            self._connection_quotas.watch(self._quotas_changed)

    async def start(self) -> None:
        """Accept connections (binding first if :meth:`bind` was not called)."""
        if not self._sockets:
            await self.bind()
        if self._accepting:
            raise RuntimeError("the listener is already started")
        loop = asyncio.get_running_loop()
        self._accepting = [
            loop.create_task(self._accept(sock), name=f"strom-accept-{self.name}")
            for sock in self._sockets
        ]

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

    @property
    def requests_in_flight(self) -> int:
        """Requests read on this listener's connections and not yet answered."""
        return sum(connection.in_flight for connection in self._connections)

    async def _accept(self, server: socket.socket) -> None:
        """Accept connections while the listener runs; wait for a slot when the connection
        limits leave none (Kafka's ``Acceptor``)."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                client, address = await loop.sock_accept(server)
            except OSError as error:
                if error.errno not in _OUT_OF_RESOURCES:
                    log.debug("accepting a connection on %s failed: %s", self.name, error)
                    continue
                log.error("cannot accept connections on %s for 1 s: %s", self.name, error)
                await asyncio.sleep(1.0)
                continue
            try:
                await self._admit(client, str(address[0]), format_address(address))
            except BaseException:
                client.close()
                raise

    async def _admit(self, client: socket.socket, ip: str, address: str) -> None:
        """Serve an accepted socket, once the connection limits leave it a slot."""
        if self._faults is not None and self._faults.refusing:
            log.info("refused a connection (injected fault)")
            client.close()
            return
        try:
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        except OSError as error:  # the client has gone already
            log.debug("dropping the connection from %s: %s", address, error)
            client.close()
            return
        quotas = self._connection_quotas
        if quotas is not None:
            while not quotas.slot_available(self.name):
                await self._wait_for_slot()
            refusal = quotas.admit(self.name, ip)
            if refusal is not None:
                log.info("refusing the connection from %s: %s", address, refusal)
                client.close()
                return
        connection = self._new_connection()
        if quotas is not None:
            self._admitted[connection] = ip
        task = asyncio.get_running_loop().create_task(self._connect(connection, client, address))
        self._handshakes.add(task)
        task.add_done_callback(self._handshakes.discard)

    async def _wait_for_slot(self) -> None:
        assert self._loop is not None
        self._slot_freed = self._loop.create_future()
        try:
            await self._slot_freed
        finally:
            self._slot_freed = None

    async def _connect(self, connection: Connection, client: socket.socket, address: str) -> None:
        """Make the accepted socket ``connection``'s transport (after the TLS handshake)."""
        security = self._security
        try:
            await asyncio.get_running_loop().connect_accepted_socket(
                lambda: connection,
                client,
                ssl=security.ssl_context,
                ssl_handshake_timeout=security.handshake_timeout if security.ssl_context else None,
            )
        except asyncio.CancelledError:
            self._release(connection)
            client.close()
            raise
        except Exception as error:  # the TLS handshake failed, or the client went away
            log.info(
                "closing the connection from %s: %s", address, str(error) or type(error).__name__
            )
            self._release(connection)
            client.close()

    def _new_connection(self) -> Connection:
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
            "on_started": self._connections.add,
            "on_finished": self._finished,
            "faults": self._faults,
            "listener_name": self.name,
            "quotas": self._client_quotas,
            "request_exempt": self._request_exempt,
        }

    def _finished(self, connection: Connection) -> None:
        self._connections.discard(connection)
        self._release(connection)

    def _release(self, connection: Connection) -> None:
        """Give the connection's slot back (once)."""
        ip = self._admitted.pop(connection, None)
        if ip is not None:
            assert self._connection_quotas is not None
            self._connection_quotas.release(self.name, ip)

    def _quotas_changed(self) -> None:
        """The counts changed: resume accepting when a slot is free; close the least recently
        active connection while an inter-broker one took the broker over ``max.connections``."""
        quotas = self._connection_quotas
        assert quotas is not None
        waiter = self._slot_freed
        if waiter is not None and not waiter.done() and quotas.slot_available(self.name):
            waiter.set_result(None)
        if quotas.over_limit(self.name):
            candidates = [c for c in self._connections if c in self._admitted]
            if candidates:
                oldest = min(candidates, key=lambda connection: connection.last_active)
                log.info(
                    "closing the least recently active connection, from %s: the broker is over "
                    "max.connections=%d",
                    oldest.client_address,
                    quotas.limits.max_connections,
                )
                self._release(oldest)
                oldest.abort()

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
        sockets, self._sockets = self._sockets, []
        if not sockets:
            return
        accepting, self._accepting = self._accepting, []
        handshakes = list(self._handshakes)
        for task in (*accepting, *handshakes):
            task.cancel()
        await asyncio.gather(*accepting, *handshakes, return_exceptions=True)
        for sock in sockets:
            sock.close()
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


def _listening_sockets(host: str | None, port: int, backlog: int) -> list[socket.socket]:
    """Bound, listening, non-blocking sockets for ``host`` (None: every interface, one socket
    per address family, as asyncio's ``create_server``)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets
