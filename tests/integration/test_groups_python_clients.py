"""Consumer groups with kafka-python's KafkaConsumer and aiokafka's AIOKafkaConsumer against a
real ``strom server``: sharing partitions, several groups, idle extra members, a rebalance
storm, and a member killed with SIGKILL.

Each member runs in a thread of its own (aiokafka: its own event loop in that thread), as a
consumer in its own process would, so that one member blocked in a rebalance never holds up
the others. The test thread reads their assignments and messages.
"""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import ConsumerGroupState, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from kafka import KafkaConsumer
from strom_harness import StromServer, start_strom_server

pytestmark = pytest.mark.timeout(240)

OVERRIDES = {"group.initial.rebalance.delay.ms": "500", "offsets.topic.num.partitions": "5"}
SESSION_TIMEOUT_MS = 6000
SETTINGS: dict[str, Any] = {
    "auto_offset_reset": "earliest",
    "enable_auto_commit": True,
    "auto_commit_interval_ms": 500,
    "session_timeout_ms": SESSION_TIMEOUT_MS,
    "heartbeat_interval_ms": 500,
}
"""Settings both clients name alike."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StromServer]:
    base = tmp_path_factory.mktemp("strom-groups")
    process = start_strom_server(data_dir=base / "data", cwd=base, overrides=OVERRIDES)
    yield process
    process.stop(signal.SIGTERM)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _topic(server: StromServer, partitions: int) -> str:
    name = _name("t")
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=10)
    return name


def _produce(server: StromServer, topic: str, count: int, partitions: int) -> None:
    """Values ``0..count-1`` spread round robin over the partitions."""
    producer = Producer({"bootstrap.servers": server.bootstrap})
    for i in range(count):
        producer.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert producer.flush(10) == 0


def _eventually(check: Callable[[], bool], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.1)


class Member:
    """A group member consuming in a thread of its own until ``close`` (which leaves the group)."""

    def __init__(self, server: StromServer, group: str, topic: str) -> None:
        self.bootstrap = server.bootstrap
        self.group = group
        self.topic = topic
        self._lock = threading.Lock()
        self._assignment: frozenset[int] = frozenset()
        self._values: list[int] = []
        self._stop = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self.run()
        except BaseException as error:  # reported by close()
            self._failure = error

    def run(self) -> None:
        """Consume, calling ``record`` after every poll, until ``stopping``."""
        raise NotImplementedError

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def record(self, partitions: set[int], values: list[int]) -> None:
        with self._lock:
            self._assignment = frozenset(partitions)
            self._values.extend(values)

    @property
    def assignment(self) -> frozenset[int]:
        with self._lock:
            return self._assignment

    @property
    def values(self) -> list[int]:
        with self._lock:
            return list(self._values)

    def stop(self) -> None:
        """Ask the member to leave after its current poll (``close`` waits for it)."""
        self._stop.set()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        assert not self._thread.is_alive(), "the member did not stop"
        if self._failure is not None:
            raise self._failure


class KafkaPythonMember(Member):
    def run(self) -> None:
        consumer = KafkaConsumer(
            self.topic, bootstrap_servers=self.bootstrap, group_id=self.group, **SETTINGS
        )
        try:
            while not self.stopping:
                batches = consumer.poll(timeout_ms=100)
                values = [int(r.value) for records in batches.values() for r in records]
                self.record({tp.partition for tp in consumer.assignment()}, values)
        finally:
            consumer.close()


class AioKafkaMember(Member):
    def run(self) -> None:
        asyncio.run(self._consume())

    async def _consume(self) -> None:
        consumer = AIOKafkaConsumer(
            self.topic, bootstrap_servers=self.bootstrap, group_id=self.group, **SETTINGS
        )
        await consumer.start()
        try:
            while not self.stopping:
                batches = await consumer.getmany(timeout_ms=100)
                values = [int(r.value) for records in batches.values() for r in records]
                self.record({tp.partition for tp in consumer.assignment()}, values)
        finally:
            await consumer.stop()


CLIENTS: dict[str, type[Member]] = {"kafka-python": KafkaPythonMember, "aiokafka": AioKafkaMember}


@pytest.fixture(params=sorted(CLIENTS))
def client(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def members(server: StromServer, client: str) -> Iterator[Callable[[str, str], Member]]:
    """Start members of the client under test; every one still running is closed at the end."""
    started: list[Member] = []

    def start(group: str, topic: str) -> Member:
        member = CLIENTS[client](server, group, topic)
        started.append(member)
        return member

    yield start
    for member in started:
        if not member.stopping:
            member.close()


def _owned_once(group: list[Member], partitions: int) -> bool:
    """Every partition owned by exactly one member (and, with enough partitions, none idle)."""
    owned = sorted(p for member in group for p in member.assignment)
    busy = all(member.assignment for member in group) or len(group) > partitions
    return owned == list(range(partitions)) and busy


def _coordinator_assignment(server: StromServer, group: str) -> list[set[int]]:
    """The partitions of each member, as the coordinator describes the group (it is Stable)."""
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    description = admin.describe_consumer_groups([group])[group].result(timeout=10)
    assert description.state is ConsumerGroupState.STABLE
    return sorted(
        ({tp.partition for tp in m.assignment.topic_partitions} for m in description.members),
        key=sorted,
    )


def test_three_members_on_six_partitions_get_two_each_and_consume_once(
    server: StromServer, members: Callable[[str, str], Member]
) -> None:
    topic, group = _topic(server, 6), _name("g")
    trio = [members(group, topic) for _ in range(3)]
    _eventually(lambda: [len(m.assignment) for m in trio] == [2, 2, 2], "two partitions each")
    assert _owned_once(trio, 6)
    _produce(server, topic, 120, 6)
    _eventually(lambda: sum(len(m.values) for m in trio) >= 120, "every message is consumed")
    assert sorted(map(len, _coordinator_assignment(server, group))) == [2, 2, 2]
    assignments = [member.assignment for member in trio]
    for member in trio:  # all at once: no rebalance hands one's partitions to another
        member.stop()
    for member in trio:  # what each member polled until it left is all it will ever see
        member.close()
    assert sorted(v for m in trio for v in m.values) == list(range(120))
    for member, assignment in zip(trio, assignments, strict=True):
        assert {v % 6 for v in member.values} == assignment


def test_two_groups_each_get_every_message(
    server: StromServer, members: Callable[[str, str], Member]
) -> None:
    topic = _topic(server, 6)
    _produce(server, topic, 60, 6)
    groups = [[members(group, topic) for _ in range(2)] for group in (_name("a"), _name("b"))]
    for pair in groups:
        _eventually(lambda: len({v for m in pair for v in m.values}) == 60, "all 60 arrive")  # noqa: B023
        assert {v for m in pair for v in m.values} == set(range(60))


def test_extra_members_stay_idle_until_one_leaves(
    server: StromServer, members: Callable[[str, str], Member]
) -> None:
    topic, group = _topic(server, 2), _name("g")
    trio = [members(group, topic) for _ in range(3)]
    _eventually(lambda: _owned_once(trio, 2), "both partitions are owned once")
    (idle,) = [m for m in trio if not m.assignment]
    assert sorted(len(m) for m in _coordinator_assignment(server, group)) == [0, 1, 1]
    leaving = next(m for m in trio if m.assignment)
    leaving.close()
    rest = [m for m in trio if m is not leaving]
    _eventually(lambda: _owned_once(rest, 2), "the idle member takes over")
    assert len(idle.assignment) == 1
    _produce(server, topic, 10, 2)
    _eventually(
        lambda: set(idle.values) >= {v for v in range(10) if v % 2 in idle.assignment},
        "it consumes",
    )


def test_rebalance_storm_ends_with_every_partition_owned_once(
    server: StromServer, members: Callable[[str, str], Member]
) -> None:
    topic, group = _topic(server, 6), _name("g")
    chooser = random.Random(848)
    running: list[Member] = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if running and (len(running) >= 4 or chooser.random() < 0.45):
            running.pop(chooser.randrange(len(running))).close()
        else:
            running.append(members(group, topic))
        time.sleep(chooser.uniform(0, 1.0))
    if not running:
        running.append(members(group, topic))
    _eventually(lambda: _owned_once(running, 6), "every partition is owned once")
    owned = _coordinator_assignment(server, group)
    assert sorted(p for partitions in owned for p in partitions) == list(range(6))
    assert len(owned) == len(running)


_KILLED_MEMBER: dict[str, str] = {
    "kafka-python": """
