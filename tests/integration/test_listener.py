"""The listener and connections in-process, with handlers made for the test.

A Heartbeat v0 handler whose ``group_id`` says what to do: ``slow:<seconds>``, ``noresp`` (no
response, as produce with acks=0), ``fail`` (raises), ``file:<size>`` (a response made of bytes
and file regions), ``past-eof``, ``wait`` (until released), ``watch`` (notes when the connection
closes). Runs on uvloop and on asyncio's own
loop, since the sendfile path differs between them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import struct
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvloop
from kio.schema.api_versions.v0 import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v0 import HeartbeatRequest, HeartbeatResponse
from kio.schema.types import GroupId
from kio.static.primitive import i32

from strom.protocol.api import ApiKey, VersionRange, decode_response, encode_request
from strom.protocol.api import make_request_header as header_for
from strom.protocol.framing import frame_prefix
from strom.server.api.handler_table import (
    NO_RESPONSE,
    HandlerResult,
    HandlerTable,
    RequestContext,
)
from strom.server.api.response import Response
from strom.server.configs.node_config import HostPort
from strom.server.handlers.api_versions import ApiVersionsHandler
from strom.server.network.connection import ConnectionSettings
from strom.server.network.listener import Listener
from strom.server.network.writer import INLINE_MAX_BYTES

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "uvloop": uvloop.new_event_loop,
    "asyncio": asyncio.new_event_loop,
}


class Region:
    """A file region shaped like strom.storage's FileRegion, recording that it was closed."""

    def __init__(self, path: Path, position: int, length: int) -> None:
        self._fd = os.open(path, os.O_RDONLY)
        self.position = position
        self.length = length
        self.closed = False

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self._fd)


class ScriptedHandler:
    api_key = ApiKey.HEARTBEAT
    versions = VersionRange(0, 0)

    def __init__(self, data_file: Path) -> None:
        self.data_file = data_file
        self.started: list[str] = []
        self.regions: list[Region] = []
        self.release = asyncio.Event()
        self.closed: list[str] = []

    async def handle(self, context: RequestContext) -> HandlerResult:
        body = context.body
        assert isinstance(body, HeartbeatRequest)
        command, _, argument = body.group_id.partition(":")
        self.started.append(body.group_id)
        ok = HeartbeatResponse(error_code=ErrorCode.none)
        if command == "slow":
            await asyncio.sleep(float(argument))
        elif command == "noresp":
            return NO_RESPONSE
        elif command == "fail":
            raise RuntimeError("handler bug")
        elif command == "wait":
            await self.release.wait()
        elif command == "watch":
            context.when_closed(lambda: self.closed.append(context.connection_id))
        elif command in ("file", "past-eof"):
            size = self.data_file.stat().st_size
            length = int(argument) if command == "file" else size + 10
            first = Region(self.data_file, 0, min(length, size // 2))
            second = Region(self.data_file, first.length, length - first.length)
            self.regions += [first, second]
            # header v0 (correlation id), then the regions' bytes: not a Heartbeat body, but the
            # test reads it raw
            prefix = struct.pack(">i", context.request.correlation_id)
            return Response.of(prefix, first, b"|", second)
        return ok


def heartbeat(group_id: str) -> HeartbeatRequest:
    return HeartbeatRequest(group_id=GroupId(group_id), generation_id=i32(1), member_id="m")


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.correlation_id = 0

    @classmethod
    async def connect(cls, address: HostPort) -> Client:
        reader, writer = await asyncio.open_connection(address.host, address.port)
        return cls(reader, writer)

    def send(self, body: Any) -> int:
        self.correlation_id += 1
        header = header_for(body, correlation_id=self.correlation_id, client_id="t")
        payload = encode_request(header=header, body=body)
        self.writer.write(frame_prefix(len(payload)) + payload)
        return self.correlation_id

    async def read_frame(self, timeout: float = 5.0) -> bytes:
        size_bytes = await asyncio.wait_for(self.reader.readexactly(4), timeout)
        (size,) = struct.unpack(">i", size_bytes)
        return await asyncio.wait_for(self.reader.readexactly(size), timeout)

    async def read(self, api_key: ApiKey = ApiKey.HEARTBEAT, version: int = 0) -> tuple[int, Any]:
        return decode_response(await self.read_frame(), api_key=api_key, api_version=version)

    async def closed_by_peer(self, timeout: float = 5.0) -> bool:
        try:
            await asyncio.wait_for(self.reader.read(), timeout)  # returns only at EOF
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


Scenario = Callable[[Listener, ScriptedHandler], Awaitable[None]]


@pytest.fixture(params=sorted(LOOPS))
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., None]]:
    loop_factory = LOOPS[request.param]
    data_file = tmp_path / "segment.log"
    data_file.write_bytes(bytes(range(256)) * 40_000)  # ~10 MB

    def run_scenario(scenario: Scenario, *, max_in_flight: int = 64, sendfile: bool = True) -> None:
        async def main() -> None:
            registry = HandlerTable()
            registry.register(ApiVersionsHandler(registry))
            handler = ScriptedHandler(data_file)
            registry.register(handler)
            listener = Listener(
                address=HostPort("127.0.0.1", 0),
                registry=registry,
                settings=ConnectionSettings(
                    max_request_size=1 << 20, max_in_flight=max_in_flight, use_sendfile=sendfile
                ),
            )
            await listener.start()
            try:
                await scenario(listener, handler)
            finally:
                await listener.stop(timeout=2)

        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(main())

    yield run_scenario


