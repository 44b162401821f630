"""A real cluster (three controller and three broker processes) driven by real clients, under
faults: controller failover while topics are created, a paused active controller, a broker that
stops heartbeating, a broker that catches up from a snapshot."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as PyNewTopic
from kio.schema.alter_partition.v3.request import AlterPartitionRequest, BrokerState
from kio.schema.alter_partition.v3.request import PartitionData as AlterPartitionData
from kio.schema.alter_partition.v3.request import TopicData as AlterTopic
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i64
from strom_harness import free_ports_in_a_row

from strom.cli.main import cli
from strom.cli.quorum_client import connect, describe_quorum
from strom.cli.topic_partitions import PartitionDescription, describe_topic_partitions
from strom.client.blocking import BrokerConnection
from strom.testing import Cluster, unique_topic_name
from strom.testing.cluster import ClusterNode

pytestmark = pytest.mark.xdist_group("cluster")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    racks = {broker_id: {"broker.rack": f"rack-{broker_id}"} for broker_id in (1, 2, 3)}
    with Cluster(brokers=3, controllers=3, node_config=racks) as running:
        yield running


def _admin(servers: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": servers, "socket.timeout.ms": 10_000})


def _create(admin: AdminClient, name: str, partitions: int = 1) -> None:
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions)], operation_timeout=30)
    futures[name].result(timeout=60)


def _topics_on(cluster: Cluster, broker_id: int) -> dict[str, tuple[tuple[int, int], ...]]:
    """Topic name -> (partition, leader) pairs, as one broker's Metadata answer has them."""
    node = cluster.nodes[broker_id]
    metadata = _admin(node.address).list_topics(timeout=20)
    return {
        name: tuple(sorted((p.id, p.leader) for p in topic.partitions.values()))
        for name, topic in metadata.topics.items()
        if not name.startswith("__")
    }


def _wait_for_topics(cluster: Cluster, names: set[str], *, timeout: float) -> None:
    """Until every broker's Metadata answer has every one of ``names``."""
    for broker_id in cluster.broker_ids:

        def known(broker_id: int = broker_id) -> bool:
            return names <= _topics_on(cluster, broker_id).keys()

        cluster.wait_for(known, timeout=timeout, what=f"broker {broker_id} to know every topic")


def test_clients_create_topics_through_any_broker_and_see_every_broker(cluster: Cluster) -> None:
    names = []
    for broker_id in cluster.broker_ids:  # confluent-kafka, through each broker in turn
        name = unique_topic_name("via-broker")
        _create(_admin(cluster.nodes[broker_id].address), name, partitions=3)
        names.append(name)
    admin = _admin(cluster.bootstrap_servers)
    cluster.wait_for(  # the brokers learn of new topics from the quorum, a moment later
        lambda: set(names) <= admin.list_topics(timeout=20).topics.keys(),
        timeout=20,
        what="the topics in Metadata",
    )
    metadata = admin.list_topics(timeout=20)
    assert sorted(metadata.brokers) == cluster.broker_ids
    leaders = {p.leader for name in names for p in metadata.topics[name].partitions.values()}
    assert leaders == set(cluster.broker_ids)  # partitions are spread over the brokers

    python_topic = unique_topic_name("kafka-python")
    python_admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        python_admin.create_topics(
            [PyNewTopic(python_topic, num_partitions=2, replication_factor=1)]
        )
        brokers = python_admin.describe_cluster()["brokers"]  # DescribeCluster
        assert {b["broker_id"]: b["rack"] for b in brokers} == {
            broker_id: f"rack-{broker_id}" for broker_id in cluster.broker_ids
        }
    finally:
        python_admin.close()

    aio_topic = unique_topic_name("aiokafka")

    async def with_aiokafka() -> set[int]:
        client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        await client.start()
        try:
            await client.create_topics([AioNewTopic(aio_topic, 2, 1)])
            described = await client.describe_cluster()
            return {b["node_id"] for b in described["brokers"]}
        finally:
            await client.close()

    assert asyncio.run(with_aiokafka()) == set(cluster.broker_ids)
    _wait_for_topics(cluster, {*names, python_topic, aio_topic}, timeout=20)

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for partition in range(3):
        producer.produce(names[0], value=b"v%d" % partition, partition=partition)
    assert producer.flush(30) == 0
    consumer = Consumer(cluster.consumer_config())
    consumer.subscribe([names[0]])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 30
    while len(seen) < 3 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.add(message.value() or b"")
    consumer.close()
    assert seen == {b"v0", b"v1", b"v2"}


