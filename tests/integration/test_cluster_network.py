"""A cluster whose nodes each run in a network namespace of their own (``Cluster(network=
"netns")``), under network faults: clients reach every node by its own address, a split decides
which nodes reach each other, an isolated broker is fenced and comes back after heal, a slow
link slows a transfer, and stop leaves nothing behind. Needs root: skipped otherwise, saying
why."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from strom.testing import (
    Cluster,
    ClusterError,
    NamespaceNetwork,
    NetnsError,
    NetworkNemesis,
    netns_unavailable,
    unique_topic_name,
)
from strom.testing.netns import run

pytestmark = pytest.mark.xdist_group("cluster")

_PROBE = """
import socket, sys
for address in sys.argv[1:]:
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=0.5).close()
        print(address)
    except OSError:
        pass
"""

_RECEIVE = """
import socket, sys, time
server = socket.create_server((sys.argv[1], int(sys.argv[2])))
print("listening", flush=True)
connection, _ = server.accept()
start = time.monotonic()
while connection.recv(65536):
    pass
print(time.monotonic() - start)
"""

_SEND = """
import socket, sys
with socket.create_connection((sys.argv[1], int(sys.argv[2]))) as connection:
    connection.sendall(bytes(int(sys.argv[3])))
"""


def _need_netns() -> None:
    reason = netns_unavailable()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    _need_netns()
    with Cluster(brokers=3, combined=True, network="netns") as running:
        yield running


@pytest.fixture
def nemesis(cluster: Cluster) -> Iterator[NetworkNemesis]:
    """The cluster's network faults, healed after the test."""
    yield cluster.nemesis
    cluster.nemesis.heal()


def _namespaces(cluster: Cluster) -> NamespaceNetwork:
    assert cluster.netns is not None
    return cluster.netns


def _reachable(cluster: Cluster, source: int | None) -> set[int]:
    """The nodes whose broker listener accepts a connection from the namespace of node
    ``source`` (``None``: the host)."""
    addresses = {node.address: node.node_id for node in cluster.nodes.values()}
    argv = [sys.executable, "-c", _PROBE, *addresses]
    if source is not None:
        argv = _namespaces(cluster).command(source, argv)
    output = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout
    return {addresses[line] for line in output.split()}


def _transfer_seconds(cluster: Cluster, *, source: int, target: int, size: int) -> float:
    """How long ``size`` bytes take from node ``source`` to node ``target`` over plain TCP,
    as the receiver measures it."""
    namespaces = _namespaces(cluster)
    address = namespaces.address(target)
    receive = [sys.executable, "-c", _RECEIVE, address, "7000"]
    with subprocess.Popen(
        namespaces.command(target, receive), stdout=subprocess.PIPE, text=True
    ) as receiver:
        assert receiver.stdout is not None
        assert receiver.stdout.readline() == "listening\n"
        send = [sys.executable, "-c", _SEND, address, "7000", str(size)]
        subprocess.run(namespaces.command(source, send), check=True, timeout=60)
        output, _ = receiver.communicate(timeout=60)
    return float(output)


def _names_left(slot: int) -> str:
    """Every namespace and link of ``slot`` that ``ip netns list`` and ``ip link`` show."""
    listed = run(["ip", "netns", "list"]) + run(["ip", "-o", "link", "show"])
    return " ".join(re.findall(rf"\bstrom{slot}(?!\d)\S*", listed))


def test_clients_reach_every_node_at_its_own_address(cluster: Cluster) -> None:
    namespaces = _namespaces(cluster)
    assert {node.host for node in cluster.nodes.values()} == {
        f"10.213.{namespaces.slot}.{n}" for n in (2, 3, 4)
    }
    assert cluster.bootstrap_servers == ",".join(f"{namespaces.address(n)}:9092" for n in (1, 2, 3))
    topic = unique_topic_name("netns")
    admin = AdminClient(cluster.admin_config())
    futures = admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])
    futures[topic].result(timeout=30)

    producer = Producer(cluster.producer_config(acks="all"))
    for index in range(30):
        producer.produce(topic, value=b"%d" % index, partition=index % 3)
    assert producer.flush(30) == 0
    consumer = Consumer(cluster.consumer_config())
    consumer.subscribe([topic])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 30
    while len(seen) < 30 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.add(message.value() or b"")
    consumer.close()
    assert seen == {b"%d" % index for index in range(30)}


def test_a_split_decides_which_nodes_reach_each_other(
    cluster: Cluster, nemesis: NetworkNemesis
) -> None:
    nemesis.split([{1, 2}, {3}])
    nemesis.split([{1, 2}, {3}])  # idempotent
    assert _reachable(cluster, 1) == {1, 2}
    assert _reachable(cluster, 3) == {3}
    assert _reachable(cluster, None) == {1, 2, 3}  # the host reaches every node

    nemesis.split([{1}])  # a new split replaces the last; the unnamed nodes are one group
    assert _reachable(cluster, 2) == {2, 3}

    nemesis.heal()
    nemesis.heal()
    assert _reachable(cluster, 3) == {1, 2, 3}


