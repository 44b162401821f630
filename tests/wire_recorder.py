"""A TCP proxy in front of a real broker that records every request and its response.

Clients are pointed at the proxy, and the broker advertises the proxy's address, so every
connection a client makes (bootstrap, partition leaders, coordinators) passes through it. Frames
are forwarded unchanged; each request is paired with its response by correlation id.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode
from strom_harness import StromServer, start_strom_server

from strom.protocol.api import decode_response

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

    def response_body(self) -> Any:
        """The answer as kio decodes it (None while unanswered)."""
        if self.response is None:
            return None
        _, body = decode_response(self.response, api_key=self.api_key, api_version=self.api_version)
        return body

    def answered_with(self, error: ErrorCode) -> bool:
        """Whether any ``error_code`` of the answer is ``error``."""
        return any(code == error for _, code in fields_named(self.response_body(), "error_code"))


def fields_named(entity: Any, name: str, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every field called ``name`` in a kio entity, with where it is."""
    if isinstance(entity, tuple):
        for index, item in enumerate(entity):
            yield from fields_named(item, name, f"{path}[{index}]")
    elif dataclasses.is_dataclass(entity):
        for field_ in dataclasses.fields(entity):
            value = getattr(entity, field_.name)
            if field_.name == name:
                yield f"{path}.{name}", value
            else:
                yield from fields_named(value, name, f"{path}.{field_.name}")


@dataclass
class WireRecorder:
    """``with WireRecorder() as recorder:`` listens on ``recorder.port`` and forwards each
    connection to ``upstream`` (host, port), which may be set after the proxy has started (the
    broker must know the proxy's port to advertise it)."""

    upstream: tuple[str, int] = ("127.0.0.1", 0)
    exchanges: list[Exchange] = field(default_factory=list)
    port: int = 0

    def __post_init__(self) -> None:
        self._changed = threading.Condition()
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

    @property
    def address(self) -> str:
        """Where clients connect: ``127.0.0.1:<port>``."""
        return f"127.0.0.1:{self.port}"

    def recorded(self) -> list[Exchange]:
        with self._changed:
            return list(self.exchanges)

    def wait_for(
        self, condition: Callable[[list[Exchange]], bool], what: str, *, timeout: float = 20.0
    ) -> list[Exchange]:
        """Wait until ``condition`` holds for the exchanges so far (each request and each answer
        wakes it); return them. ``what`` names the condition in the timeout's message."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition(list(self.exchanges)):
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"timed out after {timeout:.0f} s waiting until {what}"
                self._changed.wait(remaining)
            return list(self.exchanges)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection(*self.upstream)
        except OSError:  # the broker has stopped: hang up, as it would
            client_w.close()
            return
        pending: dict[int, Exchange] = {}

        def request(frame: bytes) -> None:
            exchange = Exchange(frame)
            pending[exchange.correlation_id] = exchange
            self.exchanges.append(exchange)

        def response(frame: bytes) -> None:
            (correlation_id,) = _SIZE.unpack_from(frame, 0)
            exchange = pending.pop(correlation_id, None)
            if exchange is not None:
                exchange.response = frame

        try:
            await asyncio.gather(
                self._forward(client_r, broker_w, request),
                self._forward(broker_r, client_w, response),
            )
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            for writer in (client_w, broker_w):
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

    async def _forward(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        record: Callable[[bytes], None],
    ) -> None:
        """Pass frames on unchanged, recording each (under the lock, waking waiters) first."""
        while frame := await _read_frame(reader):
            with self._changed:
                record(frame)
                self._changed.notify_all()
            writer.write(_SIZE.pack(len(frame)) + frame)
            await writer.drain()
        writer.close()


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    try:
        (size,) = _SIZE.unpack(await reader.readexactly(4))
    except asyncio.IncompleteReadError:
        return None
    return await reader.readexactly(size)


@contextlib.contextmanager
def recorded_server(
    data_dir: Path, *, overrides: Mapping[str, str] | None = None
) -> Iterator[tuple[StromServer, WireRecorder]]:
    """A ``strom server`` process whose clients all pass through a recorder: connect them to
    ``recorder.address`` (the broker advertises it)."""
    with WireRecorder() as recorder:
        settings = {**(overrides or {}), "advertised.listeners": f"PLAINTEXT://{recorder.address}"}
        server = start_strom_server(data_dir=data_dir, cwd=data_dir.parent, overrides=settings)
        recorder.upstream = (server.host, server.port)
        try:
            yield server, recorder
        finally:
            if server.process.poll() is None:
                server.stop(signal.SIGTERM)
