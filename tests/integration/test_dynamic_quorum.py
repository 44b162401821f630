"""KIP-853 with real processes: a cluster whose quorum is one controller grows to three with
``strom metadata-quorum add-controller`` and shrinks again with ``remove-controller`` (the
active controller removes itself), while a real producer (confluent-kafka, acks=all) writes
throughout and every acknowledged record is read back by a real consumer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from strom.cli.client_common import CliError
from strom.cli.main import cli
from strom.cli.quorum_client import QuorumState, ask_quorum
from strom.testing import Cluster, unique_topic_name

pytestmark = pytest.mark.xdist_group("cluster")

TIMEOUT = 60.0


def _quorum(servers: str) -> QuorumState | None:
    try:
        state, _ = ask_quorum(servers, controllers=False)
    except CliError:
        return None
    return state


def _voters(servers: str) -> set[int]:
    state = _quorum(servers)
    return set() if state is None else {r.node_id for r in state.replicas if r.voter}


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _run(*args: str) -> str:
    """``strom`` with these arguments; retried while the leader answers that the controller has
    not caught up yet or that the previous change is not committed (REQUEST_TIMED_OUT)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        result = CliRunner().invoke(cli, list(args))
        if result.exit_code == 0:
            return result.output
        if "REQUEST_TIMED_OUT" not in result.output or time.monotonic() > deadline:
            raise AssertionError(f"strom {' '.join(args)}: {result.output}")
        time.sleep(0.5)


def _create(admin: AdminClient, name: str) -> None:
    admin.create_topics([NewTopic(name, num_partitions=1)], operation_timeout=30)[name].result(
        timeout=TIMEOUT
    )


class _Writer(threading.Thread):
    """Produces numbered records until stopped; keeps what was acknowledged and any error."""

    def __init__(self, servers: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": servers, "acks": "all", "linger.ms": 5})
        self.acknowledged: list[bytes] = []
        self.errors: list[str] = []
        self.halt = threading.Event()

    def _delivered(self, error: object, message: object) -> None:
        if error is not None:
            self.errors.append(str(error))
        else:
            self.acknowledged.append(message.value())  # type: ignore[attr-defined]

    def run(self) -> None:
        count = 0
        while not self.halt.is_set():
            self.producer.produce(self.topic, b"record-%d" % count, on_delivery=self._delivered)
            count += 1
            self.producer.poll(0.02)
        self.producer.flush(30)


def test_the_quorum_grows_to_three_controllers_and_shrinks_while_a_client_writes() -> None:
    with Cluster(brokers=1, controllers=3, dynamic_quorum=True) as cluster:
        servers = cluster.bootstrap_servers
        first, *others = cluster.controller_ids
        assert _voters(servers) == {first}
        admin = AdminClient({"bootstrap.servers": servers})
        topic = unique_topic_name()
        _create(admin, topic)
        writer = _Writer(servers, topic)
        writer.start()

        for node_id in others:
            properties = str(cluster.nodes[node_id].properties)
            out = _run(  # kafka-metadata-quorum.sh's order: the options before the verb
                "metadata-quorum",
                "--command-config",
                properties,
                "--bootstrap-server",
                servers,
                "add-controller",
            )
            assert f"added controller {node_id}" in out
        _until(lambda: _voters(servers) == {first, *others}, "three voters")
        _create(admin, unique_topic_name())  # the three-voter quorum commits metadata

        state = _quorum(servers)
        assert state is not None
        leader = next(r for r in state.replicas if r.node_id == state.leader_id)
        assert leader.directory_id is not None
        _run(
            "metadata-quorum",
            "remove-controller",
            "--bootstrap-server",
            servers,
            "--controller-id",
            str(leader.node_id),
            "--controller-directory-id",
            leader.directory_id,
        )
        rest = {first, *others} - {leader.node_id}

        def shrunk() -> bool:
            state = _quorum(servers)
            return state is not None and state.leader_id in rest and _voters(servers) == rest

        _until(shrunk, f"voters {sorted(rest)} and a leader among them")
        _create(admin, unique_topic_name())  # and the two that are left go on committing
        removed = _quorum(servers)
        assert removed is not None
        observers = {r.node_id for r in removed.replicas if not r.voter}
        assert leader.node_id in observers  # it keeps running, as an observer

        writer.halt.set()
        writer.join(timeout=TIMEOUT)
        assert writer.errors == []
        assert len(writer.acknowledged) > 10
        consumer = Consumer(
            {
                "bootstrap.servers": servers,
                "group.id": unique_topic_name(),
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([topic])
        seen: set[bytes] = set()
        deadline = time.monotonic() + TIMEOUT
        while not set(writer.acknowledged) <= seen and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            value = message.value() if message is not None and message.error() is None else None
            if value is not None:
                seen.add(value)
        consumer.close()
        assert set(writer.acknowledged) <= seen