def test_the_quorum_describes_its_voters_and_observers(cluster: Cluster) -> None:
    with connect(cluster.bootstrap_servers) as connection:
        quorum = describe_quorum(connection)
    assert quorum.leader_id in cluster.controller_ids
    voters = {r.node_id for r in quorum.replicas if r.voter}
    observers = {r.node_id for r in quorum.replicas if not r.voter}
    assert voters == set(cluster.controller_ids)
    assert observers == set(cluster.broker_ids)
    assert quorum.high_watermark > 0


class _Creator(threading.Thread):
    """Creates topics one after another until stopped; remembers which were acknowledged."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(daemon=True)
        self.admin = _admin(cluster.bootstrap_servers)
        self.prefix = unique_topic_name("failover")
        self.acknowledged: list[str] = []
        self.failed: list[tuple[str, str]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        count = 0
        while not self.stop.is_set():
            name = f"{self.prefix}-{count}"
            count += 1
            try:
                _create(self.admin, name)
            except Exception as error:
                self.failed.append((name, str(error)))
            else:
                self.acknowledged.append(name)


def test_killing_the_active_controller_while_topics_are_created(cluster: Cluster) -> None:
    creator = _Creator(cluster)
    creator.start()
    cluster.wait_for(lambda: len(creator.acknowledged) >= 3, timeout=60, what="first topics")
    victim = cluster.active_controller()
    cluster.kill(victim)
    killed = time.monotonic()
    cluster.wait_for(
        lambda: cluster.active_controller(timeout=30) != victim, timeout=30, what="a new leader"
    )
    failover = time.monotonic() - killed
    before = len(creator.acknowledged)
    cluster.wait_for(
        lambda: len(creator.acknowledged) >= before + 3, timeout=60, what="creations to go on"
    )
    creator.stop.set()
    creator.join(timeout=90)
    cluster.restart(victim)
    assert failover < 15, f"no new active controller {failover:.1f} s after the kill"
    created = set(creator.acknowledged)
    _wait_for_topics(cluster, created, timeout=30)
    # Every broker has the same image: the same topics, partitions and leaders.
    views = [_topics_on(cluster, b) for b in cluster.broker_ids]
    mine = [{n: t for n, t in view.items() if n.startswith(creator.prefix)} for view in views]
    assert all(view == mine[0] for view in mine)
    # A creation that failed during the failover may still have happened: then it exists
    # once, like any other; its error was the retriable kind.
    for _, error in creator.failed:
        assert "TOPIC_ALREADY_EXISTS" in error or "TIMED_OUT" in error or "NOT_CONTROLLER" in error


def test_a_paused_active_controller_gives_way_and_rejoins(cluster: Cluster) -> None:
    paused = cluster.active_controller()
    cluster.pause(paused)
    try:
        cluster.wait_for(
            lambda: cluster.active_controller(timeout=30) != paused,
            timeout=30,
            what="another active controller",
        )
        successor = cluster.active_controller()
    finally:
        cluster.resume(paused)
    # The resumed node learns of the newer epoch and follows: one leader, agreed by all.
    cluster.wait_for(
        lambda: any(f"follows leader {successor}" in line for line in cluster.nodes[paused].lines),
        timeout=30,
        what=f"node {paused} to follow {successor}",
    )
    assert cluster.active_controller() == successor
    name = unique_topic_name("after-pause")
    _create(_admin(cluster.bootstrap_servers), name)
    cluster.wait_for(
        lambda: name in _topics_on(cluster, cluster.broker_ids[0]), timeout=20, what=name
    )


def test_a_silent_broker_is_fenced_and_comes_back(cluster: Cluster) -> None:
    broker = cluster.broker_ids[-1]
    cluster.pause(broker)
    try:
        cluster.wait_for(
            lambda: broker not in cluster.unfenced_brokers(),
            timeout=30,
            what=f"broker {broker} to be fenced",
        )
    finally:
        cluster.resume(broker)
    cluster.wait_for(
        lambda: broker in cluster.unfenced_brokers(), timeout=30, what="unfenced after resume"
    )
    cluster.kill(broker)
    cluster.restart(broker)
    cluster.wait_for(
        lambda: cluster.unfenced_brokers() == set(cluster.broker_ids),
        timeout=30,
        what="unfenced after restart",
    )


def test_sigterm_shuts_a_broker_down_through_the_controller(cluster: Cluster) -> None:
    broker = cluster.broker_ids[0]
    started = time.monotonic()
    cluster.terminate(broker)  # SIGTERM: WantShutDown in a heartbeat, then stop
    node = cluster.nodes[broker]
    # A controlled shutdown is bounded (5 s); the rest is stopping the process.
    assert time.monotonic() - started < 25, "".join(node.lines[-30:])
    assert node.process is not None and node.process.returncode == 0
    assert not any("did not confirm the controlled shutdown" in line for line in node.lines)
    cluster.wait_for(  # fenced by the controller before it let the broker go
        lambda: broker not in cluster.unfenced_brokers(), timeout=20, what="fenced"
    )
    cluster.restart(broker)
    cluster.wait_for(
        lambda: broker in cluster.unfenced_brokers(), timeout=30, what="unfenced after restart"
    )


def test_a_dead_brokers_partitions_get_new_leaders_and_the_cli_reports_them(
    cluster: Cluster,
) -> None:
    """Killed, the broker is fenced: each partition it led moves to the next ISR replica, and
    `topics describe` reports the partitions under-replicated, with the broker offline."""
    name = unique_topic_name("elect")
    admin = _admin(cluster.bootstrap_servers)  # kept until the answer: a dropped one cancels
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=3, replication_factor=3)], operation_timeout=30
    )
    futures[name].result(timeout=60)
    _wait_for_topics(cluster, {name}, timeout=30)
    victim = cluster.broker_ids[1]
    survivor = cluster.broker_ids[0]
    cluster.kill(victim)
    try:
        # Fenced first: a topic it led no partition of has new leaders at once, and its ISRs
        # shrink only when the controller fences it.
        cluster.wait_for(
            lambda: victim not in cluster.unfenced_brokers(), timeout=30, what="fenced"
        )
        cluster.wait_for(
            lambda: all(
                leader not in (victim, -1) for _, leader in _topics_on(cluster, survivor)[name]
            ),
            timeout=30,
            what=f"new leaders for the partitions broker {victim} led",
        )
        servers = cluster.nodes[survivor].address
        runner = CliRunner()
        report = ["topics", "describe", name, "--bootstrap-server", servers]
        under = runner.invoke(cli, [*report, "--under-replicated-partitions"])
        assert under.exit_code == 0, under.output
        rows = [line.split() for line in under.stdout.splitlines()[1:]]
        assert [(row[0], row[1], row[7]) for row in rows] == [
            (name, str(p), str(victim)) for p in range(3)
        ], under.stdout
        unavailable = runner.invoke(cli, [*report, "--unavailable-partitions"])
        assert unavailable.stdout.splitlines()[1:] == []
        described = runner.invoke(cli, ["cluster", "describe", "--bootstrap-server", servers])
        row = next(r.split() for r in described.stdout.splitlines() if r.startswith(str(victim)))
        assert row[3:5] == ["fenced", "0"], row  # leads nothing
        assert int(row[5]) >= 3, row  # and still holds its replicas, these three among them
    finally:
        cluster.restart(victim)
        cluster.wait_for(
            lambda: victim in cluster.unfenced_brokers(), timeout=30, what="unfenced again"
        )


def test_an_unclean_election_brings_a_leaderless_partition_back(cluster: Cluster) -> None:
    """Both replicas die, the one outside the ISR returns first: the partition has no leader
    until an unclean election (the CLI, then kafka-python's admin client) gives it one."""
    first, second = cluster.broker_ids[0], cluster.broker_ids[2]
    name = unique_topic_name("unclean")
    creator = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:  # confluent-kafka 2.16 refuses replica assignments locally; kafka-python sends them
        creator.create_topics([PyNewTopic(name, -1, -1, replica_assignments={0: [first, second]})])
    finally:
        creator.close()
    _wait_for_topics(cluster, {name}, timeout=30)
    helper = cluster.nodes[cluster.broker_ids[1]].address

    def leader() -> int:
        (pair,) = _topics_on(cluster, cluster.broker_ids[1])[name]
        return pair[1]

    cluster.kill(first)
    try:
        cluster.wait_for(lambda: leader() == second, timeout=30, what="the second replica to lead")
        cluster.kill(second)
        cluster.wait_for(lambda: leader() == -1, timeout=30, what="no leader")
        cluster.restart(first)
        cluster.wait_for(lambda: first in cluster.unfenced_brokers(), timeout=30, what="back")
        assert leader() == -1  # out of the ISR: a clean election cannot pick it
        runner = CliRunner()
        election = ["leader-election", "--topic", name, "--bootstrap-server", helper]
        preferred = runner.invoke(cli, [*election, "--election-type", "preferred"])
        assert preferred.exit_code == 1
        assert "PREFERRED_LEADER_NOT_AVAILABLE" in preferred.stderr
        unclean = runner.invoke(cli, [*election, "--election-type", "unclean"])
        assert unclean.exit_code == 0, unclean.output
        assert unclean.stdout == (
            f"Successfully completed leader election (UNCLEAN) for partitions {name}-0\n"
        )
        cluster.wait_for(lambda: leader() == first, timeout=30, what="the unclean leader")
        # kafka-python's admin client asks any broker its bootstrap's Metadata lists for the
        # controller, and gives up on one that refuses: wait until the helper no longer lists
        # the dead broker (strom lists a fenced broker a few seconds more, as Kafka lists one
        # until its session ends). librdkafka may ask another broker, so ask the helper itself.
        cluster.wait_for(
            lambda: second not in _brokers_listed_by(cluster.nodes[cluster.broker_ids[1]]),
            timeout=30,
            what="the dead broker out of the helper's Metadata",
        )
        admin = KafkaAdminClient(bootstrap_servers=helper)
        try:
            answer = admin.elect_leaders(0, {name: [0]}, raise_errors=False)
        finally:
            admin.close()
        [(_, [(partition, code, _)])] = [
            (r.topic, [(p.partition_id, p.error_code, p.error_message) for p in r.partition_result])
            for r in answer.replica_election_results
        ]
        assert (partition, code) == (0, 84)  # ELECTION_NOT_NEEDED: the preferred replica leads
        # The partition is RECOVERING (KIP-704); the leader's ISR expansion says RECOVERED.
        cluster.restart(second)
        checker = _admin(cluster.bootstrap_servers)
        cluster.wait_for(
            lambda: len(_isr(checker, name)) == 2,
            timeout=30,
            what="the returned replica back in the ISR",
        )
    finally:
        _every_broker_back(cluster)


def _brokers_listed_by(node: ClusterNode) -> set[int]:
    """The broker ids one broker's own Metadata answer lists."""
    assert node.broker_port is not None
    with BrokerConnection(node.host, node.broker_port, timeout=10) as connection:
        answer = connection.request(
            MetadataRequest(topics=None, include_topic_authorized_operations=False)
        )
    return {broker.node_id for broker in answer.brokers}


def _every_broker_back(cluster: Cluster) -> None:
    """Restart the brokers a test left down, and wait until all are unfenced."""
    for broker_id in cluster.broker_ids:
        if broker_id not in cluster.unfenced_brokers():
            cluster.restart(broker_id)
    cluster.wait_for(
        lambda: cluster.unfenced_brokers() == set(cluster.broker_ids),
        timeout=30,
        what="every broker back",
    )


def _uuid(topic_id: Any) -> uuid.UUID:
    """confluent-kafka's Uuid as a uuid.UUID (it prints base64)."""
    high = topic_id.get_most_significant_bits() & (2**64 - 1)
    low = topic_id.get_least_significant_bits() & (2**64 - 1)
    return uuid.UUID(int=(high << 64) | low)


def test_a_leader_changes_its_isr_with_alter_partition(cluster: Cluster) -> None:
    """AlterPartition v3 on the active controller's listener, as a partition leader sends it:
    the ISR shrinks in a new partition epoch; a second change from the old epoch is refused, as
    is one that says the leader is RECOVERING from an unclean election (KIP-704)."""
    name = unique_topic_name("isr")
    admin = _admin(cluster.bootstrap_servers)
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=1, replication_factor=3)], operation_timeout=30
    )
    futures[name].result(timeout=60)
    _wait_for_topics(cluster, {name}, timeout=30)
    described = admin.describe_topics(TopicCollection([name]))[name].result(timeout=30)
    leader = described.partitions[0].leader.id
    follower = next(b for b in cluster.broker_ids if b != leader)
    epoch = int(
        next(
            match["epoch"]
            for line in reversed(cluster.nodes[leader].lines)
            if (
                match := re.search(
                    r"registered as broker \d+ \(broker epoch (?P<epoch>\d+)\)", line
                )
            )
        )
    )
    node = cluster.nodes[cluster.active_controller()]

    def alter(recovery: int) -> AlterPartitionRequest:
        return AlterPartitionRequest(
            broker_id=BrokerId(leader),
            broker_epoch=i64(epoch),
            topics=(
                AlterTopic(
                    topic_id=_uuid(described.topic_id),
                    partitions=(
                        AlterPartitionData(
                            partition_index=i32(0),
                            leader_epoch=i32(0),
                            new_isr_with_epochs=(
                                BrokerState(broker_id=BrokerId(leader), broker_epoch=i64(epoch)),
                                BrokerState(broker_id=BrokerId(follower), broker_epoch=i64(-1)),
                            ),
                            partition_epoch=i32(0),
                            leader_recovery_state=i8(recovery),
                        ),
                    ),
                ),
            ),
        )

    request = alter(0)
    assert node.controller_port is not None
    with BrokerConnection(node.host, node.controller_port, timeout=10) as connection:
        recovering = connection.request(alter(1))
        first = connection.request(request)
        second = connection.request(request)
    (changed,) = first.topics[0].partitions
    assert (changed.error_code, sorted(changed.isr), changed.partition_epoch) == (
        ErrorCode.none,
        sorted((leader, follower)),
        1,
    )
    assert second.topics[0].partitions[0].error_code == ErrorCode.invalid_update_version
    assert recovering.topics[0].partitions[0].error_code == ErrorCode.invalid_request
    cluster.wait_for(
        lambda: len(_isr(admin, name)) == 2, timeout=30, what="the smaller ISR in the metadata"
    )


