"""A TCP proxy in front of a real broker that records every request and its response.

Clients are pointed at the proxy, and the broker advertises the proxy's address, so every
connection a client makes (bootstrap, partition leaders, coordinators) passes through it. Frames
are forwarded unchanged; each request is paired with its response by correlation id.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from dataclasses import dataclass, field

_SIZE = struct.Struct(">i")


@dataclass
class Exchange:
    """One request frame and the broker's answer to it (without size prefixes)."""

    request: bytes
    response: bytes | None = None
    """None when the broker did not answer (acks=0 Produce) or the connection closed first."""

    @property
    def api_key(self) -> int:
        return int(struct.unpack_from(">h", self.request, 0)[0])

    @property
    def api_version(self) -> int:
        return int(struct.unpack_from(">h", self.request, 2)[0])

    @property
    def correlation_id(self) -> int:
        return int(struct.unpack_from(">i", self.request, 4)[0])


@dataclass
class WireRecorder:
    """``with WireRecorder() as recorder:`` listens on ``recorder.port`` and forwards each
    connection to ``upstream`` (host, port), which may be set after the proxy has started (the
    broker must know the proxy's port to advertise it)."""

    upstream: tuple[str, int] = ("127.0.0.1", 0)
    exchanges: list[Exchange] = field(default_factory=list)
    port: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None

    def __enter__(self) -> WireRecorder:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", self.port), self._loop
        ).result(5)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc_info: object) -> None:
        async def close(server: asyncio.Server) -> None:
            server.close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()

        assert self._server is not None
        asyncio.run_coroutine_threadsafe(close(self._server), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def recorded(self) -> list[Exchange]:
        with self._lock:
            return list(self.exchanges)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection(*self.upstream)
        except OSError:  # the broker has stopped: hang up, as it would
            client_w.close()
            return
        pending: dict[int, Exchange] = {}
        try:
            await asyncio.gather(
                self._forward_requests(client_r, broker_w, pending),
                self._forward_responses(broker_r, client_w, pending),
            )
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            for writer in (client_w, broker_w):
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

    async def _forward_requests(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        pending: dict[int, Exchange],
    ) -> None:
        while frame := await _read_frame(reader):
            exchange = Exchange(frame)
            pending[exchange.correlation_id] = exchange
            with self._lock:
                self.exchanges.append(exchange)
            writer.write(_SIZE.pack(len(frame)) + frame)
            await writer.drain()
        writer.close()

    @staticmethod
    async def _forward_responses(
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        pending: dict[int, Exchange],
    ) -> None:
        while frame := await _read_frame(reader):
            (correlation_id,) = _SIZE.unpack_from(frame, 0)
            exchange = pending.pop(correlation_id, None)
            if exchange is not None:
                exchange.response = frame
            writer.write(_SIZE.pack(len(frame)) + frame)
            await writer.drain()
        writer.close()


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    try:
        (size,) = _SIZE.unpack(await reader.readexactly(4))
    except asyncio.IncompleteReadError:
        return None
    return await reader.readexactly(size)
