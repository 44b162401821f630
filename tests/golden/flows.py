"""What each real client does in strom's test flows, run once through the wire recorder.

Each flow creates a topic, changes and reads its configs, produces keyed records (idempotent,
compressed), consumes them in a group, commits offsets with metadata and reads them back,
produces in a transaction with the consumer's offsets, describes and deletes the group and
deletes the topic. ``Names`` gives every string the flow sends, so that a flow can run with short
and long names alike (the kind of length-dependent framing bug the golden frames exist to catch).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiokafka
import aiokafka.admin
import aiokafka.structs
import kafka
import kafka.admin
import kafka.structs
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.cimpl import NewPartitions, NewTopic
from wire_recorder import Exchange, recorded_server

from strom.testing.broker import TEST_DEFAULTS

RECORDS = 5
DEADLINE_S = 20.0


@dataclass(frozen=True)
class Names:
    topic: str
    group: str
    transactional_id: str
    metadata: str
    """The metadata committed with offsets; OffsetFetch must give it back unchanged."""

    @classmethod
    def of_length(cls, client: str, length: int) -> Names:
        def name(kind: str) -> str:
            base = f"{client}-{kind}-"
            return (base + "x" * length)[: max(length, len(base) + 1)]

        return cls(name("topic"), name("group"), name("txn"), name("meta"))


def confluent_kafka_flow(bootstrap: str, names: Names) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(names.topic, 1, 1)])[names.topic].result(DEADLINE_S)
    resource = ConfigResource("TOPIC", names.topic)
    entry = ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)
    admin.incremental_alter_configs(
        [ConfigResource("TOPIC", names.topic, incremental_configs=[entry])]
    )[resource].result(DEADLINE_S)
    admin.describe_configs([resource])[resource].result(DEADLINE_S)
    admin.create_partitions([NewPartitions(names.topic, 2)])[names.topic].result(DEADLINE_S)

    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "compression.type": "lz4"}
    )
    for index in range(RECORDS):
        producer.produce(names.topic, key=f"key-{index}", value=f"value-{index}", partition=0)
    assert producer.flush(DEADLINE_S) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": names.group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([names.topic])
    _poll_until(lambda: consumer.poll(0.5), RECORDS)
    partition = TopicPartition(names.topic, 0, RECORDS, metadata=names.metadata)
    consumer.commit(offsets=[partition], asynchronous=False)
    (committed,) = consumer.committed([TopicPartition(names.topic, 0)], timeout=DEADLINE_S)
    assert committed.offset == RECORDS
    group_metadata = consumer.consumer_group_metadata()

    transactional = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": names.transactional_id}
    )
    transactional.init_transactions(DEADLINE_S)
    transactional.begin_transaction()
    transactional.produce(names.topic, key="txn", value="in-a-transaction", partition=1)
    transactional.send_offsets_to_transaction([partition], group_metadata, DEADLINE_S)
    transactional.commit_transaction(DEADLINE_S)
    consumer.close()

    admin.list_consumer_groups().result(DEADLINE_S)
    admin.describe_consumer_groups([names.group])[names.group].result(DEADLINE_S)
    admin.delete_consumer_groups([names.group])[names.group].result(DEADLINE_S)
    admin.delete_topics([names.topic])[names.topic].result(DEADLINE_S)


def kafka_python_flow(bootstrap: str, names: Names) -> None:
    admin = kafka.admin.KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([kafka.admin.NewTopic(names.topic, 1, 1)])
    admin.create_partitions({names.topic: kafka.admin.NewPartitions(2)})
    resource = kafka.admin.ConfigResource(
        kafka.admin.ConfigResourceType.TOPIC, names.topic, {"retention.ms": "86400000"}
    )
    admin.alter_configs([resource])
    admin.describe_configs(
        [kafka.admin.ConfigResource(kafka.admin.ConfigResourceType.TOPIC, names.topic)]
    )

    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type="gzip")
    for index in range(RECORDS):
        producer.send(names.topic, key=f"key-{index}".encode(), value=f"value-{index}".encode())
    producer.flush(DEADLINE_S)
    producer.close()

    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=names.group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    consumer.subscribe([names.topic])
    _poll_until(lambda: _count(consumer.poll(500)), RECORDS)
    partition = kafka.TopicPartition(names.topic, 0)
    consumer.commit({partition: kafka.structs.OffsetAndMetadata(RECORDS, names.metadata, -1)})
    assert consumer.committed(partition) == RECORDS
    consumer.close()

    transactional = kafka.KafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=names.transactional_id
    )
    transactional.init_transactions()
    transactional.begin_transaction()
    transactional.send(names.topic, key=b"txn", value=b"in-a-transaction", partition=1)
    transactional.send_offsets_to_transaction(
        {partition: kafka.structs.OffsetAndMetadata(RECORDS, names.metadata, -1)}, names.group
    )
    transactional.commit_transaction()
    transactional.close()

    admin.list_groups()
    admin.describe_groups([names.group])
    admin.list_group_offsets(names.group)
    admin.describe_cluster()
    admin.describe_topics([names.topic])
    admin.delete_groups([names.group])
    admin.delete_topics([names.topic])
    admin.close()


def aiokafka_flow(bootstrap: str, names: Names) -> None:
    asyncio.run(_aiokafka(bootstrap, names))


async def _aiokafka(bootstrap: str, names: Names) -> None:
    admin = aiokafka.admin.AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([aiokafka.admin.NewTopic(names.topic, 1, 1)])
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=bootstrap, enable_idempotence=True, compression_type="gzip"
        )
        await producer.start()
        try:
            for index in range(RECORDS):
                await producer.send_and_wait(
                    names.topic, key=f"key-{index}".encode(), value=f"value-{index}".encode()
                )
        finally:
            await producer.stop()

        consumer = aiokafka.AIOKafkaConsumer(
            names.topic,
            bootstrap_servers=bootstrap,
            group_id=names.group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        try:
            seen = 0
            deadline = time.monotonic() + DEADLINE_S
            while seen < RECORDS and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                seen += sum(len(records) for records in batches.values())
            assert seen == RECORDS, seen
            partition = aiokafka.TopicPartition(names.topic, 0)
            await consumer.commit(
                {partition: aiokafka.structs.OffsetAndMetadata(RECORDS, names.metadata)}
            )
            assert await consumer.committed(partition) == RECORDS
        finally:
            await consumer.stop()

        transactional = aiokafka.AIOKafkaProducer(
            bootstrap_servers=bootstrap, transactional_id=names.transactional_id
        )
        await transactional.start()
        try:
            async with transactional.transaction():
                await transactional.send_and_wait(names.topic, b"in-a-transaction", key=b"txn")
                await transactional.send_offsets_to_transaction(
                    {partition: aiokafka.structs.OffsetAndMetadata(RECORDS, names.metadata)},
                    names.group,
                )
        finally:
            await transactional.stop()

        await admin.list_consumer_groups()
        await admin.describe_consumer_groups([names.group])
        await admin.list_consumer_group_offsets(names.group)
        await admin.delete_topics([names.topic])
    finally:
        await admin.close()


def _count(batches: dict[Any, list[Any]]) -> int:
    return sum(len(records) for records in batches.values())


def _poll_until(poll: Callable[[], Any], wanted: int) -> None:
    seen = 0
    deadline = time.monotonic() + DEADLINE_S
    while seen < wanted and time.monotonic() < deadline:
        result = poll()
        if isinstance(result, int):
            seen += result
        elif result is not None:
            with contextlib.suppress(AttributeError):
                assert result.error() is None, result.error()
            seen += 1
    assert seen >= wanted, f"consumed {seen} of {wanted} records"


FLOWS: dict[str, Callable[[str, Names], None]] = {
    "confluent-kafka": confluent_kafka_flow,
    "kafka-python": kafka_python_flow,
    "aiokafka": aiokafka_flow,
}


def record_flow(client: str, names: Names) -> list[Exchange]:
    """Run ``client``'s flow against a fresh ``strom server`` process through a wire recorder."""
    with (
        tempfile.TemporaryDirectory(prefix="strom-golden-") as base,
        recorded_server(Path(base) / "data", overrides=TEST_DEFAULTS) as (_, recorder),
    ):
        FLOWS[client](recorder.address, names)
        return recorder.recorded()