def test_a_broker_far_behind_catches_up_from_a_snapshot() -> None:
    small: dict[str, Any] = {"metadata.log.max.record.bytes.between.snapshots": 2000}
    with Cluster(brokers=2, controllers=1, config=small) as running:
        late = running.broker_ids[-1]
        running.kill(late)
        admin = _admin(running.nodes[running.broker_ids[0]].address)
        names = [unique_topic_name("snap") for _ in range(25)]
        for name in names:
            _create(admin, name)
        controller = running.nodes[running.controller_ids[0]]
        metadata_dir = controller.data_dir / "__cluster_metadata-0"
        running.wait_for(
            lambda: any(metadata_dir.glob("*.checkpoint")), timeout=30, what="a snapshot"
        )
        running.restart(late)
        running.wait_for(
            lambda: set(names) <= _topics_on(running, late).keys(),
            timeout=30,
            what="the late broker to know every topic",
        )
        assert any("loaded snapshot" in line for line in running.nodes[late].lines), (
            "the late broker should have fetched a snapshot"
        )


def test_the_cli_describes_the_cluster_and_its_quorum(cluster: Cluster) -> None:
    runner = CliRunner()
    leader = cluster.active_controller()
    described = runner.invoke(
        cli, ["cluster", "describe", "--bootstrap-server", cluster.bootstrap_servers]
    )
    assert described.exit_code == 0, described.output
    assert f"active controller: {leader} " in described.stdout
    for broker_id in cluster.broker_ids:
        assert f"{cluster.nodes[broker_id].address} " in described.stdout

    follower = next(n for n in cluster.controller_ids if n != leader)
    through = {
        "--bootstrap-server": cluster.bootstrap_servers,
        # A controller that does not lead: the CLI finds the active one, as Kafka's tool does.
        "--bootstrap-controller": f"127.0.0.1:{cluster.nodes[follower].controller_port}",
    }
    for option, servers in through.items():
        status = runner.invoke(cli, ["metadata-quorum", "describe", option, servers, "--status"])
        assert status.exit_code == 0, status.output
        assert f"LeaderId:             {leader}\n" in status.stdout
        assert f"ClusterId:            {cluster.cluster_id}\n" in status.stdout
        assert f"CurrentVoters:        {sorted(cluster.controller_ids)}".replace(" ", "") in (
            status.stdout.replace(" ", "")
        )
        replication = runner.invoke(
            cli, ["metadata-quorum", "describe", option, servers, "--replication"]
        )
        assert replication.exit_code == 0, replication.output
        rows = [line.split() for line in replication.stdout.splitlines()[1:] if line.strip()]
        statuses = {int(row[0]): row[-1] for row in rows}
        assert statuses[leader] == "Leader"
        assert {n for n, s in statuses.items() if s == "Observer"} == set(cluster.broker_ids)


