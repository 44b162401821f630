"""``strom.balancer.enable=true`` on a real cluster: three brokers in two racks with a skewed
placement (rack b is broker 2 alone, so it holds a replica of every partition until broker 4
joins rack b), a fourth joins, and the active controller alone moves a fair share onto it (under
throttles, a few partitions at a time) while a confluent-kafka producer and consumer run;
afterwards replica and leader counts per broker are within 10% of even, no rack holds two
replicas of a partition, no client saw an error and every record was read.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from balance_clients import Clients, assignment, create, uneven
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.testing import Cluster, unique_topic_name

pytestmark = pytest.mark.timeout(240)

_RACKS = {1: "a", 2: "b", 3: "a", 4: "b"}
_SKEW = {p: [1, 2] if p % 4 else [1, 3] for p in range(12)}  # p % 4 == 0: two replicas in rack a


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    settings = {
        "offsets.topic.num.partitions": 2,
        "offsets.topic.replication.factor": 2,
        "replication.quota.window.num": 2,
        "strom.balancer.enable": "true",
        "strom.balancer.check.interval.ms": 1000,
        "strom.balancer.max.concurrent.moves": 3,
        "strom.balancer.throttle.bytes.per.second": 2000000,
    }
    racks = {b: {"broker.rack": rack} for b, rack in _RACKS.items()}
    with Cluster(brokers=4, controllers=1, config=settings, node_config=racks) as running:
        running.terminate(4)  # three brokers first; the fourth joins later
        running.wait_for(
            lambda: running.unfenced_brokers(via=[1]) == {1, 2, 3}, timeout=20, what="3 brokers"
        )
        yield running


def test_the_controller_gives_a_new_broker_its_share_while_clients_run(cluster: Cluster) -> None:
    topic = unique_topic_name()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(
        admin, NewTopic(topic, num_partitions=len(_SKEW), replica_assignment=list(_SKEW.values()))
    )
    clients = Clients(cluster.bootstrap_servers, topic)
    try:
        cluster.wait_for(lambda: len(clients.seen) > 100, timeout=30, what="records flowing")
        cluster.restart(4)
        cluster.wait_for(
            lambda: not uneven(admin, (1, 2, 3, 4)), timeout=120, what="four brokers balanced"
        )
    except BaseException:
        clients.close()
        raise
    clients.finish(cluster)
    placed = assignment(admin)
    assert uneven(admin, (1, 2, 3, 4)) == [], placed
    for reps, _ in placed.values():
        racks = [_RACKS[b] for b in reps]
        assert len(set(racks)) == len(racks), placed
