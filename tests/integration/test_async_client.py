"""strom.client.async_client against a real broker: pipelining, timeouts, reconnects."""

from __future__ import annotations

import asyncio
import datetime
import socket
from pathlib import Path

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from strom.client.async_client import NodeClients, NodeConnection, RequestFailed
from strom.config import ServerConfig
from strom.server.node import Node
from strom.testing import AsyncBroker


def _api_versions() -> ApiVersionsRequest:
    return ApiVersionsRequest(client_software_name="strom-test", client_software_version="1")


def _long_poll(topic: str) -> FetchRequest:
    """A fetch at the end of an empty partition that waits 10 s for data."""
    return FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        isolation_level=i8(0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            FetchTopic(
                topic=TopicName(topic),
                partitions=(
                    FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(-1),
                        fetch_offset=i64(0),
                        log_start_offset=i64(-1),
                        partition_max_bytes=i32(1 << 20),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def test_pipelined_requests_are_answered_in_order() -> None:
    async def run() -> None:
        async with AsyncBroker() as broker:
            host, port = broker.bootstrap_servers.rsplit(":", 1)
            connection = NodeConnection(host, int(port))
            requests = [
                _api_versions()
                if i % 2
                else MetadataRequest(topics=None, include_topic_authorized_operations=False)
                for i in range(50)
            ]
            answers = await asyncio.gather(*(connection.request(r) for r in requests))
            for request, answer in zip(requests, answers, strict=True):
                assert answer.__api_key__ == request.__api_key__
            assert all(len(answer.brokers) == 1 for answer in answers[::2])
            await connection.close()

    asyncio.run(run())


def test_a_timed_out_request_fails_and_the_next_one_reconnects() -> None:
    async def run() -> None:
        async with AsyncBroker() as broker:
            topic = await asyncio.to_thread(broker.create_topic)
            host, port = broker.bootstrap_servers.rsplit(":", 1)
            connection = NodeConnection(host, int(port))
            waiting = asyncio.ensure_future(connection.request(_long_poll(topic), timeout=0.3))
            behind = asyncio.ensure_future(connection.request(_api_versions(), timeout=5))
            with pytest.raises(RequestFailed, match="no answer"):
                await waiting
            # A request queued behind the timed-out one on the same connection fails with it.
            with pytest.raises(RequestFailed):
                await behind
            assert not connection.connected
            answer = await connection.request(_api_versions())
            assert answer.error_code == 0
            await connection.close()

    asyncio.run(run())


def _server(data_dir: Path, port: int = 0) -> Node:
    return Node(
        ServerConfig({"log.dirs": str(data_dir), "listeners": f"PLAINTEXT://127.0.0.1:{port}"})
    )


def test_a_restarted_broker_is_reached_again(tmp_path: Path) -> None:
    async def run() -> None:
        first = _server(tmp_path)
        await first.start()
        port = first.bound_address.port
        clients = NodeClients(lambda node_id: ("127.0.0.1", port) if node_id == 1 else None)
        assert (await clients.request(1, _api_versions())).error_code == 0
        await first.stop()
        with pytest.raises(RequestFailed):
            await clients.request(1, _api_versions())
        again = _server(tmp_path, port)
        await again.start()
        try:
            assert (await clients.request(1, _api_versions())).error_code == 0
            with pytest.raises(RequestFailed, match="not known"):
                await clients.request(2, _api_versions())
        finally:
            await clients.close()
            await again.stop()

    asyncio.run(run())


def test_nothing_listening_fails_at_once() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def run() -> None:
        connection = NodeConnection("127.0.0.1", port, reconnect_backoff=0.0)
        with pytest.raises(RequestFailed, match="cannot connect"):
            await connection.request(_api_versions())

    asyncio.run(run())
