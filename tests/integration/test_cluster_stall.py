"""One faulted broker must not stall the cluster (issue 25, part 3).

Three brokers and one controller, RF 3, min ISR 2. A broker is paused (SIGSTOP) or cut off
from the network; acks=all writes to every partition the faulted broker does not lead, and to
those it led once they move, must still be acknowledged once the controller fences it
(``broker.session.timeout.ms``: 4 s here), long before a hung fetch to it times out or it
falls out of sync by lag: both ``replica.socket.timeout.ms`` and ``replica.lag.time.max.ms``
are set far beyond the producers' delivery timeout, so waiting for either fails the test.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from strom.testing import Cluster, netns_unavailable, unique_topic_name

pytestmark = pytest.mark.xdist_group("cluster")

_PARTITIONS = 6
_DELIVERY_TIMEOUT_MS = 20_000
"""Well past the fencing (4 s), well before the fetch and lag timeouts (120 s)."""
_SLOW = {
    "replica.socket.timeout.ms": 120_000,
    "replica.lag.time.max.ms": 120_000,
    "min.insync.replicas": 2,
}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3, controllers=1, config=_SLOW) as running:
        yield running


@pytest.fixture
def netns_cluster() -> Iterator[Cluster]:
    reason = netns_unavailable()
    if reason is not None:
        pytest.skip(reason)
    with Cluster(brokers=3, controllers=1, config=_SLOW, network="netns") as running:
        yield running


def _topic_with_leaders(cluster: Cluster) -> tuple[str, dict[int, int]]:
    """A new topic of RF 3 written once to every partition; partition -> leader."""
    topic = unique_topic_name("stall")
    admin = AdminClient(cluster.admin_config())
    futures = admin.create_topics([NewTopic(topic, _PARTITIONS, 3)], operation_timeout=30)
    futures[topic].result(timeout=60)
    assert _produce(cluster, topic, range(_PARTITIONS)) == {}
    metadata = admin.list_topics(topic, timeout=20).topics[topic]
    return topic, {p.id: p.leader for p in metadata.partitions.values()}


def _produce(cluster: Cluster, topic: str, partitions: Iterable[int]) -> dict[int, str]:
    """One acks=all write to each partition; partition -> error of the writes not acknowledged
    within the delivery timeout."""
    failed: dict[int, str] = {}

    def report(error: KafkaError | None, message: object) -> None:
        if error is not None:
            failed[message.partition()] = error.str()  # type: ignore[attr-defined]

    producer = Producer(
        {
            **cluster.producer_config(),
            "acks": "all",
            "enable.idempotence": True,
            "message.timeout.ms": _DELIVERY_TIMEOUT_MS,
            "socket.timeout.ms": 5_000,
            "topic.metadata.refresh.interval.ms": 1_000,
        }
    )
    for partition in partitions:
        producer.produce(topic, b"x", partition=partition, on_delivery=report)
    assert producer.flush(_DELIVERY_TIMEOUT_MS / 1000 + 10) == 0
    return failed


def _writes_go_on_without(
    cluster: Cluster, topic: str, leaders: dict[int, int], faulted: int
) -> None:
    """Acknowledged writes to the partitions others lead, then to all (the faulted broker's
    move to another leader)."""
    others = [p for p, leader in sorted(leaders.items()) if leader != faulted]
    assert others, leaders
    assert _produce(cluster, topic, others) == {}
    assert _produce(cluster, topic, range(_PARTITIONS)) == {}


def test_a_paused_broker_does_not_stall_the_partitions_others_lead(cluster: Cluster) -> None:
    topic, leaders = _topic_with_leaders(cluster)
    faulted = 3
    cluster.pause(faulted)
    try:
        _writes_go_on_without(cluster, topic, leaders, faulted)
    finally:
        cluster.resume(faulted)


def test_a_cut_off_broker_does_not_stall_the_partitions_others_lead(
    netns_cluster: Cluster,
) -> None:
    cluster = netns_cluster
    topic, leaders = _topic_with_leaders(cluster)
    faulted = 3
    cluster.nemesis.isolate(faulted)
    try:
        _writes_go_on_without(cluster, topic, leaders, faulted)
    finally:
        cluster.nemesis.heal()
