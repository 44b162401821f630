"""``strom cluster remove-broker`` and UnregisterBroker on a real three-broker cluster: broker 3
is drained under throttles (every record still there, read by confluent-kafka), stopped, and
unregistered; UnregisterBroker itself, sent raw to a broker that forwards it, answers Kafka's
error codes; bad input is one line and moves nothing.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.schema.unregister_broker.v0.request import UnregisterBrokerRequest

from strom.cli.main import cli
from strom.client.blocking import BrokerConnection
from strom.testing import Cluster, unique_topic_name

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    settings = {"offsets.topic.num.partitions": 2, "offsets.topic.replication.factor": 2}
    with Cluster(brokers=3, controllers=1, config=settings) as running:
        yield running


def _connection(cluster: Cluster, broker_id: int) -> BrokerConnection:
    host, port = cluster.nodes[broker_id].address.rsplit(":", 1)
    return BrokerConnection(host, int(port), timeout=10)


def _cli(cluster: Cluster, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*args, "--bootstrap-server", cluster.bootstrap_servers])
    return result.exit_code, result.output


def _replicas(admin: AdminClient) -> dict[tuple[str, int], list[int]]:
    return {
        (name, p.id): list(p.replicas)
        for name, topic in admin.list_topics(timeout=10).topics.items()
        for p in topic.partitions.values()
    }


def test_unregister_broker_is_forwarded_and_answers_kafkas_errors(cluster: Cluster) -> None:
    with _connection(cluster, 1) as connection:
        versions = connection.request(
            ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        assert 64 in {int(api.api_key) for api in versions.api_keys}
        response = connection.request(UnregisterBrokerRequest(broker_id=BrokerId(9)))
    assert response.error_code == ErrorCode.broker_id_not_registered
    assert response.error_message == "broker 9 is not currently registered"
    code, output = _cli(cluster, "cluster", "unregister", "--id", "9")
    assert (code, output.strip()) == (
        1,
        "Error: BROKER_ID_NOT_REGISTERED: broker 9 is not currently registered",
    )


@pytest.mark.parametrize(
    ("broker", "error"),
    [
        ("9", "Error: broker 9 is not registered in the cluster (brokers: 1, 2, 3)"),
        ("3", "has 3 replicas but only 2 broker(s) would hold them: add brokers or lower"),
    ],
)
def test_bad_input_is_one_line_and_moves_nothing(cluster: Cluster, broker: str, error: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = unique_topic_name()
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3)])[topic].result(20)
    try:
        cluster.wait_for(lambda: (topic, 0) in _replicas(admin), timeout=10, what=topic)
        before = _replicas(admin)
        code, output = _cli(cluster, "cluster", "remove-broker", broker)
        assert code == 1
        assert error in output
        assert len(output.strip().splitlines()) == 1, output
        assert _replicas(admin) == before
    finally:
        admin.delete_topics([topic])[topic].result(20)
    cluster.wait_for(lambda: (topic, 0) not in _replicas(admin), timeout=10, what="deleted")


def test_remove_broker_drains_then_unregisters(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = unique_topic_name()
    placement = [[3, 1], [2, 3], [3, 2], [1, 2]]
    admin.create_topics([NewTopic(topic, num_partitions=4, replica_assignment=placement)])[
        topic
    ].result(20)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for value in range(400):
        producer.produce(topic, str(value).encode(), partition=value % 4)
    assert producer.flush(30) == 0

    command = [
        sys.executable,
        "-m",
        "strom",
        "cluster",
        "remove-broker",
        "3",
        "--throttle",
        "2000000",
        "--max-concurrent-moves",
        "2",
        "--timeout",
        "90",
        "--bootstrap-server",
        cluster.nodes[3].address,  # the broker removed: the command goes on through another
    ]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as run:
        lines: list[str] = []
        try:
            assert run.stdout is not None
            for line in run.stdout:  # until the drain is done and the command waits
                lines.append(line)
                if "waiting for it to be shut down" in line:
                    break
            assert all(3 not in reps for reps in _replicas(admin).values()), lines
            cluster.terminate(3)
            rest, _ = run.communicate(timeout=60)
        finally:
            if run.poll() is None:
                run.kill()
    output = "".join(lines) + rest
    assert run.returncode == 0, output
    assert "moving 3 partition(s) off broker 3" in output
    assert output.strip().endswith("broker 3 unregistered"), output
    assert cluster.unfenced_brokers(via=[1]) == {1, 2}
    with _connection(cluster, 1) as connection:
        response = connection.request(UnregisterBrokerRequest(broker_id=BrokerId(3)))
    assert response.error_code == ErrorCode.broker_id_not_registered
    code, output = _cli(cluster, "cluster", "describe")
    assert code == 0 and "\n3 " not in output, output

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.nodes[1].address,
            "group.id": topic,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    seen: set[int] = set()
    deadline = time.monotonic() + 30
    while len(seen) < 400 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.add(int(message.value() or b"-1"))
    consumer.close()
    assert seen == set(range(400))
