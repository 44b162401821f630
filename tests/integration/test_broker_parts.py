"""The broker's small parts: meta.properties, addresses, an in-process Broker."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest
from kio.schema.api_versions.v0 import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.errors import ErrorCode
from strom_harness import KafkaWire

from strom.config import ServerConfig
from strom.server.configs.node_config import HostPort
from strom.server.meta_properties import (
    MetaPropertiesError,
    ensure_meta_properties,
    random_kafka_uuid,
    validate_kafka_uuid,
)
from strom.server.node import Node


def test_random_kafka_uuid() -> None:
    ids = {random_kafka_uuid() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:
        assert len(text) == 22
        assert not text.startswith("-")
        assert len(base64.urlsafe_b64decode(text + "==")) == 16
        assert validate_kafka_uuid(text) is None
    assert validate_kafka_uuid("short") is not None
    assert validate_kafka_uuid("!" * 22) is not None


def test_meta_properties_created_then_checked(tmp_path: Path) -> None:
    data_dir = tmp_path / "a" / "data"
    meta = ensure_meta_properties(data_dir, node_id=3)
    text = (data_dir / "meta.properties").read_text()
    assert f"cluster.id={meta.cluster_id}\n" in text
    assert "node.id=3\n" in text
    assert "version=1\n" in text
    assert ensure_meta_properties(data_dir, node_id=3) == meta
    with pytest.raises(MetaPropertiesError, match=r"belongs to node\.id=3"):
        ensure_meta_properties(data_dir, node_id=4)
    with pytest.raises(MetaPropertiesError, match="belongs to cluster"):
        ensure_meta_properties(data_dir, node_id=3, cluster_id=random_kafka_uuid())


def test_configured_cluster_id(tmp_path: Path) -> None:
    cluster_id = random_kafka_uuid()
    assert ensure_meta_properties(tmp_path, node_id=1, cluster_id=cluster_id).cluster_id == (
        cluster_id
    )
    with pytest.raises(MetaPropertiesError, match=r"cluster\.id: 'nope'"):
        ensure_meta_properties(tmp_path / "other", node_id=1, cluster_id="nope")


def test_unreadable_meta_properties(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("version=0\ncluster.id=x\nnode.id=1\n")
    with pytest.raises(MetaPropertiesError, match="version=0"):
        ensure_meta_properties(tmp_path, node_id=1)
    (tmp_path / "meta.properties").write_text("version=1\n")
    with pytest.raises(MetaPropertiesError, match=r"has no cluster\.id"):
        ensure_meta_properties(tmp_path, node_id=1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("localhost:9092", HostPort("localhost", 9092)),
        ("127.0.0.1:0", HostPort("127.0.0.1", 0)),
        ("[::1]:9092", HostPort("::1", 9092)),
        (":9092", HostPort("", 9092)),
    ],
)
def test_host_port(text: str, expected: HostPort) -> None:
    assert HostPort.parse(text) == expected
    assert str(expected) == text


@pytest.mark.parametrize("text", ["localhost", "localhost:x", "::1:9092", "h:70000"])
def test_bad_host_port(text: str) -> None:
    with pytest.raises(ValueError):
        HostPort.parse(text)


def test_broker_in_process(tmp_path: Path) -> None:
    config = ServerConfig(
        {"log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://127.0.0.1:0"}
    )
    broker = Node(config)

    async def scenario() -> None:
        await broker.start()
        address = broker.bound_address
        assert address.port > 0
        assert broker.broker is not None
        assert broker.broker.advertised_address("PLAINTEXT") == HostPort("127.0.0.1", address.port)
        assert len(broker.cluster_id) == 22

        def ask() -> int:
            with KafkaWire(address.host, address.port) as wire:
                return int(wire.request(ApiVersionsRequestV0()).error_code)

        assert await asyncio.to_thread(ask) == ErrorCode.none
        await broker.stop()
        await broker.stop()  # idempotent

    asyncio.run(scenario())
    with pytest.raises(RuntimeError, match="not started"):
        _ = broker.bound_address
