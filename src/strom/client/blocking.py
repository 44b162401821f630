"""A blocking connection to one broker: send a kio request, read its response.

For the few requests strom's own tools send that no client library exposes (the Spark sink's
DescribeTransactions and EndTxn, the source's Fetch). Every socket operation is bounded by a
timeout; requests may be pipelined (``send`` ahead, ``receive`` the answers in order). Framing,
headers and bodies are ``strom.protocol``'s.
"""

from __future__ import annotations

import socket
import struct
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

from kio.static.protocol import RequestPayload

from strom.client.security import PLAINTEXT, ClientSecurity, sasl_exchange
from strom.protocol.api import decode_response, encode_client_request
from strom.protocol.framing import frame_prefix

__all__ = ["BrokerConnection", "ConnectionLost", "parse_servers"]

_SIZE = struct.Struct(">i")


class ConnectionLost(OSError):
    """The broker closed the connection or sent a response that does not match the request."""


def parse_servers(servers: str) -> list[tuple[str, int]]:
    """``host:port`` pairs of a ``bootstrap.servers`` list (``[v6]:port`` too)."""
    out: list[tuple[str, int]] = []
    for given in servers.split(","):
        address = given.strip().removeprefix("PLAINTEXT://").removeprefix("plaintext://")
        if not address:
            continue
        host, sep, port = address.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"bad broker address {address!r}: expected host:port")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError(f"no broker address in {servers!r}")
    return out


class BrokerConnection:
    """One TCP connection to a broker; ``close()`` when done (or use it as a context manager)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout: float,
        client_id: str = "strom",
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        """``security``: TLS and a SASL login before the first request (ConnectionError when
        the login fails)."""
        self.address = (host, port)
        self._client_id = client_id
        self._sock = socket.create_connection(self.address, timeout=timeout)
        self._next_correlation_id = 1
        self._buffer = bytearray()
        self._in_flight: deque[tuple[int, Callable[[memoryview], tuple[int, Any]]]] = deque()
        try:
            if security.ssl_context is not None:
                self._sock = security.ssl_context.wrap_socket(self._sock, server_hostname=host)
            if security.mechanism is not None:
                self._login(security)
        except BaseException:
            self._sock.close()
            raise

    def _login(self, security: ClientSecurity) -> None:
        exchange = sasl_exchange(security)
        body = next(exchange)
        while True:
            try:
                body = exchange.send(self.request(body))
            except StopIteration:
                return

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def request(self, body: RequestPayload, *, response_type: type[Any] | None = None) -> Any:
        """Send ``body`` and return the response body of the same API and version (kio's
        class, or ``response_type`` from ``strom.protocol.lenient``)."""
        self.send(body, response_type=response_type)
        return self.receive()

    def send(
        self,
        body: RequestPayload,
        *,
        response_type: type[Any] | None = None,
        reader: Callable[[memoryview], tuple[int, Any]] | None = None,
    ) -> None:
        """Send ``body`` without waiting: ``receive()`` returns the answers in order, so a
        caller can keep the next request in flight while it works on an answer.

        ``reader`` reads the response frame instead of kio (correlation id and body, as
        ``strom.protocol.fetch_answer.read``); views of the frame it returns are valid until
        the next ``receive()``, which reads the next answer into the same buffer."""
        correlation_id = self._next_correlation_id
        self._next_correlation_id += 1
        payload = encode_client_request(
            body, correlation_id=correlation_id, client_id=self._client_id
        )
        self._sock.sendall(frame_prefix(len(payload)) + payload)
        if reader is None:
            reader = partial(
                decode_response,
                api_key=body.__api_key__,
                api_version=body.__version__,
                body_type=response_type,
            )
        self._in_flight.append((correlation_id, reader))

    def receive(self) -> Any:
        """The response body of the oldest request sent and not yet answered."""
        correlation_id, reader = self._in_flight.popleft()
        (size,) = _SIZE.unpack(self._read(_SIZE.size))
        if size > len(self._buffer):
            self._buffer = bytearray(size)
        with memoryview(self._buffer) as buffer, buffer[:size] as frame:
            self._read_into(frame)
            with frame.toreadonly() as readonly:
                answered, response = reader(readonly)
        if answered != correlation_id:
            raise ConnectionLost(
                f"{self.address[0]}:{self.address[1]} answered correlation id {answered}, "
                f"expected {correlation_id}"
            )
        return response

    def _read(self, size: int) -> bytes:
        data = bytearray(size)
        self._read_into(memoryview(data))
        return bytes(data)

    def _read_into(self, view: memoryview) -> None:
        """Fill ``view`` from the socket (the answers are read into one buffer per connection,
        kept between answers: a Fetch answer of megabytes is not allocated anew each time)."""
        received, size = 0, len(view)
        while received < size:
            count = self._sock.recv_into(view[received:])
            if not count:
                raise ConnectionLost(
                    f"{self.address[0]}:{self.address[1]} closed the connection "
                    "(does the broker support this request version?)"
                )
            received += count