def _isr(admin: AdminClient, name: str) -> list[Any]:
    """The in-sync replicas of partition 0 of topic ``name``, as the metadata has them."""
    description = admin.describe_topics(TopicCollection([name]))[name].result(timeout=30)
    return list(description.partitions[0].isr)


def _cluster_up(data_dir: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    """``strom cluster up`` (one controller, one broker unless ``args`` say otherwise) and the
    bootstrap servers it printed once up."""
    process = subprocess.Popen(
        [
            sys.executable, "-m", "strom", "cluster", "up", "--brokers", "1", "--controllers", "1",
            "--data-dir", str(data_dir), "--override", "broker.heartbeat.interval.ms=500", *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("bootstrap servers: "):
            return process, line.split(": ", 1)[1].strip()
    process.kill()
    output = process.communicate()[0]
    raise AssertionError(f"no bootstrap servers printed (exit {process.returncode}): {output}")


def _interrupt(process: subprocess.Popen[str]) -> str:
    """Ctrl-C, and the rest of the output once every node stopped."""
    try:
        process.send_signal(signal.SIGINT)
        output = process.communicate(timeout=60)[0]
    finally:
        process.kill()
    assert process.returncode == 0, output
    return output


def test_cluster_up_starts_a_cluster_and_ctrl_c_stops_it(tmp_path: Path) -> None:
    process, servers = _cluster_up(tmp_path)
    try:
        name = unique_topic_name("cluster-up")
        _create(_admin(servers), name)
    finally:
        output = _interrupt(process)
    assert "stopping every node" in output
    assert _strom_servers_under(tmp_path) == []
    assert (tmp_path / "node-1" / "server.log").exists()


def test_cluster_up_takes_a_base_port_and_keeps_its_ports(tmp_path: Path) -> None:
    base = free_ports_in_a_row(6)
    process, servers = _cluster_up(tmp_path, "--base-port", str(base))
    try:
        # then each node's metrics listener, in the same order
        for port, role in ((base + 4, "controller"), (base + 5, "broker")):
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
            active = b"\nkafka_controller_kafkacontroller_activecontrollercount 1\n"
            assert (active in text) == (role == "controller"), role
            held = b"\nkafka_server_replicamanager_partitioncount "
            assert (held in text) == (role == "broker")
    finally:
        _interrupt(process)
    assert servers == f"127.0.0.1:{base + 2}"  # controller 1001 first: base, base + 1
    process, again = _cluster_up(tmp_path)
    try:
        assert again == servers
        _create(_admin(again), unique_topic_name("cluster-up-again"))
    finally:
        _interrupt(process)


def _strom_servers_under(base: Path) -> list[str]:
    """Command lines of ``strom server`` processes still running on a file under ``base``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
        if "strom" in args and str(base) in args and "server" in args:
            found.append(args)
    return found


# Last in the module: it restarts every broker of the shared cluster.
def test_an_eligible_leader_replica_leads_once_the_isr_is_gone(cluster: Cluster) -> None:
    """KIP-966 on real processes (RF 3, min.insync.replicas 2): below min ISR what the leader
    appends alone stays uncommitted and the replica that left the ISR is an eligible leader;
    with every broker down the eligible one that returns first leads, and a replica back from
    kill -9 is no longer eligible. Nothing committed is lost."""
    a, b, c = cluster.broker_ids
    name = unique_topic_name("elr")
    creator = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        creator.create_topics(
            [
                PyNewTopic(
                    name,
                    -1,
                    -1,
                    replica_assignments={0: [a, b, c]},
                    topic_configs={"min.insync.replicas": "2"},
                )
            ]
        )
    finally:
        creator.close()
    _wait_for_topics(cluster, {name}, timeout=30)

    def partition(via: int) -> PartitionDescription:
        with connect(cluster.nodes[via].address) as connection:
            [topic] = describe_topic_partitions(connection, [name])
        return topic.partitions[0]

    def produce(via: int, value: bytes, acks: str) -> None:
        producer = Producer({"bootstrap.servers": cluster.nodes[via].address, "acks": acks})
        failures: list[Any] = []
        producer.produce(name, value, partition=0, on_delivery=lambda e, _: failures.append(e))
        producer.flush(30)
        assert failures == [None], failures

    produce(a, b"committed", "all")
    try:
        cluster.terminate(c)  # a controlled shutdown: leaves the ISR
        cluster.wait_for(lambda: partition(a).state.isr == [a, b], timeout=30, what="ISR a,b")
        cluster.terminate(b)
        cluster.wait_for(
            lambda: (partition(a).state.isr, partition(a).eligible_leaders) == ([a], (b,)),
            timeout=30,
            what="ISR a with b eligible",
        )
        described = CliRunner().invoke(
            cli, ["topics", "describe", name, "--bootstrap-server", cluster.nodes[a].address]
        )
        assert described.exit_code == 0, described.output
        row = described.stdout.splitlines()[2].split()
        assert row[:6] == ["0", str(a), f"{a},{b},{c}", str(a), str(b), "-"], described.stdout
        produce(a, b"alone", "1")  # appended by the leader alone: not committed
        consumer = Consumer({"bootstrap.servers": cluster.nodes[a].address, "group.id": name})
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=20)
        finally:
            consumer.close()
        assert (low, high) == (0, 1)  # the high watermark stayed below "alone"
        cluster.kill(a)  # fenced after its session: the ISR empties, a and b are eligible
        cluster.wait_for(lambda: a not in cluster.unfenced_brokers(), timeout=30, what="a fenced")
        cluster.restart(b)  # shut down cleanly: still eligible, leads alone
        cluster.wait_for(
            lambda: (partition(b).state.leader, partition(b).state.isr) == (b, [b]),
            timeout=30,
            what="b leading from the ELR",
        )
        assert partition(b).eligible_leaders == (a,)
        cluster.restart(a)  # back from kill -9: it may have lost records, no longer eligible
        cluster.restart(c)
        cluster.wait_for(
            lambda: sorted(partition(b).state.isr) == sorted([a, b, c]),
            timeout=60,
            what="every replica back in sync",
        )
        assert partition(b).eligible_leaders == ()
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.nodes[b].address,
                "group.id": name,
                "auto.offset.reset": "earliest",
            }
        )
        try:
            consumer.assign([TopicPartition(name, 0, 0)])
            message = consumer.poll(20)
            assert message is not None and message.error() is None
            assert message.value() == b"committed"
            assert consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=20)[1] == 1
        finally:
            consumer.close()
    finally:
        _every_broker_back(cluster)