import sys
from kafka import KafkaConsumer
consumer = KafkaConsumer(sys.argv[3], bootstrap_servers=sys.argv[1], group_id=sys.argv[2],
                         session_timeout_ms=int(sys.argv[4]), heartbeat_interval_ms=500)
while True:
    consumer.poll(timeout_ms=100)
    if consumer.assignment():
        print("assigned", flush=True)
""",
    "aiokafka": """
import asyncio, sys
from aiokafka import AIOKafkaConsumer
async def main():
    consumer = AIOKafkaConsumer(sys.argv[3], bootstrap_servers=sys.argv[1], group_id=sys.argv[2],
                                session_timeout_ms=int(sys.argv[4]), heartbeat_interval_ms=500)
    await consumer.start()
    while True:
        await consumer.getmany(timeout_ms=100)
        if consumer.assignment():
            print("assigned", flush=True)
asyncio.run(main())
""",
}


def test_killed_member_times_out_and_its_partitions_move(
    server: StromServer, members: Callable[[str, str], Member], client: str
) -> None:
    topic, group = _topic(server, 6), _name("g")
    survivor = members(group, topic)
    _eventually(lambda: len(survivor.assignment) == 6, "the first member owns all")
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _KILLED_MEMBER[client],
            server.bootstrap,
            group,
            topic,
            str(SESSION_TIMEOUT_MS),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "assigned"
        _eventually(lambda: len(survivor.assignment) == 3, "the child takes half")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # the coordinator still counts the dead member until its session times out
    assert len(_coordinator_assignment(server, group)) == 2
    _eventually(lambda: len(survivor.assignment) == 6, "the survivor owns all again")
    assert _coordinator_assignment(server, group) == [set(range(6))]
