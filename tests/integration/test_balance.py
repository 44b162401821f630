"""``strom balance`` on a real cluster: three brokers with a skewed placement, a fourth joins,
``strom balance execute`` moves a fair share onto it under throttles while a confluent-kafka
producer and consumer run; afterwards replica and leader counts per broker are within 10% of
even, no rack holds two replicas of a partition, and nothing was lost. Bad input moves nothing.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.cli.main import cli
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
    }
    racks = {b: {"broker.rack": rack} for b, rack in _RACKS.items()}
    with Cluster(brokers=4, controllers=1, config=settings, node_config=racks) as running:
        running.terminate(4)  # three brokers first; the fourth joins later
        running.wait_for(
            lambda: running.unfenced_brokers(via=[1]) == {1, 2, 3}, timeout=20, what="3 brokers"
        )
        yield running


def _assignment(admin: AdminClient) -> dict[tuple[str, int], tuple[list[int], int]]:
    topics = admin.list_topics(timeout=10).topics
    return {
        (name, p.id): (list(p.replicas), p.leader)
        for name, topic in topics.items()
        for p in topic.partitions.values()
    }


def _create(admin: AdminClient, topic: NewTopic) -> None:
    """Create ``topic``; a retried CreateTopics on a loaded machine may find it made already."""
    try:
        admin.create_topics([topic])[topic.topic].result(20)
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def _balance(cluster: Cluster, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, ["balance", *args, "--bootstrap-server", cluster.bootstrap_servers]
    )
    return result.exit_code, result.output


def test_a_new_broker_gets_a_fair_share_while_clients_run(cluster: Cluster) -> None:
    topic = unique_topic_name()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    _create(
        admin, NewTopic(topic, num_partitions=len(_SKEW), replica_assignment=list(_SKEW.values()))
    )
    servers = cluster.bootstrap_servers
    producer = Producer({"bootstrap.servers": servers, "acks": "all", "enable.idempotence": True})
    consumer = Consumer(
        {"bootstrap.servers": servers, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    errors: list[str] = []
    sent: list[int] = []
    seen: set[int] = set()
    stop = threading.Event()

    def delivered(error: KafkaError | None, message: object) -> None:
        if error is not None:
            errors.append(str(error))

    def produce() -> None:
        value = 0
        while not stop.is_set():
            producer.produce(topic, str(value).encode(), on_delivery=delivered)
            sent.append(value)
            value += 1
            producer.poll(0.002)
        producer.flush(30)

    def consume(until: threading.Event) -> None:
        while not until.is_set():
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is not None:
                errors.append(str(message.error()))
                continue
            seen.add(int(message.value() or b"-1"))

    done_consuming = threading.Event()
    threads = [
        threading.Thread(target=produce),
        threading.Thread(target=consume, args=(done_consuming,)),
    ]
    for thread in threads:
        thread.start()
    try:
        cluster.wait_for(lambda: len(seen) > 100, timeout=30, what="records flowing")
        cluster.restart(4)
        cluster.wait_for(
            lambda: cluster.unfenced_brokers(via=[1]) == {1, 2, 3, 4}, timeout=30, what="broker 4"
        )
        code, output = _balance(
            cluster,
            "execute",
            "--throttle",
            "2000000",
            "--max-concurrent-moves",
            "3",
            "--timeout",
            "120",
        )
        assert code == 0, output
        assert "balanced" in output
    finally:
        stop.set()
        threads[0].join(60)
    cluster.wait_for(lambda: set(sent) <= seen, timeout=30, what="every record consumed")
    done_consuming.set()
    threads[1].join(10)
    consumer.close()
    assert errors == []

    assignment = _assignment(admin)
    replicas = Counter(b for reps, _ in assignment.values() for b in reps)
    leaders = Counter(leader for _, leader in assignment.values())
    for counts in (replicas, leaders):
        average = sum(counts.values()) / 4
        assert all(abs(counts[b] - average) <= max(0.1 * average, 1) for b in (1, 2, 3, 4)), counts
    for reps, _ in assignment.values():
        racks = [_RACKS[b] for b in reps]
        assert len(set(racks)) == len(racks), assignment
    code, output = _balance(cluster, "status")
    assert code == 0 and "0 partition move(s) in progress" in output, output


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--add-broker", "9"], "--add-broker names broker 9, which is not in the cluster"),
        (
            ["--remove-broker", "2", "--remove-broker", "4"],
            "but the brokers span only 1 rack(s) (a): add a broker in another rack",
        ),
    ],
)
def test_bad_input_is_one_line_and_moves_nothing(
    cluster: Cluster, args: list[str], error: str
) -> None:
    if not cluster.nodes[4].alive:  # run alone, without the test above
        cluster.restart(4)
    cluster.wait_for(
        lambda: cluster.unfenced_brokers(via=[1]) == {1, 2, 3, 4}, timeout=30, what="broker 4"
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = unique_topic_name()
    _create(admin, NewTopic(topic, num_partitions=2, replication_factor=2))
    cluster.wait_for(lambda: (topic, 1) in _assignment(admin), timeout=10, what=topic)
    before = _assignment(admin)
    code, output = _balance(cluster, "execute", *args)
    assert code == 1
    assert error in output
    assert len(output.strip().splitlines()) == 1, output
    replicas = {tp: reps for tp, (reps, _) in before.items()}
    assert {tp: reps for tp, (reps, _) in _assignment(admin).items()} == replicas
