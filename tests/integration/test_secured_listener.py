"""Secured listeners in-process: who each request comes from (``RequestContext.principal``),
file regions under TLS (copied, not sent with sendfile), on uvloop and on asyncio's loop."""

from __future__ import annotations

import asyncio
import os
import ssl
import struct
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import pytest
import uvloop
from kio.schema.heartbeat.v0 import HeartbeatRequest, HeartbeatResponse
from kio.schema.types import GroupId
from kio.static.primitive import i32

from strom.client.async_client import NodeConnection
from strom.client.security import ClientSecurity
from strom.common import ErrorCode
from strom.protocol.api import ApiKey, VersionRange, encode_request, make_request_header
from strom.protocol.framing import frame_prefix
from strom.security.principal import KafkaPrincipal
from strom.security.principal_mapping import PrincipalMapper
from strom.security.sasl import PlainServer
from strom.security.sasl_authenticator import SaslAuthenticator
from strom.server.api.handler_table import HandlerResult, HandlerTable, RequestContext
from strom.server.api.response import Response
from strom.server.auth.listener_security import ListenerSecurity
from strom.server.configs.node_config import HostPort
from strom.server.handlers.api_versions import ApiVersionsHandler
from strom.server.network.connection import ConnectionSettings
from strom.server.network.listener import Listener
from strom.server.network.sasl_authenticate import SaslAuthenticateHandler
from strom.server.network.sasl_handshake import SaslHandshakeHandler
from strom.testing.certificates import CertificateAuthority

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "uvloop": uvloop.new_event_loop,
    "asyncio": asyncio.new_event_loop,
}


class Region:
    def __init__(self, path: Path, length: int) -> None:
        self._fd = os.open(path, os.O_RDONLY)
        self.position, self.length = 0, length

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        os.close(self._fd)


class Recorder:
    """Heartbeat v0: records who asked; ``file`` answers with a region of ``data``."""

    api_key = ApiKey.HEARTBEAT
    versions = VersionRange(0, 0)

    def __init__(self, data: Path) -> None:
        self.data = data
        self.principals: list[KafkaPrincipal] = []
        self.connections: list[str] = []

    async def handle(self, context: RequestContext) -> HandlerResult:
        self.principals.append(context.principal)
        self.connections.append(context.connection_id)
        body = context.body
        assert isinstance(body, HeartbeatRequest)
        if body.group_id == "file":
            prefix = struct.pack(">i", context.request.correlation_id)
            return Response.of(prefix, Region(self.data, self.data.stat().st_size))
        return HeartbeatResponse(error_code=ErrorCode.none)


listeners: dict[int, Listener] = {}
"""The listeners ``serve`` runs, by port (for scenarios that look at them)."""


def listener_count(address: HostPort) -> int:
    return listeners[address.port].connection_count


def heartbeat(group_id: str = "g") -> HeartbeatRequest:
    return HeartbeatRequest(group_id=GroupId(group_id), generation_id=i32(1), member_id="m")


def serve(
    loop_name: str,
    security: ListenerSecurity,
    data: Path,
    client: Callable[[HostPort, Recorder], Awaitable[None]],
) -> Recorder:
    registry = HandlerTable()
    recorder = Recorder(data)
    for handler in (
        ApiVersionsHandler(registry),
        SaslHandshakeHandler(),
        SaslAuthenticateHandler(),
        recorder,
    ):
        registry.register(handler)

    async def main() -> None:
        listener = Listener(
            address=HostPort("127.0.0.1", 0),
            registry=registry,
            settings=ConnectionSettings(max_request_size=1 << 20),
            security=security,
        )
        await listener.start()
        listeners[listener.bound_address.port] = listener
        try:
            await client(listener.bound_address, recorder)
        finally:
            await listener.stop(timeout=2)

    loop = LOOPS[loop_name]()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    return recorder


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority()


