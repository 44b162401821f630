"""Replicated partitions on a real cluster (three brokers, RF 3, min.insync.replicas 2) driven by
real clients: a leader killed during idempotent acks=all produces, a follower killed and back,
two replicas down, a consumer group and a transactional loop through a leader kill."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer
from kafka import KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import NotEnoughReplicasError
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import TopicName
from kio.static.primitive import i8

from strom.cli.main import cli
from strom.cli.quorum_client import connect
from strom.testing import Cluster, unique_topic_name

pytestmark = pytest.mark.xdist_group("cluster")  # never beside the other cluster tests: 2 cores

BROKERS = (1, 2, 3)
TXN_LOOP = Path(__file__).with_name("txn_loop.py")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    settings = {
        "replica.lag.time.max.ms": 2000,
        "replica.fetch.wait.max.ms": 200,
        "replica.fetch.backoff.ms": 200,
        "min.insync.replicas": 2,
        "default.replication.factor": 3,
    }
    with Cluster(brokers=3, controllers=1, config=settings) as running:
        yield running


@pytest.fixture
def admin(cluster: Cluster) -> Iterator[KafkaAdminClient]:
    """A fresh admin client per test: kafka-python keeps the controller id it first learnt,
    and an earlier test may have bounced that broker (UnknownBrokerIdError)."""
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    yield client
    client.close()


def _partitions(cluster: Cluster, topic: str) -> dict[int, dict[str, Any]]:
    """Partition -> leader, ISR and replicas, as the first live broker's Metadata has them
    (strom's own client: it skips a broker that is down, as an admin client may not)."""
    live = ",".join(
        node.address for node in cluster.nodes.values() if node.is_broker and node.alive
    )
    request = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name=TopicName(topic)),),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    with connect(live) as connection:
        [described] = connection.request(request).topics
    return {
        int(p.partition_index): {
            "leader_id": int(p.leader_id),
            "isr_nodes": [int(b) for b in p.isr_nodes],
            "replica_nodes": [int(b) for b in p.replica_nodes],
        }
        for p in described.partitions
    }


def _create(admin: KafkaAdminClient, cluster: Cluster, partitions: int = 1) -> str:
    topic = unique_topic_name()
    admin.create_topics([NewTopic(topic, partitions, 3)])
    cluster.wait_for(
        lambda: (
            all(
                len(p["isr_nodes"]) == 3 and p["leader_id"] >= 0
                for p in _partitions(cluster, topic).values()
            )
            and len(_partitions(cluster, topic)) == partitions
        ),
        timeout=30,
        what=f"{topic} with three in-sync replicas",
    )
    return topic


def _wait_isr(cluster: Cluster, topic: str, isr: set[int]) -> None:
    def reached() -> bool:
        partitions = _partitions(cluster, topic).values()
        return all(set(p["isr_nodes"]) == isr for p in partitions)

    cluster.wait_for(reached, timeout=40, what=f"ISR {sorted(isr)} for {topic}")


def _restart_all(cluster: Cluster, brokers: tuple[int, ...]) -> None:
    for broker_id in brokers:
        if not cluster.nodes[broker_id].alive:
            cluster.restart(broker_id)


def _replica_bytes(cluster: Cluster, topic: str, partition: int) -> dict[int, bytes]:
    """Each broker's log of the partition, its segments' bytes in order."""
    logs: dict[int, bytes] = {}
    for broker_id in BROKERS:
        directory = cluster.nodes[broker_id].data_dir / f"{topic}-{partition}"
        logs[broker_id] = b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))
    return logs