def test_an_isolated_broker_is_fenced_and_unfenced_after_heal(
    cluster: Cluster, nemesis: NetworkNemesis
) -> None:
    everyone = set(cluster.broker_ids)
    cluster.wait_for(lambda: cluster.unfenced_brokers() == everyone, timeout=30, what="unfenced")
    cut_off = cluster.active_controller()  # the hard case: the quorum elects another leader
    others = everyone - {cut_off}
    nemesis.isolate(cut_off)
    assert _reachable(cluster, cut_off) == {cut_off}
    cluster.wait_for(
        lambda: cluster.unfenced_brokers(via=others) == others,
        timeout=30,
        what=f"broker {cut_off} fenced by the controllers it cannot reach",
    )
    nemesis.heal()
    cluster.wait_for(
        lambda: cluster.unfenced_brokers(via=others) == everyone,
        timeout=30,
        what=f"broker {cut_off} unfenced after heal",
    )


def test_a_slow_link_slows_a_transfer_and_fast_restores_it(
    cluster: Cluster, nemesis: NetworkNemesis
) -> None:
    size = 250_000  # 2 Mbit: 2 s at 1 Mbit/s
    nemesis.slow(1, rate_kbit=1000)
    nemesis.slow(1, rate_kbit=1000)  # idempotent
    slow = _transfer_seconds(cluster, source=2, target=1, size=size)
    nemesis.fast(1)
    nemesis.fast(1)
    fast = _transfer_seconds(cluster, source=2, target=1, size=size)
    assert fast < 1.0 < slow, (fast, slow)


def test_stop_removes_every_namespace_link_and_rule() -> None:
    _need_netns()
    cluster = Cluster(brokers=1, combined=True, network="netns")
    slot = _namespaces(cluster).slot
    with cluster:
        cluster.nemesis.isolate(1)
        cluster.nemesis.slow(1)
        assert f"strom{slot}-1" in _names_left(slot)
    assert _names_left(slot) == ""


def test_a_failed_start_leaves_nothing_behind() -> None:
    _need_netns()
    cluster = Cluster(
        brokers=1, combined=True, network="netns", node_config={1: {"num.partitions": -3}}
    )
    with pytest.raises(ClusterError, match=r"num\.partitions"):
        cluster.start()
    assert _names_left(_namespaces(cluster).slot) == ""


def test_a_crashed_runs_leftovers_do_not_break_a_new_network() -> None:
    _need_netns()
    crash = (
        "import os; from strom.testing.netns import NamespaceNetwork\n"
        "network = NamespaceNetwork([1, 2]); network.up(); print(network.slot, flush=True)\n"
        "os._exit(0)  # no down(): the kernel drops the lock, the namespaces stay\n"
    )
    ran = subprocess.run([sys.executable, "-c", crash], capture_output=True, text=True, check=True)
    slot = int(ran.stdout)
    assert f"strom{slot}-2" in _names_left(slot)

    network = NamespaceNetwork([1, 3], slot=slot)
    network.up()
    try:
        assert sorted(network.leftovers()) == sorted(
            [f"strom{slot}", f"strom{slot}v1", f"strom{slot}v3", f"strom{slot}-1", f"strom{slot}-3"]
        )
        assert network.address(3) in run(network.command(3, ["ip", "-o", "addr", "show"]))
    finally:
        network.down()
    assert _names_left(slot) == ""


@pytest.mark.parametrize(
    ("euid", "missing", "reason"),
    [(1000, None, "network namespaces need root"), (0, "ip", "'ip' is not installed")],
)
def test_without_root_or_tools_a_netns_cluster_says_why(
    monkeypatch: pytest.MonkeyPatch, euid: int, missing: str | None, reason: str
) -> None:
    which: Callable[[str], str | None] = shutil.which
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    monkeypatch.setattr(shutil, "which", lambda tool: None if tool == missing else which(tool))
    netns_unavailable.cache_clear()
    try:
        assert (netns_unavailable() or "").startswith(reason)
        with pytest.raises(NetnsError, match=reason):
            Cluster(combined=True, brokers=1, network="netns")
    finally:
        netns_unavailable.cache_clear()


def test_a_loopback_cluster_has_no_network_faults() -> None:
    cluster = Cluster(combined=True, brokers=1)
    try:
        with pytest.raises(ClusterError, match='network="netns"'):
            cluster.nemesis.heal()
    finally:
        cluster.stop()
