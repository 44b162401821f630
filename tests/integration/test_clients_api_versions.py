"""Real clients' own codecs negotiate ApiVersions with a running ``strom server``, then ask for
Metadata with what they negotiated.

(librdkafka's negotiation is in ``test_network.py``.)
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

import pytest
from aiokafka.client import AIOKafkaClient
from aiokafka.conn import create_conn
from aiokafka.protocol.admin import ApiVersionRequest
from kafka import KafkaConsumer
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from strom_harness import StromServer

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey, VersionRange


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
    advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert advertised[ApiKey.API_VERSIONS] == (0, 4)
    assert advertised[ApiKey.METADATA] == (0, 13)
    for api_key, (low, high) in advertised.items():
        assert VersionRange(low, high).issubset(KAFKA_BROKER_VERSIONS[ApiKey(api_key)])


def test_kafka_python_metadata(strom_server: StromServer) -> None:
    consumer = KafkaConsumer(bootstrap_servers=strom_server.bootstrap, client_id="strom-tests")
    try:
        assert isinstance(consumer.topics(), set)  # a Metadata request for every topic
        brokers = consumer._client.cluster.brokers()
        assert [(b.node_id, b.host, b.port) for b in brokers] == [
            (1, strom_server.host, strom_server.port)
        ]
    finally:
        consumer.close()


def test_aiokafka_connection(strom_server: StromServer) -> None:
    async def negotiate() -> Any:
        conn = await create_conn(strom_server.host, strom_server.port)
        try:
            return await conn.send(ApiVersionRequest())
        finally:
            conn.close()

    response = asyncio.run(negotiate())
    assert response.error_code == 0
    advertised = {entry[0]: (entry[1], entry[2]) for entry in response.api_versions}
    assert advertised[ApiKey.API_VERSIONS] == (0, 4)
    assert advertised[ApiKey.METADATA] == (0, 13)


def test_aiokafka_metadata(strom_server: StromServer) -> None:
    async def bootstrap() -> list[tuple[int, str, int]]:
        client = AIOKafkaClient(bootstrap_servers=strom_server.bootstrap)
        await client.bootstrap()  # ApiVersions, then Metadata
        try:
            return [(b.nodeId, b.host, b.port) for b in client.cluster.brokers()]
        finally:
            await client.close()

    assert asyncio.run(bootstrap()) == [(1, strom_server.host, strom_server.port)]