def _consume_all(servers: str, topic: str, count: int, *, timeout: float = 60) -> list[Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": unique_topic_name(),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([topic])
    messages: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(messages) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                messages.append(message)
        # Anything beyond ``count`` would be a duplicate: look a little longer.
        end = time.monotonic() + 1
        while time.monotonic() < end:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                messages.append(message)
    finally:
        consumer.close()
    return messages


def test_internal_topics_created_while_a_broker_is_fenced_get_a_replica_on_it() -> None:
    """The first group and the first transactional id create ``__consumer_offsets`` and
    ``__transaction_state`` while a broker is registered but fenced (down, or restarting):
    as Kafka's placement does, that broker gets its replicas, the topics are not created
    under-replicated for good (with ``min.insync.replicas`` 2, two replicas of three would
    stop every group write as soon as one more broker is down)."""
    settings = {
        "broker.session.timeout.ms": 1500,
        "offsets.topic.replication.factor": 2,
        "transaction.state.log.replication.factor": 2,
    }
    with Cluster(brokers=2, controllers=1, config=settings) as cluster:
        cluster.kill(2)
        cluster.wait_for(
            lambda: cluster.unfenced_brokers() == {1}, timeout=20, what="broker 2 fenced"
        )
        for key_type, topic in ((0, "__consumer_offsets"), (1, "__transaction_state")):
            request = FindCoordinatorRequest(key_type=i8(key_type), coordinator_keys=("key",))

            def found(request: FindCoordinatorRequest = request) -> bool:
                with connect(cluster.nodes[1].address) as connection:
                    response = connection.request(request)
                return [int(c.error_code) for c in response.coordinators] == [0]

            cluster.wait_for(found, timeout=30, what=f"a coordinator from {topic}")
            replicas = {p: d["replica_nodes"] for p, d in _partitions(cluster, topic).items()}
            assert replicas and all(sorted(r) == [1, 2] for r in replicas.values()), replicas


def test_leader_killed_during_idempotent_acks_all_produce_loses_nothing(
    cluster: Cluster, admin: KafkaAdminClient
) -> None:
    """kill -9 the leader while 20,000 idempotent acks=all records are produced, restart it:
    every acknowledged record is read back exactly once, in order, and the replicas' logs end
    up byte for byte the same."""
    topic = _create(admin, cluster)
    total = 20_000
    leader = _partitions(cluster, topic)[0]["leader_id"]
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
        }
    )
    acknowledged: list[int] = []
    errors: list[str] = []

    def report(error: Any, message: Any) -> None:
        if error is None:
            acknowledged.append(int(message.value()))
        else:
            errors.append(str(error))

    try:
        for value in range(total):
            producer.produce(topic, str(value).encode(), on_delivery=report)
            producer.poll(0)
            if value == total // 4:
                producer.flush(30)
                cluster.kill(leader)
        assert producer.flush(60) == 0
    finally:
        _restart_all(cluster, BROKERS)
    assert errors == []
    assert acknowledged == list(range(total))
    assert _partitions(cluster, topic)[0]["leader_id"] != leader
    values = [int(m.value()) for m in _consume_all(cluster.bootstrap_servers, topic, total)]
    assert values == list(range(total))
    _wait_isr(cluster, topic, set(BROKERS))
    cluster.wait_for(
        lambda: len(set(_replica_bytes(cluster, topic, 0).values())) == 1,
        timeout=30,
        what="identical logs on the three replicas",
    )


def test_follower_killed_leaves_the_isr_and_rejoins(
    cluster: Cluster, admin: KafkaAdminClient
) -> None:
    topic = _create(admin, cluster)
    [partition] = _partitions(cluster, topic).values()
    follower = next(b for b in partition["replica_nodes"] if b != partition["leader_id"])
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    try:
        cluster.kill(follower)
        _wait_isr(cluster, topic, set(BROKERS) - {follower})
        for value in range(100):
            producer.produce(topic, str(value).encode())
        assert producer.flush(30) == 0
    finally:
        _restart_all(cluster, BROKERS)
    _wait_isr(cluster, topic, set(BROKERS))
    for value in range(100, 200):
        producer.produce(topic, str(value).encode())
    assert producer.flush(30) == 0
    values = [int(m.value()) for m in _consume_all(cluster.bootstrap_servers, topic, 200)]
    assert values == list(range(200))


def test_two_replicas_down_refuses_acks_all_and_loses_nothing(
    cluster: Cluster, admin: KafkaAdminClient
) -> None:
    topic = _create(admin, cluster)
    [partition] = _partitions(cluster, topic).values()
    leader = partition["leader_id"]
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all")
    once = KafkaProducer(
        bootstrap_servers=cluster.nodes[leader].address, acks="all", retries=0, linger_ms=0
    )
    try:
        for value in range(50):
            producer.send(topic, str(value).encode()).get(timeout=30)
        followers = [b for b in BROKERS if b != leader]
        for broker_id in followers:
            cluster.kill(broker_id)
        _wait_isr(cluster, topic, {leader})
        with pytest.raises(NotEnoughReplicasError):
            once.send(topic, b"refused").get(timeout=30)
        once.close()
    finally:
        _restart_all(cluster, BROKERS)
    _wait_isr(cluster, topic, set(BROKERS))
    for value in range(50, 100):
        producer.send(topic, str(value).encode()).get(timeout=30)
    producer.close()
    values = [int(m.value()) for m in _consume_all(cluster.bootstrap_servers, topic, 100)]
    assert values == list(range(100))


