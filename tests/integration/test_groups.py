"""Consumer groups against a real ``strom server`` with confluent-kafka, kafka-python and
aiokafka: assignment, rebalancing, committed offsets (also across a restart), static members,
and the admin APIs."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from kafka import KafkaConsumer
from strom_harness import StartServer, StromServer

pytestmark = pytest.mark.timeout(120)

OVERRIDES = {"group.initial.rebalance.delay.ms": "300", "offsets.topic.num.partitions": "5"}


@pytest.fixture
def server(start_server: StartServer) -> StromServer:
    return start_server(overrides=OVERRIDES)


def _topic(server: StromServer, partitions: int = 6) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=10)
    return name


def _produce(server: StromServer, topic: str, count: int, partitions: int = 6) -> None:
    producer = Producer({"bootstrap.servers": server.bootstrap})
    for i in range(count):
        producer.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert producer.flush(10) == 0


def _consumer(server: StromServer, group: str, **extra: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": server.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            **extra,
        }
    )


def _poll_until(
    consumers: list[Consumer],
    done: Callable[[], bool],
    seen: list[tuple[int, bytes | None]] | None = None,
) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, "timed out"
        for index, consumer in enumerate(consumers):
            message = consumer.poll(0.1)
            if message is not None and message.error() is None and seen is not None:
                seen.append((index, message.value()))


def _assigned(consumers: list[Consumer]) -> list[set[int]]:
    return [{tp.partition for tp in c.assignment()} for c in consumers]


@pytest.fixture
def closing() -> Iterator[list[Consumer]]:
    consumers: list[Consumer] = []
    yield consumers
    for consumer in consumers:
        consumer.close()


@pytest.mark.parametrize("assignor", ["range", "roundrobin"])
def test_three_members_share_six_partitions_and_consume_once(
    server: StromServer, closing: list[Consumer], assignor: str
) -> None:
    topic = _topic(server)
    _produce(server, topic, 60)
    group = f"g-{uuid.uuid4().hex[:6]}"
    strategy = {"partition.assignment.strategy": assignor}
    closing.extend(_consumer(server, group, **strategy) for _ in range(3))
    for consumer in closing:
        consumer.subscribe([topic])
    seen: list[tuple[int, bytes | None]] = []
    _poll_until(
        closing,
        lambda: len(seen) >= 60 and all(len(a) == 2 for a in _assigned(closing)),
        seen,
    )
    assignments = _assigned(closing)
    assert sorted(p for a in assignments for p in a) == list(range(6))
    assert sorted(int(v or b"-1") for _, v in seen) == list(range(60))


def test_cooperative_sticky_members_join_one_by_one(
    server: StromServer, closing: list[Consumer]
) -> None:
    topic = _topic(server)
    group = f"g-{uuid.uuid4().hex[:6]}"
    strategy = {"partition.assignment.strategy": "cooperative-sticky"}
    for count in (1, 2, 3):
        before = _assigned(closing)
        consumer = _consumer(server, group, **strategy)
        consumer.subscribe([topic])
        closing.append(consumer)
        share = 6 // count
        _poll_until(closing, lambda: all(len(a) == share for a in _assigned(closing)))  # noqa: B023
        kept = zip(_assigned(closing), before, strict=False)
        assert all(now <= then for now, then in kept), "partitions moved needlessly"
    assert sorted(p for a in _assigned(closing) for p in a) == list(range(6))
    _produce(server, topic, 60)
    seen: list[tuple[int, bytes | None]] = []
    _poll_until(closing, lambda: len(seen) >= 60, seen)
    assert sorted(int(v or b"-1") for _, v in seen) == list(range(60))
    closing.pop().close()
    _poll_until(closing, lambda: all(len(a) == 3 for a in _assigned(closing)))
    assert sorted(p for a in _assigned(closing) for p in a) == list(range(6))


def test_two_groups_each_get_every_message(server: StromServer, closing: list[Consumer]) -> None:
    topic = _topic(server)
    _produce(server, topic, 30)
    seen: dict[int, list[tuple[int, bytes | None]]] = {0: [], 1: []}
    groups = [f"g-{uuid.uuid4().hex[:6]}" for _ in range(2)]
    pairs = [[_consumer(server, group) for _ in range(2)] for group in groups]
    for consumers in pairs:
        closing.extend(consumers)
        for consumer in consumers:
            consumer.subscribe([topic])
    for consumers, values in zip(pairs, seen.values(), strict=True):
        _poll_until(consumers, lambda: len(values) >= 30, values)  # noqa: B023
    for values in seen.values():
        assert sorted(int(v or b"-1") for _, v in values) == list(range(30))


def test_closed_member_partitions_move_and_fresh_member_resumes(
    server: StromServer, closing: list[Consumer]
) -> None:
    topic = _topic(server)
    _produce(server, topic, 30)
    group = f"g-{uuid.uuid4().hex[:6]}"
    first, second = _consumer(server, group), _consumer(server, group)
    closing.append(second)
    first.subscribe([topic])
    second.subscribe([topic])
    seen: list[tuple[int, bytes | None]] = []
    _poll_until(
        [first, second],
        lambda: len(seen) >= 30 and all(len(a) == 3 for a in _assigned([first, second])),
        seen,
    )
    first.commit(asynchronous=False)
    second.commit(asynchronous=False)
    first.close()
    _poll_until([second], lambda: len(_assigned([second])[0]) == 6)
    second.close()
    closing.clear()
    _produce(server, topic, 12)
    fresh = _consumer(server, group)
    closing.append(fresh)
    fresh.subscribe([topic])
    later: list[tuple[int, bytes | None]] = []
    _poll_until([fresh], lambda: len(later) >= 12, later)
    assert sorted(int(v or b"-1") for _, v in later) == list(range(12))
    committed = fresh.committed([TopicPartition(topic, p) for p in range(6)], timeout=10)
    assert sum(tp.offset for tp in committed) == 30


def test_extra_members_idle_until_one_leaves(server: StromServer, closing: list[Consumer]) -> None:
    topic = _topic(server, partitions=2)
    group = f"g-{uuid.uuid4().hex[:6]}"
    closing.extend(_consumer(server, group) for _ in range(3))
    for consumer in closing:
        consumer.subscribe([topic])
    _poll_until(closing, lambda: sorted(len(a) for a in _assigned(closing)) == [0, 1, 1])
    busy = next(c for c in closing if c.assignment())
    closing.remove(busy)
    busy.close()
    _poll_until(closing, lambda: sorted(len(a) for a in _assigned(closing)) == [1, 1])


_KILLED_MEMBER = """
import sys
from confluent_kafka import Consumer
consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
consumer.subscribe([sys.argv[3]])
while True:
    consumer.poll(0.1)