def test_pipelined_slow_and_fast_requests_answer_in_order(run: Callable[..., None]) -> None:
    async def scenario(listener: Listener, handler: ScriptedHandler) -> None:
        client = await Client.connect(listener.bound_address)
        other = await Client.connect(listener.bound_address)
        commands = ["wait", "fast", "slow:0.1", "fast"]
        ids = [client.send(heartbeat(command)) for command in commands]
        while len(handler.started) < len(commands):
            await asyncio.sleep(0.01)
        # all four started at once: handlers run concurrently, in request order
        assert handler.started == commands
        # another connection is answered while this one's first request is still pending
        other.send(heartbeat("fast"))
        await other.read()
        assert not handler.release.is_set()
        handler.release.set()
        answered = [(await client.read())[0] for _ in ids]
        assert answered == ids
        await client.close()
        await other.close()

    run(scenario)


def test_a_handler_hears_when_its_connection_closes(run: Callable[..., None]) -> None:
    async def scenario(listener: Listener, handler: ScriptedHandler) -> None:
        client = await Client.connect(listener.bound_address)
        other = await Client.connect(listener.bound_address)
        for connection in (client, client, other):
            connection.send(heartbeat("watch"))
            await connection.read()
        assert handler.closed == []
        await client.close()
        while not handler.closed:
            await asyncio.sleep(0.01)
        assert len(handler.closed) == 2 and len(set(handler.closed)) == 1  # that one only
        await other.close()
        while len(handler.closed) < 3:
            await asyncio.sleep(0.01)

    run(scenario)


def test_no_response_is_skipped(run: Callable[..., None]) -> None:
    async def scenario(listener: Listener, handler: ScriptedHandler) -> None:
        client = await Client.connect(listener.bound_address)
        client.send(heartbeat("noresp"))
        second = client.send(heartbeat("fast"))
        client.send(heartbeat("noresp"))
        fourth = client.send(heartbeat("slow:0.05"))
        assert (await client.read())[0] == second
        assert (await client.read())[0] == fourth
        await client.close()

    run(scenario)


