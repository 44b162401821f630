"""Fast fencing on a real cluster: a broker whose process dies (its connections close, its
listeners refuse connections) is fenced after ``broker.heartbeat.connection.close.grace.ms``, not
the whole ``broker.session.timeout.ms``; a stopped broker (nothing closes) keeps its session until
the timeout, and so does a live broker whose connection to the controller is reset, even one too
slow (here: stopped) to heartbeat again; a killed active controller is replaced after a pre-vote
round, not the whole fetch timeout."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ClusterMetadata,
    NewTopic,
)

from strom.testing import Cluster, unique_topic_name

pytestmark = pytest.mark.xdist_group("cluster")

SESSION_TIMEOUT_S = 60
"""Far longer than any wait below: a fencing seen here did not come from the session timeout."""
HEARTBEAT_INTERVAL_MS = 2000
"""Kafka's default: twenty close graces (100 ms, the default) between two heartbeats."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    config = {
        "broker.session.timeout.ms": SESSION_TIMEOUT_S * 1000,
        "broker.heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
    }
    with Cluster(brokers=3, controllers=1, config=config) as running:
        yield running


def _controller_lines(cluster: Cluster) -> list[str]:
    return cluster.nodes[cluster.controller_ids[0]].lines


def _leaders(admin: AdminClient, name: str) -> set[int]:
    topic = admin.list_topics(name, timeout=10).topics[name]
    return {partition.leader for partition in topic.partitions.values()}


def test_a_killed_broker_is_fenced_without_waiting_for_its_session(cluster: Cluster) -> None:
    name = unique_topic_name("fast")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic(name, 3, 3)], operation_timeout=30)
    futures[name].result(timeout=60)
    cluster.wait_for(lambda: -1 not in _leaders(admin, name), timeout=30, what="leaders")
    victim = next(iter(_leaders(admin, name)))
    cluster.kill(victim)
    try:
        cluster.wait_for(
            lambda: victim not in cluster.unfenced_brokers(),
            timeout=SESSION_TIMEOUT_S / 3,
            what=f"broker {victim} to be fenced",
        )
        answers: list[ClusterMetadata] = []

        def moved() -> bool:
            answers.append(admin.list_topics(name, timeout=10))
            leaders = {p.leader for p in answers[-1].topics[name].partitions.values()}
            return victim not in leaders and -1 not in leaders

        cluster.wait_for(
            moved, timeout=SESSION_TIMEOUT_S / 3, what=f"new leaders for broker {victim}'s"
        )
        # The answer naming its successors still lists the dead broker (librdkafka would
        # otherwise retire its handle and undo the partitions' move); later ones do not.
        assert victim in answers[-1].brokers
        cluster.wait_for(
            lambda: victim not in admin.list_topics(name, timeout=10).brokers,
            timeout=SESSION_TIMEOUT_S / 3,
            what=f"broker {victim} no longer listed",
        )
        assert any(
            f"fencing broker {victim}: its heartbeat connection closed" in line
            for line in _controller_lines(cluster)
        ), "".join(_controller_lines(cluster)[-20:])
    finally:
        cluster.restart(victim)
    cluster.wait_for(
        lambda: victim in cluster.unfenced_brokers(), timeout=30, what="unfenced after restart"
    )


def test_a_stopped_broker_keeps_its_session(cluster: Cluster) -> None:
    """SIGSTOP closes nothing: the broker is not fenced within many close graces."""
    broker = cluster.broker_ids[-1]
    others = [b for b in cluster.broker_ids if b != broker]
    seen = len(_controller_lines(cluster))
    cluster.pause(broker)
    try:
        time.sleep(5)  # five times the default grace, a twelfth of the session timeout
        assert broker in cluster.unfenced_brokers(via=others)
    finally:
        cluster.resume(broker)
    lines = _controller_lines(cluster)[seen:]
    assert not any(f"fencing broker {broker}" in line for line in lines), "".join(lines)


needs_ss = pytest.mark.skipif(
    shutil.which("ss") is None or os.geteuid() != 0, reason="resets connections with ss -K (root)"
)


def _reset_connections_to_the_controller(cluster: Cluster) -> None:
    controller = cluster.nodes[cluster.controller_ids[0]]
    subprocess.run(
        ["ss", "-K", "dst", controller.host, "dport", "=", str(controller.controller_port)],
        check=True,
        capture_output=True,
    )


@needs_ss
def test_a_live_broker_whose_controller_connection_is_reset_keeps_its_session(
    cluster: Cluster,
) -> None:
    """The brokers' connections to the controller are reset between heartbeats: each broker
    sees its connection end and heartbeats again at once on a new one; whether or not that
    comes within the grace (on a loaded machine it may not), its listeners accept, and none is
    fenced."""
    seen = len(_controller_lines(cluster))
    for _ in range(3):
        _reset_connections_to_the_controller(cluster)
        time.sleep(HEARTBEAT_INTERVAL_MS / 2000)  # longer than the grace
    assert set(cluster.broker_ids) <= cluster.unfenced_brokers()
    lines = _controller_lines(cluster)[seen:]
    assert any("heartbeat connection of broker" in line for line in lines), "nothing was reset"
    assert not any("fencing broker" in line for line in lines), "".join(lines)


@needs_ss
def test_a_stopped_broker_whose_controller_connection_is_reset_keeps_its_session(
    cluster: Cluster,
) -> None:
    """The slowest a live broker can be: stopped (SIGSTOP), so it cannot heartbeat again at all,
    when its connection to the controller is reset. Its kernel still accepts connections on its
    listeners, so the controller leaves it to the session timeout."""
    broker = cluster.broker_ids[-1]
    others = [b for b in cluster.broker_ids if b != broker]
    seen = len(_controller_lines(cluster))
    cluster.pause(broker)
    try:
        _reset_connections_to_the_controller(cluster)
        time.sleep(3)  # thirty default graces, a twentieth of the session timeout
        assert broker in cluster.unfenced_brokers(via=others)
    finally:
        cluster.resume(broker)
    lines = _controller_lines(cluster)[seen:]
    assert any(f"heartbeat connection of broker {broker} closed" in line for line in lines), (
        "nothing was reset"
    )
    assert not any(f"fencing broker {broker}" in line for line in lines), "".join(lines)


def test_a_killed_controller_is_replaced_long_before_the_fetch_timeout() -> None:
    """The other voters see the active controller's connections close: they elect a new one
    after a pre-vote round (Vote v2, KIP-996), without waiting out the fetch timeout."""
    settings = {"controller.quorum.fetch.timeout.ms": SESSION_TIMEOUT_S * 1000}
    with Cluster(brokers=0, controllers=3, config=settings) as controllers:
        victim = controllers.active_controller()
        controllers.kill(victim)
        controllers.wait_for(
            lambda: controllers.active_controller(timeout=1) != victim,
            timeout=20,
            what="a new active controller",
        )