"""


def test_killed_member_times_out_and_its_partitions_move(
    server: StromServer, closing: list[Consumer]
) -> None:
    topic = _topic(server)
    group = f"g-{uuid.uuid4().hex[:6]}"
    survivor = _consumer(server, group)
    closing.append(survivor)
    survivor.subscribe([topic])
    _poll_until([survivor], lambda: len(_assigned([survivor])[0]) == 6)
    member = subprocess.Popen(
        [sys.executable, "-c", _KILLED_MEMBER, server.bootstrap, group, topic],
    )
    try:
        _poll_until([survivor], lambda: len(_assigned([survivor])[0]) == 3)
    finally:
        member.kill()
        member.wait()
    _poll_until([survivor], lambda: len(_assigned([survivor])[0]) == 6)


def test_rebalance_storm_ends_with_every_partition_owned_once(
    server: StromServer, closing: list[Consumer]
) -> None:
    topic = _topic(server)
    group = f"g-{uuid.uuid4().hex[:6]}"
    chooser = random.Random(4)
    for _ in range(12):
        if closing and (len(closing) >= 4 or chooser.random() < 0.4):
            closing.pop(chooser.randrange(len(closing))).close()
        else:
            consumer = _consumer(server, group)
            consumer.subscribe([topic])
            closing.append(consumer)
        for consumer in closing:
            consumer.poll(chooser.uniform(0, 0.3))
    if not closing:
        closing.append(_consumer(server, group))
        closing[0].subscribe([topic])

    def settled() -> bool:
        owned = sorted(p for a in _assigned(closing) for p in a)
        return owned == list(range(6)) and all(_assigned(closing))

    _poll_until(closing, settled)


def test_committed_offsets_survive_a_restart(start_server: StartServer, tmp_path: Any) -> None:
    server = start_server(overrides=OVERRIDES, data_dir=tmp_path / "restart")
    topic = _topic(server, partitions=2)
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = _consumer(server, group)
    consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    consumer.commit(
        offsets=[TopicPartition(topic, 0, 7), TopicPartition(topic, 1, 9)], asynchronous=False
    )
    consumer.close()
    server.stop()
    restarted = start_server(overrides=OVERRIDES, data_dir=tmp_path / "restart")
    reader = _consumer(restarted, group)
    try:
        committed = reader.committed(
            [TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10
        )
        assert [tp.offset for tp in committed] == [7, 9]
    finally:
        reader.close()


def test_static_member_rejoins_without_rebalance(
    server: StromServer, closing: list[Consumer]
) -> None:
    topic = _topic(server)
    group = f"g-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    a = _consumer(server, group, **{"group.instance.id": "a", "session.timeout.ms": 10000})
    b = _consumer(server, group, **{"group.instance.id": "b", "session.timeout.ms": 10000})
    closing.append(b)
    a.subscribe([topic])
    b.subscribe([topic])
    _poll_until([a, b], lambda: all(len(x) == 3 for x in _assigned([a, b])))
    before = _assigned([a, b])
    a.close()  # a static member's close sends no LeaveGroup
    a2 = _consumer(server, group, **{"group.instance.id": "a", "session.timeout.ms": 10000})
    closing.append(a2)
    a2.subscribe([topic])
    seen_by_b: set[frozenset[int]] = set()

    def rejoined() -> bool:
        seen_by_b.add(frozenset(_assigned([b])[0]))
        return len(_assigned([a2])[0]) == 3

    _poll_until([a2, b], rejoined)
    assert _assigned([a2, b]) == before
    assert seen_by_b == {frozenset(before[1])}, "b was rebalanced"
    description = admin.describe_consumer_groups([group])[group].result(timeout=10)
    assert sorted(m.group_instance_id for m in description.members) == ["a", "b"]


def test_admin_apis(server: StromServer) -> None:
    topic = _topic(server, partitions=2)
    group = f"g-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    consumer = _consumer(server, group)
    consumer.subscribe([topic])
    _poll_until([consumer], lambda: len(_assigned([consumer])[0]) == 2)
    listed = admin.list_consumer_groups().result(timeout=10)
    assert group in {g.group_id for g in listed.valid}
    empty = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(timeout=10)
    assert group not in {g.group_id for g in empty.valid}
    description = admin.describe_consumer_groups([group])[group].result(timeout=10)
    assert str(description.state).endswith("STABLE")
    assert len(description.members) == 1
    assert {tp.partition for tp in description.members[0].assignment.topic_partitions} == {0, 1}
    consumer.close()
    empty = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(timeout=10)
    assert group in {g.group_id for g in empty.valid}
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 6)]
    )
    admin.alter_consumer_group_offsets([request])[group].result(timeout=10)
    fetched = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    offsets = {tp.partition: tp.offset for tp in fetched.result(timeout=10).topic_partitions}
    assert offsets == {0: 5, 1: 6}
    missing = ConsumerGroupTopicPartitions(group, [TopicPartition("no-such-topic", 0, 1)])
    refused = admin.alter_consumer_group_offsets([missing])[group].result(timeout=10)
    assert refused.topic_partitions[0].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    admin.delete_consumer_groups([group])[group].result(timeout=10)
    listed = admin.list_consumer_groups().result(timeout=10)
    assert group not in {g.group_id for g in listed.valid}


def test_kafka_python_consumer_joins_and_consumes(server: StromServer) -> None:
    topic = _topic(server, partitions=2)
    _produce(server, topic, 10, partitions=2)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=server.bootstrap,
        group_id=f"g-{uuid.uuid4().hex[:6]}",
        auto_offset_reset="earliest",
        consumer_timeout_ms=20000,
    )
    try:
        values = []
        for message in consumer:
            values.append(int(message.value))
            if len(values) == 10:
                break
        assert sorted(values) == list(range(10))
        consumer.commit()
    finally:
        consumer.close()


def test_aiokafka_consumer_joins_and_consumes(server: StromServer) -> None:
    topic = _topic(server, partitions=2)
    _produce(server, topic, 10, partitions=2)

    async def consume() -> list[int]:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=server.bootstrap,
            group_id=f"g-{uuid.uuid4().hex[:6]}",
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            values: list[int] = []
            while len(values) < 10:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 30)
                values.extend(int(m.value) for ms in batch.values() for m in ms)
            await consumer.commit()
            return values
        finally:
            await consumer.stop()

    assert sorted(asyncio.run(consume())) == list(range(10))