@pytest.mark.timeout(360)  # up to four loop runs of 60 s and a 60 s read, as written below
def test_group_and_transactions_through_a_leader_kill(
    cluster: Cluster, admin: KafkaAdminClient
) -> None:
    """A consume-transform-produce loop (read_committed, offsets in the transaction) goes on
    through kill -9 of the leader of its input, output and coordinator partitions' broker:
    every input is in the output exactly once."""
    source = _create(admin, cluster, partitions=3)
    sink = _create(admin, cluster, partitions=3)
    count = 300
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for value in range(count):
        producer.produce(source, f"v{value}".encode(), partition=value % 3)
    assert producer.flush(30) == 0
    group = unique_topic_name()
    victim = _partitions(cluster, source)[0]["leader_id"]
    command = [
        sys.executable,
        str(TXN_LOOP),
        cluster.bootstrap_servers,
        source,
        sink,
        group,
        f"txn-{group}",
    ]
    killer = threading.Timer(0.5, cluster.kill, (victim,))
    runs: list[str] = []
    try:
        killer.start()
        # The loop may give up during the failover (or stop when it sees nothing new for two
        # seconds); run again, it resumes from its committed offsets.
        for _ in range(4):
            try:
                run = subprocess.run(
                    command, check=False, timeout=60, capture_output=True, text=True
                )
                runs.append(f"exit {run.returncode}: {run.stderr[-500:]}")
            except subprocess.TimeoutExpired as expired:
                runs.append(f"timed out: {expired.stderr!r}"[-500:])
            killer.join()
            if _consume_count(cluster, sink) >= count:
                break
    finally:
        killer.cancel()
        _restart_all(cluster, BROKERS)
    messages = _consume_all(cluster.bootstrap_servers, sink, count)
    values = Counter(m.value().decode() for m in messages)
    expected = {f"V{value}" for value in range(count)}
    missing = sorted(expected - set(values))
    duplicated = sorted(value for value, seen in values.items() if seen > 1)
    assert (missing, duplicated, set(values) - expected) == ([], [], set()), runs


def _consume_count(cluster: Cluster, topic: str) -> int:
    return len(_consume_all(cluster.bootstrap_servers, topic, 10**9, timeout=3))


@pytest.mark.parametrize("bounce", ["clean", "hard"])
def test_every_acknowledged_message_survives_bouncing_the_leader_and_the_controller(
    cluster: Cluster, admin: KafkaAdminClient, bounce: str
) -> None:
    """Kafka's ducktape ``replication_test`` in small: an idempotent acks=all producer runs
    while the leader of its partitions, then the controller, is stopped (SIGTERM: a controlled
    shutdown; or kill -9) and restarted; every acknowledged message is consumed, once."""
    topic = _create(admin, cluster, partitions=3)
    acknowledged: list[int] = []
    errors: list[str] = []
    running = threading.Event()
    running.set()

    def produce() -> None:
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
            }
        )

        def report(error: Any, message: Any) -> None:
            if error is None:
                acknowledged.append(int(message.value()))
            else:
                errors.append(str(error))

        value = 0
        while running.is_set():
            producer.produce(topic, str(value).encode(), on_delivery=report)
            producer.poll(0.002)
            value += 1
        producer.flush(60)

    stop = cluster.terminate if bounce == "clean" else cluster.kill
    writer = threading.Thread(target=produce)
    writer.start()
    try:
        for victim in (_partitions(cluster, topic)[0]["leader_id"], cluster.controller_ids[0]):
            time.sleep(0.5)
            stop(victim)
            time.sleep(0.5)
            cluster.restart(victim)
        time.sleep(0.5)
    finally:
        running.clear()
        writer.join(90)
        _restart_all(cluster, tuple(cluster.nodes))
    assert errors == []
    assert len(acknowledged) > 200
    values = [
        int(m.value()) for m in _consume_all(cluster.bootstrap_servers, topic, len(acknowledged))
    ]
    assert len(values) == len(set(values))  # no duplicates
    assert set(acknowledged) <= set(values)  # nothing acknowledged is lost