def test_handler_failure_closes_only_that_connection(
    run: Callable[..., None], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(listener: Listener, handler: ScriptedHandler) -> None:
        client = await Client.connect(listener.bound_address)
        other = await Client.connect(listener.bound_address)
        first = client.send(heartbeat("fast"))
        client.send(heartbeat("fail"))
        assert (await client.read())[0] == first
        assert await client.closed_by_peer()
        other.send(heartbeat("fast"))
        assert (await other.read())[1].error_code == ErrorCode.none
        await other.close()

    with caplog.at_level(logging.ERROR, logger="strom.server.network"):
        run(scenario)
    assert any("handling Heartbeat v0" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("sendfile", [True, False], ids=["sendfile", "copy"])
def test_file_regions_are_sent_in_place(
    run: Callable[..., None], sendfile: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real_sendfile = os.sendfile

    def counting_sendfile(out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        calls.append(count)
        return real_sendfile(out_fd, in_fd, offset, count)

    monkeypatch.setattr(os, "sendfile", counting_sendfile)

    async def scenario(listener: Listener, handler: ScriptedHandler) -> None:
        data = handler.data_file.read_bytes()
        client = await Client.connect(listener.bound_address)
        sizes = [7, 5_000_000, -1, 0, len(data)]  # -1: a plain response in between
        ids = [client.send(heartbeat(f"file:{size}" if size >= 0 else "fast")) for size in sizes]
        for correlation_id, size in zip(ids, sizes, strict=True):
            frame = await client.read_frame(timeout=20)
            assert struct.unpack_from(">i", frame)[0] == correlation_id
            if size < 0:
                continue
            half = min(size, len(data) // 2)
            assert frame[4:] == data[:half] + b"|" + data[half:size]
        assert all(region.closed for region in handler.regions)
        await client.close()

    run(scenario, sendfile=sendfile)
    assert bool(calls) == sendfile


def test_small_file_regions_go_out_with_the_frame(
    run: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regions adding up to at most INLINE_MAX_BYTES are read into the frame's own write (one
    send, one wake-up of the reader); larger ones are sent from the file."""
    calls: list[int] = []
    real_sendfile = os.sendfile

    def counting_sendfile(out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        calls.append(count)
        return real_sendfile(out_fd, in_fd, offset, count)

    monkeypatch.setattr(os, "sendfile", counting_sendfile)

    async def scenario(listener: Listener, handler: ScriptedHandler) -> None:
        data = handler.data_file.read_bytes()
        client = await Client.connect(listener.bound_address)
        for size, sent_from_file in ((1024, False), (INLINE_MAX_BYTES, False), (1 << 20, True)):
            calls.clear()
            correlation_id = client.send(heartbeat(f"file:{size}"))
            frame = await client.read_frame(timeout=20)
            assert struct.unpack_from(">i", frame)[0] == correlation_id
            assert frame[4:] == data[:size] + b"|"  # the handler's second region is empty
            assert bool(calls) == sent_from_file
        assert all(region.closed for region in handler.regions)
        await client.close()

    run(scenario)


def test_region_past_end_of_file_closes_the_connection(run: Callable[..., None]) -> None:
    async def scenario(listener: Listener, handler: ScriptedHandler) -> None:
        client = await Client.connect(listener.bound_address)
        client.send(heartbeat("past-eof"))
        assert await client.closed_by_peer()
        assert all(region.closed for region in handler.regions)
        other = await Client.connect(listener.bound_address)
        other.send(heartbeat("fast"))
        await other.read()
        await other.close()

    run(scenario)


def test_backpressure_with_a_small_in_flight_limit(run: Callable[..., None]) -> None:
    async def scenario(listener: Listener, handler: ScriptedHandler) -> None:
        client = await Client.connect(listener.bound_address)
        ids = [client.send(heartbeat("slow:0.01" if i % 3 else "fast")) for i in range(30)]
        answered = [(await client.read())[0] for _ in ids]
        assert answered == ids
        await client.close()

    run(scenario, max_in_flight=2)


def test_graceful_stop_finishes_in_flight_requests(run: Callable[..., None]) -> None:
    async def scenario(listener: Listener, handler: ScriptedHandler) -> None:
        address = listener.bound_address
        client = await Client.connect(address)
        idle = await Client.connect(address)
        correlation_id = client.send(heartbeat("slow:0.3"))
        await asyncio.sleep(0.05)
        stopping = asyncio.ensure_future(listener.stop(timeout=5))
        answered, response = await client.read()
        assert answered == correlation_id
        assert response.error_code == ErrorCode.none
        assert await client.closed_by_peer()
        assert await idle.closed_by_peer()
        await stopping
        assert listener.connection_count == 0
        with pytest.raises(OSError):
            await Client.connect(address)

    run(scenario)


def test_stop_aborts_requests_that_do_not_finish(run: Callable[..., None]) -> None:
    async def scenario(listener: Listener, handler: ScriptedHandler) -> None:
        client = await Client.connect(listener.bound_address)
        client.send(heartbeat("wait"))
        await asyncio.sleep(0.05)
        await listener.stop(timeout=0.2)  # returns although the handler never finishes
        assert await client.closed_by_peer()

    run(scenario)


def test_api_versions_lists_every_registered_handler(run: Callable[..., None]) -> None:
    async def scenario(listener: Listener, handler: ScriptedHandler) -> None:
        client = await Client.connect(listener.bound_address)
        client.send(ApiVersionsRequestV0())
        _, response = await client.read(ApiKey.API_VERSIONS, 0)
        assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
            (ApiKey.HEARTBEAT, 0, 0),
            (ApiKey.API_VERSIONS, 0, 4),
        ]
        await client.close()

    run(scenario)


def test_registry_refuses_versions_outside_kafkas_table(tmp_path: Path) -> None:
    class TooNew(ScriptedHandler):
        versions = VersionRange(0, 5)

    registry = HandlerTable()
    with pytest.raises(ValueError, match="outside the v0-v4"):
        registry.register(TooNew(tmp_path))
    registry.register(ScriptedHandler(tmp_path))
    with pytest.raises(ValueError, match="already registered"):
        registry.register(ScriptedHandler(tmp_path))
