"""KIP-951 on a real cluster: a Produce v10+ or Fetch v16+ sent to a broker that does not lead the
partition is answered NOT_LEADER_OR_FOLLOWER with the current leader, its epoch and its endpoint;
an idempotent confluent-kafka producer keeps producing across a leader change, every record
read back once."""

from __future__ import annotations

import datetime
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from data_clients import consume, produce_request, records_batch
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta, i64

from strom.client.blocking import BrokerConnection
from strom.testing import Cluster, unique_topic_name

pytestmark = pytest.mark.xdist_group("cluster")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=2, controllers=1) as running:
        yield running


def _create(cluster: Cluster, prefix: str) -> str:
    name = unique_topic_name(prefix)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic(name, 1, 2)], operation_timeout=30)
    futures[name].result(timeout=60)
    return name


def _partition_0(cluster: Cluster, broker_id: int, name: str) -> tuple[int, int, uuid.UUID]:
    """Leader id, leader epoch and topic id of partition 0 as a broker's Metadata has them."""
    node = cluster.nodes[broker_id]
    assert node.broker_port is not None
    request = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name=TopicName(name)),),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    with BrokerConnection(node.host, node.broker_port, timeout=10) as connection:
        (topic,) = connection.request(request).topics
    if topic.error_code != ErrorCode.none or not topic.partitions:
        return -1, -1, uuid.UUID(int=0)
    (partition,) = topic.partitions
    return int(partition.leader_id), int(partition.leader_epoch), uuid.UUID(str(topic.topic_id))


def _leader(cluster: Cluster, name: str, *, not_on: int = -1) -> tuple[int, int, uuid.UUID]:
    """Partition 0's leader, epoch and topic id, once every live broker agrees on a leader
    other than ``not_on``."""
    seen: set[tuple[int, int, uuid.UUID]] = set()

    def agreed() -> bool:
        seen.clear()
        seen.update(
            _partition_0(cluster, b, name) for b in cluster.broker_ids if cluster.nodes[b].alive
        )
        return len(seen) == 1 and next(iter(seen))[0] not in (-1, not_on)

    cluster.wait_for(agreed, timeout=30, what=f"every broker to know the leader of {name}")
    return next(iter(seen))


def _fetch(topic_id: uuid.UUID, epoch: int) -> FetchRequest:
    return FetchRequest(
        max_wait=i32Timedelta.parse(datetime.timedelta(0)),
        min_bytes=i32(1),
        topics=(
            FetchTopic(
                topic_id=topic_id,
                partitions=(
                    FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(epoch),
                        fetch_offset=i64(0),
                        partition_max_bytes=i32(1 << 20),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )


def _endpoints(answer: Any) -> list[tuple[int, str, int]]:
    return [(int(e.node_id), e.host, int(e.port)) for e in answer.node_endpoints]


def test_a_non_leader_names_the_current_leader_and_its_endpoint(cluster: Cluster) -> None:
    name = _create(cluster, "hint")
    leader, epoch, topic_id = _leader(cluster, name)
    follower = cluster.nodes[next(b for b in cluster.broker_ids if b != leader)]
    assert follower.broker_port is not None
    node = cluster.nodes[leader]
    expected_endpoint = [(leader, node.host, node.broker_port)]
    with BrokerConnection(follower.host, follower.broker_port, timeout=10) as connection:
        produced = connection.request(produce_request(12, name, records_batch([b"x"]), acks=-1))
        fetched = connection.request(_fetch(topic_id, epoch))
        old = connection.request(produce_request(9, name, records_batch([b"x"]), acks=-1))
    (partition,) = produced.responses[0].partition_responses
    assert partition.error_code == ErrorCode.not_leader_or_follower
    assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (
        leader,
        epoch,
    )
    assert _endpoints(produced) == expected_endpoint
    (read,) = fetched.responses[0].partitions
    assert read.error_code == ErrorCode.not_leader_or_follower
    assert (read.current_leader.leader_id, read.current_leader.leader_epoch) == (leader, epoch)
    assert _endpoints(fetched) == expected_endpoint
    # before v10 the answer has no such fields, and is still an answer
    assert old.responses[0].partition_responses[0].error_code == ErrorCode.not_leader_or_follower


def test_a_stale_leader_epoch_gets_the_current_leader(cluster: Cluster) -> None:
    """FENCED_LEADER_EPOCH on the leader itself: a fetch from before the last election."""
    name = _create(cluster, "fenced")
    first, _, _ = _leader(cluster, name)
    cluster.terminate(first)  # a controlled shutdown moves the leadership
    try:
        leader, epoch, topic_id = _leader(cluster, name, not_on=first)
        node = cluster.nodes[leader]
        assert node.broker_port is not None and epoch > 0
        with BrokerConnection(node.host, node.broker_port, timeout=10) as connection:
            fetched = connection.request(_fetch(topic_id, epoch - 1))
    finally:
        cluster.restart(first)
    (read,) = fetched.responses[0].partitions
    assert read.error_code == ErrorCode.fenced_leader_epoch
    assert (read.current_leader.leader_id, read.current_leader.leader_epoch) == (leader, epoch)
    assert _endpoints(fetched) == [(leader, node.host, node.broker_port)]


def test_a_producer_keeps_producing_across_a_leader_change(cluster: Cluster) -> None:
    """An idempotent producer goes on producing while the leadership moves (a controlled
    shutdown of the leader): every record is acknowledged and read back exactly once, in order.

    The move leaves batches that the old leader appended and its follower copied, but that the
    old leader answered NOT_LEADER_OR_FOLLOWER (or never answered) before its high watermark
    covered them: the producer sends them again to the new leader, which has them already.
    Without idempotence they are in the log twice, as Kafka's would be (acks=all is
    at-least-once); with it the new leader knows them by their sequence numbers."""
    name = _create(cluster, "move")
    leader, _, _ = _leader(cluster, name)
    failures: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    sent = 0

    def produce_for(seconds: float) -> None:
        nonlocal sent
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            producer.produce(name, value=b"%d" % sent, on_delivery=delivered)
            sent += 1
            producer.poll(0.01)

    produce_for(1.0)
    producing = threading.Thread(target=produce_for, args=(3.0,))
    producing.start()  # through the whole move: the old leader still answers while it hands over
    cluster.terminate(leader)
    try:
        producing.join()
        assert producer.flush(30) == 0
    finally:
        cluster.restart(leader)
    assert failures == []
    values = [m.value() for m in consume(cluster.bootstrap_servers, name, count=sent)]
    assert values == [b"%d" % i for i in range(sent)]  # a copy would push the last one out
