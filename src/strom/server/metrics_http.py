"""The metrics listener (``metrics.listener``): ``GET /metrics`` in Prometheus's text format,
served by a small HTTP/1.1 handler on the node's own event loop.

Why on the loop, not prometheus_client's threaded server: a scrape reads what the loop
mutates (the partitions held, the groups, the quorum's state); read from another thread, a
dict that changes size under iteration fails the scrape, and a half-applied change would be
reported. On the loop a scrape is one synchronous step, consistent and lock-free; its cost is
bounded (a node of 10,000 partitions renders in well under 200 ms, see docs/benchmarks.md),
and everything else the listener does (reading the request, writing the answer) awaits like
any connection.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Final

__all__ = ["CONTENT_TYPE", "MetricsServer"]


CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
"""Prometheus's text exposition format."""
_READ_TIMEOUT: Final = 30.0
"""A connection that sends no request this long is closed."""
_MAX_HEAD: Final = 16384
"""A request line and headers larger than this are refused (431)."""
_MAX_BODY: Final = 65536
"""A request body larger than this closes the connection (nothing here takes one)."""
_REASONS: Final = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
}


class MetricsServer:
    """``GET /metrics`` (and HEAD) answered with ``render()``; other paths 404, other methods
    405 (with ``Allow``); keep-alive as HTTP/1.1 has it."""

    def __init__(self, host: str, port: int, render: Callable[[], bytes]) -> None:
        self._host = host
        self._port = port
        self._render = render
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def bind(self) -> None:
        """Take the address (OSError when it is in use) and serve."""
        self._server = await asyncio.start_server(self._connection, self._host, self._port)

    @property
    def url(self) -> str:
        """``http://HOST:PORT/metrics`` with the bound port."""
        if self._server is None:
            raise RuntimeError("the metrics listener is not bound")
        port = self._server.sockets[0].getsockname()[1]
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{port}/metrics"

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._connections):
            task.cancel()
        with contextlib.suppress(Exception):
            await server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while await self._one_request(reader, writer):
                pass
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            self._connections.discard(task)
            writer.close()

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request; whether the connection stays open for another."""
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_TIMEOUT)
        except asyncio.LimitOverrunError:
            await _answer(writer, 431, b"request head too large\n", keep_alive=False)
            return False
        except asyncio.IncompleteReadError:
            return False
        if len(head) > _MAX_HEAD:
            await _answer(writer, 431, b"request head too large\n", keep_alive=False)
            return False
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            await _answer(writer, 400, b"malformed request line\n", keep_alive=False)
            return False
        method, target, version = parts
        headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:] if line)
        }
        length = headers.get("content-length", "0")
        if not length.isdigit() or int(length) > _MAX_BODY:
            await _answer(writer, 413, b"request body not accepted\n", keep_alive=False)
            return False
        if int(length):
            await reader.readexactly(int(length))
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
        path = target.split("?", 1)[0]
        if path != "/metrics":
            await _answer(writer, 404, b"not found: the metrics are at /metrics\n", keep_alive)
        elif method not in ("GET", "HEAD"):
            extra = {"Allow": "GET, HEAD"}
            await _answer(writer, 405, f"{method} not allowed\n".encode(), keep_alive, extra)
        else:
            body = self._render()
            await _answer(
                writer,
                200,
                body,
                keep_alive,
                {"Content-Type": CONTENT_TYPE},
                send_body=method == "GET",
            )
        return keep_alive


async def _answer(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes,
    keep_alive: bool,
    headers: dict[str, str] | None = None,
    *,
    send_body: bool = True,
) -> None:
    fields = {"Content-Type": "text/plain; charset=utf-8", **(headers or {})}
    fields["Content-Length"] = str(len(body))
    fields["Connection"] = "keep-alive" if keep_alive else "close"
    head = f"HTTP/1.1 {status} {_REASONS[status]}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in fields.items()
    )
    writer.write(head.encode("latin-1") + b"\r\n")
    if send_body:
        writer.write(body)
    await writer.drain()
