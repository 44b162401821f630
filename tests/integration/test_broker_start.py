"""A listening broker is a ready one: a fresh ``strom server``'s very first answers, to a raw
Metadata request and to confluent-kafka's AdminClient, already list the broker (issue 24).

The server is started on a port chosen here and each client connects the moment the port
accepts, without waiting for the ready line. Before the fix the first Metadata answer listed no
broker in most fresh starts and librdkafka's create_topics then hung ("Partial response")."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from kio.schema.metadata.v12.request import MetadataRequest
from strom_harness import KafkaWire, StromServer, strom_server_args

from strom.common import ErrorCode
from strom.config import ServerConfig
from strom.metadata import MetadataDelta, MetadataImage
from strom.server.coordinator.coordinator_runtime import CoordinatorRuntime
from strom.server.node import Node
from strom.server.replica.replica_manager import ReplicaManager
from strom.testing import Cluster

STARTS = int(os.environ.get("STROM_TEST_FRESH_STARTS", "5"))
"""Fresh starts per test (the defect showed in most starts; more with the variable)."""
TIMEOUT = float(os.environ.get("STROM_TEST_START_TIMEOUT", "15"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PortTaken(Exception):
    """Another process took the chosen port before the server bound it."""


def first_connection(
    port: int, process: subprocess.Popen[str], output: Callable[[], str]
) -> KafkaWire:
    """The first connection the port accepts (the listener binds early; it may answer later)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            return KafkaWire("127.0.0.1", port, timeout=TIMEOUT)
        except ConnectionRefusedError:
            if process.poll() is not None and "in use" in output():
                raise PortTaken from None
            if time.monotonic() > deadline or process.poll() is not None:
                raise AssertionError(f"the port never accepted; output: {output()}") from None
            time.sleep(0.005)


def fresh_starts(tmp_path: Path) -> Iterator[tuple[StromServer, int, KafkaWire]]:
    """``STARTS`` fresh servers, each with its first accepted connection."""
    for index in range(STARTS):
        for attempt in range(3):
            port = free_port()
            server = StromServer(
                strom_server_args(
                    data_dir=tmp_path / f"data-{index}-{attempt}", listener=f"127.0.0.1:{port}"
                ),
                cwd=tmp_path,
            )
            try:
                output = partial(getattr, server, "output")
                with first_connection(port, server.process, output) as wire:
                    yield server, port, wire
                break
            except PortTaken:
                continue
            finally:
                server.stop(signal.SIGKILL if server.process.poll() is None else signal.SIGTERM)


def test_the_first_metadata_answer_lists_the_broker(tmp_path: Path) -> None:
    for server, port, wire in fresh_starts(tmp_path):
        response = wire.request(
            MetadataRequest(topics=None, include_topic_authorized_operations=False)
        )
        assert [(b.node_id, b.host, b.port) for b in response.brokers] == [
            (1, "127.0.0.1", port)
        ], server.output
        assert response.controller_id == 1


def test_create_topics_right_after_start(tmp_path: Path) -> None:
    for server, port, wire in fresh_starts(tmp_path):
        wire.close()
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        futures = admin.create_topics(
            [NewTopic("orders", num_partitions=3, replication_factor=1)],
            operation_timeout=TIMEOUT,
            request_timeout=TIMEOUT,
        )
        futures["orders"].result(timeout=TIMEOUT)
        assert "orders" in admin.list_topics(timeout=TIMEOUT).topics, server.output


def test_a_restarted_broker_acts_only_on_metadata_past_its_registration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leadership and the coordinators are handed no image older than this start's own
    registration: before the fix a restarted broker applied its pre-restart image at once
    (leading what it led before, loading coordinators from it)."""
    config = ServerConfig(
        {
            "log.dirs": str(tmp_path / "data"),
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "offsets.topic.num.partitions": "2",
            "transaction.state.log.num.partitions": "2",
        }
    )

    async def first_life() -> int:
        node = Node(config)
        await node.start()
        assert node.broker is not None
        assert await node.broker.group_coordinator.ensure_topic() is ErrorCode.none
        assert await node.broker.txn_coordinator.ensure_topic() is ErrorCode.none
        await node.broker.auto_topics.create(["orders"])
        epoch = node.broker.broker_epoch
        await node.stop()
        return epoch

    seen: list[tuple[str, int | None]] = []
    """(who was handed an image, that image's epoch of broker 1)."""

    def epoch_of(image: MetadataImage) -> int | None:
        broker = image.cluster.brokers.get(1)
        return None if broker is None else broker.epoch

    apply_metadata = ReplicaManager.apply_metadata
    on_metadata = CoordinatorRuntime.on_metadata

    def leadership(self: ReplicaManager, delta: MetadataDelta, image: MetadataImage) -> Any:
        seen.append(("leadership", epoch_of(image)))
        return apply_metadata(self, delta, image)

    def coordinator(
        self: CoordinatorRuntime[Any, Any], delta: MetadataDelta | None, image: MetadataImage
    ) -> None:
        seen.append((self.topic, epoch_of(image)))
        on_metadata(self, delta, image)

    async def second_life() -> int:
        monkeypatch.setattr(ReplicaManager, "apply_metadata", leadership)
        monkeypatch.setattr(CoordinatorRuntime, "on_metadata", coordinator)
        node = Node(config)
        await node.start()
        assert node.broker is not None
        epoch = node.broker.broker_epoch
        await node.stop()
        return epoch

    before = asyncio.run(first_life())
    after = asyncio.run(second_life())
    assert after > before
    assert {who for who, _ in seen} == {"leadership", "__consumer_offsets", "__transaction_state"}
    assert [(who, epoch) for who, epoch in seen if epoch != after] == []


@pytest.mark.parametrize("combined", [False, True], ids=["broker-only", "combined"])
def test_a_restarted_cluster_broker_answers_first_with_itself(
    tmp_path: Path, combined: bool
) -> None:
    """A broker of a cluster, stopped (so fenced) and started again: its first answer, at the
    first connection its port accepts, lists it. Before the fix it answered from the image it
    caught up with, in which it was still fenced."""
    with Cluster(brokers=2, controllers=1, combined=combined, data_dir=tmp_path) as cluster:
        broker = cluster.broker_ids[-1]
        node = cluster.nodes[broker]
        assert node.broker_port is not None
        for _ in range(2):
            cluster.terminate(broker)
            cluster.restart(broker, wait=False)
            assert node.process is not None
            with first_connection(
                node.broker_port, node.process, lambda: "\n".join(node.lines)
            ) as wire:
                response = wire.request(
                    MetadataRequest(topics=None, include_topic_authorized_operations=False)
                )
            assert broker in {b.node_id for b in response.brokers}, "\n".join(node.lines)
            cluster.wait_for(
                lambda: cluster.unfenced_brokers() == set(cluster.broker_ids),
                timeout=TIMEOUT,
                what="every broker unfenced",
            )