def test_reassignment_and_decommission_move_replicas_while_producing(tmp_path: Path) -> None:
    """Move a partition from brokers (1, 2) to (3, 2) with ``strom partitions reassign
    --throttle`` while a producer runs, then ``strom broker decommission 3``: each move
    completes, the throttled copy goes no faster than its rate and the throttle is gone after
    ``--verify``, the new replica has every record, the old one's log is gone, and nothing
    acknowledged is lost. A cluster of its own: the module's holds RF 3 topics, which three
    brokers cannot take off one; two one-second quota windows let the throttle bite early."""
    with Cluster(brokers=3, controllers=1, config={"replication.quota.window.num": 2}) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            _reassign_then_decommission(cluster, admin, tmp_path)
        finally:
            admin.close()


def _reassign_then_decommission(cluster: Cluster, admin: KafkaAdminClient, tmp_path: Path) -> None:
    topic = unique_topic_name()
    admin.create_topics([NewTopic(topic, -1, -1, replica_assignments={0: [1, 2]})])
    cluster.wait_for(
        lambda: set(_partitions(cluster, topic).get(0, {}).get("isr_nodes", ())) == {1, 2},
        timeout=30,
        what=topic,
    )
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for value in range(2000):  # 2000 records, 3 MB: about six seconds at 500 kB/s
        producer.produce(topic, str(value).encode().ljust(1500, b" "))
    assert producer.flush(30) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [3, 2]}]}
        )
    )
    runner = CliRunner()
    servers = ["--bootstrap-server", cluster.bootstrap_servers]
    began = time.monotonic()
    started = runner.invoke(
        cli,
        [
            *("partitions", "reassign", "--execute", "--reassignment-json-file", str(plan)),
            *("--throttle", "500000", *servers),
        ],
    )
    assert started.exit_code == 0, started.output
    assert "The inter-broker throttle limit was set to 500000 B/s" in started.output
    assert f"Successfully started partition reassignments for {topic}-0" in started.output
    cluster.wait_for(  # the broker asked may learn of the new settings a moment later
        lambda: (
            (
                _topic_config(admin, topic, "leader.replication.throttled.replicas"),
                _topic_config(admin, topic, "follower.replication.throttled.replicas"),
            )
            == ("0:1,0:2", "0:3")
        ),
        timeout=10,
        what="the throttles on the moving replicas",
    )
    for value in range(2000, 3000):
        producer.produce(topic, str(value).encode())
    assert producer.flush(30) == 0

    def verified() -> bool:
        check = ["partitions", "reassign", "--verify", "--reassignment-json-file", str(plan)]
        return runner.invoke(cli, [*check, *servers]).exit_code == 0

    cluster.wait_for(verified, timeout=60, what="the reassignment to complete")
    assert time.monotonic() - began > 3  # 3 MB at 500 kB/s, after a burst of about 1 MB
    cluster.wait_for(
        lambda: _topic_config(admin, topic, "follower.replication.throttled.replicas") == "",
        timeout=10,
        what="--verify to remove the throttle",
    )
    cluster.wait_for(
        lambda: set(_partitions(cluster, topic)[0]["replica_nodes"]) == {2, 3},
        timeout=10,
        what="the brokers to learn of the move",
    )
    cluster.wait_for(
        lambda: not (cluster.nodes[1].data_dir / f"{topic}-0").exists(),
        timeout=30,
        what="broker 1 to delete its log",
    )
    moved = runner.invoke(cli, ["broker", "decommission", "3", "--timeout", "60", *servers])
    assert moved.exit_code == 0, moved.output
    assert "holds no replica" in moved.output
    cluster.wait_for(
        lambda: 3 not in _partitions(cluster, topic)[0]["replica_nodes"],
        timeout=10,
        what="the brokers to learn of the move",
    )
    values = [int(m.value()) for m in _consume_all(cluster.bootstrap_servers, topic, 3000)]
    assert values == list(range(3000))


def _topic_config(admin: KafkaAdminClient, topic: str, name: str) -> str:
    """The topic's override of ``name`` ("" without one)."""
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    [overrides] = [by_name[topic] for by_name in described.values()]
    return str(overrides.get(name, {}).get("value") or "")
