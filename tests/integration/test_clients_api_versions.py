"""Real clients' own codecs negotiate ApiVersions with a running ``strom server``.

(librdkafka's negotiation is in ``test_network.py``.) Only ApiVersions is served so far, so the
clients are driven only as far as that exchange.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

import pytest
from aiokafka.conn import create_conn
from aiokafka.protocol.admin import ApiVersionRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from strom_harness import StromServer


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            assert chunk, "connection closed"
            data += chunk
        return data

    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


@pytest.mark.parametrize("version", range(5))
def test_kafka_python_codec(strom_server: StromServer, version: int) -> None:
    software: dict[str, Any] = (
        {"client_software_name": "kafka-python", "client_software_version": "3.0.12"}
        if version >= 3
        else {}
    )
    request = ApiVersionsRequest(version=version, **software)
    request.with_header(correlation_id=100 + version, client_id="kafka-python-3.0.12")
    with socket.create_connection((strom_server.host, strom_server.port), timeout=5) as sock:
        sock.sendall(request.encode(header=True, framed=True))
        response = ApiVersionsResponse.decode(_read_frame(sock), version=version, header=True)
    assert response._header.correlation_id == 100 + version
    assert response.error_code == 0
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [(18, 0, 4)]


def test_aiokafka_connection(strom_server: StromServer) -> None:
    async def negotiate() -> Any:
        conn = await create_conn(strom_server.host, strom_server.port)
        try:
            return await conn.send(ApiVersionRequest())
        finally:
            conn.close()

    response = asyncio.run(negotiate())
    assert response.error_code == 0
    assert [tuple(entry) for entry in response.api_versions] == [(18, 0, 4)]