def server_tls(ca: CertificateAuthority, tmp_path: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    issued = ca.issue("127.0.0.1", hosts=("127.0.0.1",))
    key, chain = issued.write_pem(tmp_path, "server")
    context.load_cert_chain(chain, key)
    context.load_verify_locations(cadata=ca.pem)
    context.verify_mode = ssl.CERT_OPTIONAL
    return context


def client_tls(ca: CertificateAuthority, tmp_path: Path, name: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca.pem)
    if name is not None:
        key, chain = ca.issue(name, client=True).write_pem(tmp_path, name)
        context.load_cert_chain(chain, key)
    return context


@pytest.mark.parametrize("loop_name", sorted(LOOPS))
def test_tls_names_clients_by_certificate_and_copies_file_regions(
    loop_name: str, ca: CertificateAuthority, tmp_path: Path
) -> None:
    data = tmp_path / "segment"
    data.write_bytes(os.urandom(300_000))
    security = ListenerSecurity(
        ssl_context=server_tls(ca, tmp_path), principal_mapper=PrincipalMapper("DEFAULT")
    )
    answers: list[bytes] = []

    async def client(address: HostPort, _: Recorder) -> None:
        for name in ("alice", None):
            tls = ClientSecurity(ssl_context=client_tls(ca, tmp_path, name))
            connection = NodeConnection(address.host, address.port, security=tls)
            await connection.request(heartbeat())
            await connection.close()
        reader, writer = await asyncio.open_connection(
            address.host, address.port, ssl=client_tls(ca, tmp_path, None)
        )
        body = heartbeat("file")
        frame = encode_request(
            header=make_request_header(body, correlation_id=7, client_id="t"), body=body
        )
        writer.write(frame_prefix(len(frame)) + frame)
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        answers.append(await reader.readexactly(size))
        writer.close()

    recorder = serve(loop_name, security, data, client)
    assert [str(p) for p in recorder.principals[:2]] == ["User:CN=alice", "User:ANONYMOUS"]
    assert answers == [struct.pack(">i", 7) + data.read_bytes()]


@pytest.mark.parametrize("loop_name", sorted(LOOPS))
def test_sasl_names_clients_by_user_and_refuses_others(loop_name: str, tmp_path: Path) -> None:
    users = {"alice": "alice-secret"}
    security = ListenerSecurity(
        sasl=partial(
            SaslAuthenticator, mechanisms={"PLAIN": partial(PlainServer, users)}, max_reauth_ms=0
        )
    )
    outcomes: list[str] = []

    async def client(address: HostPort, _: Recorder) -> None:
        good = ClientSecurity(mechanism="PLAIN", username="alice", password="alice-secret")
        connection = NodeConnection(address.host, address.port, security=good)
        await connection.request(heartbeat())
        await connection.close()
        bad = ClientSecurity(mechanism="PLAIN", username="alice", password="nope")
        connection = NodeConnection(address.host, address.port, security=bad)
        try:
            await connection.request(heartbeat())
        except ConnectionError as error:
            outcomes.append(str(error))
        await connection.close()

    recorder = serve(loop_name, security, tmp_path / "unused", client)
    assert [str(p) for p in recorder.principals] == ["User:alice"]
    assert outcomes and "Invalid username or password" in outcomes[0]


def test_node_clients_reauthenticate_on_the_same_connection(tmp_path: Path) -> None:
    """KIP-368: past 85% of the session the server granted (1 s), strom's own client logs in
    again before its next request; the server would close a connection whose session ended."""
    security = ListenerSecurity(
        sasl=partial(
            SaslAuthenticator,
            mechanisms={"PLAIN": partial(PlainServer, {"alice": "alice-secret"})},
            max_reauth_ms=1000,
        )
    )

    async def client(address: HostPort, _: Recorder) -> None:
        alice = ClientSecurity(mechanism="PLAIN", username="alice", password="alice-secret")
        connection = NodeConnection(address.host, address.port, security=alice)
        for _round in range(3):
            await connection.request(heartbeat())
            await asyncio.sleep(0.6)
        await connection.close()

    recorder = serve("asyncio", security, tmp_path / "unused", client)
    assert [str(p) for p in recorder.principals] == ["User:alice"] * 3
    assert len(set(recorder.connections)) == 1, recorder.connections


@pytest.mark.parametrize("loop_name", sorted(LOOPS))
def test_failed_tls_handshakes_leave_nothing_behind(
    loop_name: str, ca: CertificateAuthority, tmp_path: Path
) -> None:
    security = ListenerSecurity(ssl_context=server_tls(ca, tmp_path), handshake_timeout=1.0)
    counts: list[int] = []

    async def client(address: HostPort, _: Recorder) -> None:
        for garbage in (b"\x16\x03\x01\x00\x05garbage" * 4, b"\x00\x00\x00\x10plaintext"):
            reader, writer = await asyncio.open_connection(address.host, address.port)
            writer.write(garbage)
            await asyncio.wait_for(reader.read(), 5)  # an alert at most, then closed
            writer.close()
        silent = await asyncio.open_connection(address.host, address.port)  # never handshakes
        await asyncio.sleep(1.5)
        assert await asyncio.wait_for(silent[0].read(), 5) == b""
        counts.append(listener_count(address))
        tls = ClientSecurity(ssl_context=client_tls(ca, tmp_path, None))
        connection = NodeConnection(address.host, address.port, security=tls)
        await connection.request(heartbeat())  # the listener still serves
        await connection.close()

    recorder = serve(loop_name, security, tmp_path / "unused", client)
    assert counts == [0]
    assert len(recorder.principals) == 1
