"""An asyncio client for node-to-node traffic: brokers to controllers, voters to voters, followers
to leaders.

:class:`NodeConnection` keeps one TCP connection to one node and pipelines requests on it: each
request is written at once, and one reader task matches the responses to the requests in order
(Kafka answers a connection's requests in the order they came, and the correlation id is checked
too). A request that is not answered within its timeout, a closed connection or a response that
does not match fails every request in flight on that connection with :class:`RequestFailed` and
drops the connection, as Kafka's ``NetworkClient`` does; the next request reconnects, after
``reconnect_backoff`` once a connection attempt has failed. ``on_dropped`` hears of every
connection lost that way, or closed by the peer between requests.

:class:`NodeClients` holds a connection per node id, with addresses looked up when connecting, so
an address learnt later (from metadata or the quorum) is used at the next reconnect.

A secured connection (:class:`~strom.client.security.ClientSecurity`) speaks TLS and logs in
with SASL before its first request; when the server limits the session (KIP-368) it logs in
again on the same connection, once idle, before the session ends (and reconnects only if that
fails), as Kafka's own clients re-authenticate.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from kio.static.protocol import RequestPayload

from strom.client.security import (
    PLAINTEXT,
    AuthenticationFailed,
    ClientSecurity,
    sasl_exchange,
)
from strom.protocol.api import decode_response, encode_client_request
from strom.protocol.framing import frame_prefix

__all__ = ["ConnectionClosed", "NodeClients", "NodeConnection", "RequestFailed"]

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")


class RequestFailed(ConnectionError):
    """The request got no answer: no connection, a timeout, or a broken connection.

    ``sent``: the request went out before it failed (a timeout, or the connection broke while
    it waited for its answer), so the peer may have handled it; False when it never left."""

    def __init__(self, message: str, *, sent: bool = False) -> None:
        super().__init__(message)
        self.sent = sent


class ConnectionClosed(RequestFailed):
    """The peer closed the connection, or refused one: its process is gone (or it closed the
    connection itself). A timeout is not this: a network partition closes nothing."""


@dataclass(slots=True)
class _Pending:
    correlation_id: int
    api_key: int
    api_version: int
    response_type: type[Any] | None
    future: asyncio.Future[Any]


class NodeConnection:
    """One pipelined connection to ``host:port`` that reconnects on demand."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "strom",
        connect_timeout: float = 5.0,
        request_timeout: float = 30.0,
        reconnect_backoff: float = 0.05,
        security: ClientSecurity = PLAINTEXT,
        on_dropped: Callable[[], None] | None = None,
    ) -> None:
        """``on_dropped``: called when an open connection is lost (not on :meth:`close`)."""
        self.host = host
        self._on_dropped = on_dropped
        self._security = security
        self._session_ends = float("inf")
        self.port = port
        self._client_id = client_id
        self._connect_timeout = connect_timeout
        self._request_timeout = request_timeout
        self._reconnect_backoff = reconnect_backoff
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._connecting: asyncio.Lock = asyncio.Lock()
        self._pending: deque[_Pending] = deque()
        self._next_correlation_id = 0
        self._last_failed_connect = -1.0
        self._closed = False

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        return self._writer is not None

    async def request(
        self,
        body: RequestPayload,
        *,
        timeout: float | None = None,
        response_type: type[Any] | None = None,
    ) -> Any:
        """Send ``body`` and return the response body of the same API and version (kio's class,
        or ``response_type``). Raises :class:`RequestFailed`."""
        return await self._send(await self._connected(), body, timeout, response_type)

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        body: RequestPayload,
        timeout: float | None,
        response_type: type[Any] | None = None,
    ) -> Any:
        self._next_correlation_id = (self._next_correlation_id + 1) & 0x7FFFFFFF
        correlation_id = self._next_correlation_id
        payload = encode_client_request(
            body, correlation_id=correlation_id, client_id=self._client_id
        )
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append(
            _Pending(
                correlation_id,
                int(body.__api_key__),
                int(body.__version__),
                response_type,
                future,
            )
        )
        writer.write(frame_prefix(len(payload)) + payload)
        try:
            async with asyncio.timeout(self._request_timeout if timeout is None else timeout):
                return await future
        except TimeoutError:
            failure = RequestFailed(f"{self}: no answer within the request timeout", sent=True)
            self._drop(failure)
            raise failure from None

    async def close(self) -> None:
        """Fail what is in flight and close; later requests raise :class:`RequestFailed`."""
        self._closed = True
        task = self._reader_task
        self._drop(RequestFailed(f"{self}: the connection was closed", sent=True))
        if task is not None:
            task.cancel()
            # gather, not a suppressed CancelledError: a cancel of close() itself goes on.
            await asyncio.gather(task, return_exceptions=True)

    async def _connected(self) -> asyncio.StreamWriter:
        if self._closed:
            raise RequestFailed(f"{self}: the connection was closed")
        async with self._connecting:  # one connection attempt at a time
            current = self._current_writer()
            loop = asyncio.get_running_loop()
            if current is not None and loop.time() >= self._session_ends and not self._pending:
                try:
                    await self._log_in(current)  # KIP-368: again, on the same connection
                except RequestFailed as error:
                    log.info("%s; reconnecting", error)
                    current = None
            if current is not None:
                return current
            wait = self._last_failed_connect + self._reconnect_backoff - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                async with asyncio.timeout(self._connect_timeout):
                    reader, writer = await self._open()
            except (OSError, TimeoutError) as error:
                self._last_failed_connect = loop.time()
                reason = str(error) or "timed out"
                failure = (
                    ConnectionClosed if isinstance(error, ConnectionRefusedError) else RequestFailed
                )
                raise failure(f"cannot connect to {self}: {reason}") from None
            self._writer = writer
            self._reader_task = loop.create_task(
                self._read_loop(reader, writer), name=f"strom-client-{self}"
            )
            self._session_ends = float("inf")
            if self._security.mechanism is not None:
                try:
                    await self._log_in(writer)
                except RequestFailed:
                    self._last_failed_connect = loop.time()
                    raise
            return writer

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Connect, with TLS when configured."""
        context = self._security.ssl_context
        return await asyncio.open_connection(
            self.host, self.port, ssl=context, server_hostname=self.host if context else None
        )

    async def _log_in(self, writer: asyncio.StreamWriter) -> None:
        """The SASL login on this connection, or a re-authentication once its session is
        ending; a failed one drops the connection and raises :class:`RequestFailed`."""
        exchange = sasl_exchange(self._security)
        try:
            body = next(exchange)
            while True:
                response = await self._send(writer, body, self._connect_timeout)
                try:
                    body = exchange.send(response)
                except StopIteration as done:
                    lifetime_ms = int(done.value)
                    break
        except (RequestFailed, AuthenticationFailed) as error:
            self._drop(RequestFailed(f"{self}: the SASL login failed", sent=True), writer)
            raise RequestFailed(f"the SASL login to {self} failed: {error}") from None
        ends = asyncio.get_running_loop().time() + 0.85 * lifetime_ms / 1000
        self._session_ends = ends if lifetime_ms > 0 else float("inf")

    def _current_writer(self) -> asyncio.StreamWriter | None:
        return self._writer

    async def _read_loop(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (size,) = _SIZE.unpack(await reader.readexactly(_SIZE.size))
                frame = await reader.readexactly(size)
                if not self._pending:
                    raise RequestFailed(f"{self} sent a response nobody asked for")
                pending = self._pending.popleft()
                answered, body = decode_response(
                    frame,
                    api_key=pending.api_key,
                    api_version=pending.api_version,
                    body_type=pending.response_type,
                )
                if answered != pending.correlation_id:
                    raise RequestFailed(
                        f"{self} answered correlation id {answered}, "
                        f"expected {pending.correlation_id}"
                    )
                if not pending.future.done():
                    pending.future.set_result(body)
        except asyncio.CancelledError:
            raise
        except (OSError, asyncio.IncompleteReadError) as error:
            closed = f"{self} closed the connection ({error or 'EOF'})"
            self._drop(ConnectionClosed(closed, sent=True), writer)
        except Exception as error:  # a frame that does not decode, a mismatch
            log.warning("dropping the connection to %s: %s", self, error)
            self._drop(RequestFailed(f"{self}: {error}", sent=True), writer)

    def _drop(self, error: RequestFailed, writer: asyncio.StreamWriter | None = None) -> None:
        """Fail every request in flight with ``error`` (``sent``: they all went out) and forget
        the connection (only ``writer``'s, if given: a newer connection is left alone)."""
        if writer is not None and writer is not self._writer:
            return
        current, self._writer = self._writer, None
        self._reader_task = None
        if current is not None:
            current.close()
            if self._on_dropped is not None and not self._closed:
                self._on_dropped()
        pending, self._pending = self._pending, deque()
        for item in pending:
            if not item.future.done():
                item.future.set_exception(error)


class NodeClients:
    """A :class:`NodeConnection` per node id; ``address_of(node_id)`` says where each node is
    (None: unknown for now, and the request fails)."""

    def __init__(
        self,
        address_of: Callable[[int], tuple[str, int] | None],
        *,
        client_id: str = "strom",
        request_timeout: float = 30.0,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self._address_of = address_of
        self._security = security
        self._client_id = client_id
        self._request_timeout = request_timeout
        self._connections: dict[int, NodeConnection] = {}
        self._closed = False
        self._dropped: list[Callable[[int], None]] = []

    def sibling(self) -> NodeClients:
        """Connections of their own to the same nodes, with the same settings (requests whose
        timeouts must not drop the others' connections)."""
        return NodeClients(
            self._address_of,
            client_id=self._client_id,
            request_timeout=self._request_timeout,
            security=self._security,
        )

    def when_dropped(self, callback: Callable[[int], None]) -> None:
        """Call ``callback(node_id)`` whenever an open connection to a node is lost: a request
        timed out, or the node closed it (also between requests)."""
        self._dropped.append(callback)

    def _connection_dropped(self, node_id: int) -> None:
        for callback in self._dropped:
            callback(node_id)

    def connection(self, node_id: int) -> NodeConnection:
        """The connection to ``node_id`` (re-made when the node's address changed)."""
        if self._closed:
            raise RequestFailed(f"the connections to node {node_id} are closed")
        address = self._address_of(node_id)
        if address is None:
            raise RequestFailed(f"the address of node {node_id} is not known")
        current = self._connections.get(node_id)
        if current is not None and (current.host, current.port) == address:
            return current
        if current is not None:
            asyncio.get_running_loop().create_task(current.close())
        connection = NodeConnection(
            *address,
            client_id=self._client_id,
            request_timeout=self._request_timeout,
            security=self._security,
            on_dropped=partial(self._connection_dropped, node_id),
        )
        self._connections[node_id] = connection
        return connection

    async def request(
        self, node_id: int, body: RequestPayload, *, timeout: float | None = None
    ) -> Any:
        return await self.connection(node_id).request(body, timeout=timeout)

    async def close(self) -> None:
        """Close every connection; later requests raise :class:`RequestFailed`."""
        self._closed = True
        connections, self._connections = self._connections, {}
        for connection in connections.values():
            await connection.close()
