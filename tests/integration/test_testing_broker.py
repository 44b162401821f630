"""strom.testing: embedded brokers, fault injection and version emulation, driven by real
clients (confluent-kafka, kafka-python, aiokafka)."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka import TopicPartition as ClientTopicPartition
from confluent_kafka.admin import AdminClient
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from strom_harness import KafkaWire

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.protocol.kafka_releases import KAFKA_RELEASES
from strom.server.network.faults import LinkFault
from strom.testing import AsyncBroker, Broker
from strom.testing.broker import _ClientConfigs


def _consume_all(
    broker: _ClientConfigs, topic: str, count: int, partitions: int = 1
) -> list[bytes]:
    from confluent_kafka import Consumer  # noqa: PLC0415

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "unused",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([ClientTopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value() or b"")
    finally:
        consumer.close()
    return values


def _produce(broker: _ClientConfigs, topic: str, values: list[bytes], **settings: Any) -> None:
    errors: list[object] = []
    producer = Producer(broker.producer_config(**settings))
    for value in values:
        producer.produce(topic, value, on_delivery=lambda err, _msg: errors.append(err))
    assert producer.flush(20) == 0
    assert errors == [None] * len(values)


def _advertised(broker: _ClientConfigs) -> dict[int, tuple[int, int]]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with KafkaWire(host, int(port)) as wire:
        response = wire.request(
            ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}


def test_two_in_process_brokers_keep_to_themselves() -> None:
    with Broker() as first, Broker(config={"num.partitions": 3}) as second:
        assert first.bootstrap_servers != second.bootstrap_servers
        topic = first.create_topic()
        _produce(first, topic, [b"a", b"b"])
        _produce(second, "auto", [b"c"])
        assert _consume_all(first, topic, 2) == [b"a", b"b"]
        described = AdminClient(second.admin_config()).list_topics(timeout=10).topics
        assert len(described["auto"].partitions) == 3
        assert topic not in described
        data_dir = first.data_dir
        assert data_dir.exists()
    assert not data_dir.exists()  # a temporary data directory is removed on stop


def test_given_data_dir_survives_a_restart(tmp_path: Any) -> None:
    with Broker(data_dir=tmp_path) as broker:
        topic = broker.create_topic(partitions=2)
        _produce(broker, topic, [b"kept"])
    with Broker(data_dir=tmp_path) as broker:
        assert _consume_all(broker, topic, 1, partitions=2) == [b"kept"]


def test_child_process_broker() -> None:
    with Broker(process=True, config={"num.partitions": 2}) as broker:
        _produce(broker, "in-child", [b"x"])
        assert _consume_all(broker, "in-child", 1, partitions=2) == [b"x"]
        with pytest.raises(RuntimeError, match="in-process"):
            broker.faults.clear()


def test_async_broker_with_aiokafka() -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer  # noqa: PLC0415
    from aiokafka.structs import TopicPartition  # noqa: PLC0415

    async def scenario() -> list[bytes]:
        async with AsyncBroker() as broker:
            topic = await asyncio.to_thread(broker.create_topic)
            producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)
            await producer.start()
            try:
                await producer.send_and_wait(topic, b"async")
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
            await consumer.start()
            try:
                consumer.assign([TopicPartition(topic, 0)])
                consumer.seek(TopicPartition(topic, 0), 0)
                batch = await consumer.getmany(timeout_ms=10_000)
                return [record.value for records in batch.values() for record in records]
            finally:
                await consumer.stop()

    assert asyncio.run(scenario()) == [b"async"]


def test_injected_errors_are_retried_by_the_client() -> None:
    with Broker() as broker:
        topic = broker.create_topic()
        broker.faults.fail("Produce", "not_leader_or_follower", count=2)
        _produce(broker, topic, [b"after-retries"], **{"retry.backoff.ms": 10})
        assert not broker.faults.active  # both injected errors were answered
        assert _consume_all(broker, topic, 1) == [b"after-retries"]


def test_injected_error_reaches_the_application() -> None:
    with Broker() as broker:
        topic = broker.create_topic()
        broker.faults.fail(ApiKey.PRODUCE, "topic_authorization_failed", count=5)
        producer = Producer(broker.producer_config())
        errors: list[Any] = []
        producer.produce(topic, b"refused", on_delivery=lambda err, _msg: errors.append(err))
        producer.flush(20)
        assert [error.name() for error in errors] == ["TOPIC_AUTHORIZATION_FAILED"]
        broker.faults.clear()
        _produce(broker, topic, [b"fine"])
        assert _consume_all(broker, topic, 1) == [b"fine"]  # the refused record is not stored


def test_delayed_responses() -> None:
    with Broker() as broker:
        topic = broker.create_topic()
        _produce(broker, topic, [b"warm-up"])
        broker.faults.delay("Produce", 0.5)
        producer = Producer(broker.producer_config())
        started = time.monotonic()
        producer.produce(topic, b"slow")
        assert producer.flush(10) == 0
        assert time.monotonic() - started >= 0.5
        broker.faults.clear()
        started = time.monotonic()
        producer.produce(topic, b"fast")
        assert producer.flush(10) == 0
        assert time.monotonic() - started < 0.5


def test_a_degraded_link_delays_only_the_clients_it_names() -> None:
    with Broker() as broker:
        topic = broker.create_topic()
        broker.faults.degrade_link(LinkFault(delay=0.4, client_id_prefix="far-"))
        for client_id, slow in (("far-app", True), ("near-app", False)):
            producer = Producer(broker.producer_config(**{"client.id": client_id}))
            producer.produce(topic, b"warm-up")  # the connection and metadata first
            assert producer.flush(10) == 0
            started = time.monotonic()
            producer.produce(topic, client_id.encode())
            assert producer.flush(10) == 0
            assert (time.monotonic() - started >= 0.4) is slow, client_id


def test_lost_answers_are_retried_without_duplicates_by_an_idempotent_producer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with Broker() as broker, caplog.at_level(logging.INFO, logger="strom.server.network"):
        topic = broker.create_topic()
        lossy = LinkFault(loss=0.3, client_id_prefix="lossy-", apis=frozenset({ApiKey.PRODUCE}))
        broker.faults.degrade_link(lossy, seed=5)
        values = [f"value-{n}".encode() for n in range(20)]
        producer = Producer(
            broker.producer_config(
                **{
                    "client.id": "lossy-app",
                    "enable.idempotence": True,
                    "linger.ms": 0,
                    "retry.backoff.ms": 10,
                    "reconnect.backoff.ms": 10,
                    "reconnect.backoff.max.ms": 50,
                }
            )
        )
        for value in values:  # one at a time: each answer may be lost after the append
            producer.produce(topic, value)
            assert producer.flush(20) == 0
        broker.faults.clear()
        lost = [r for r in caplog.records if "injected loss of the answer to Produce" in r.message]
        assert lost, "no Produce answer was lost: the test proves nothing"
        assert _consume_all(broker, topic, len(values)) == values


def test_dropped_connections_reconnect() -> None:
    with Broker() as broker:
        topic = broker.create_topic()
        producer = Producer(broker.producer_config())
        producer.produce(topic, b"before")
        assert producer.flush(10) == 0
        broker.faults.drop_connections()
        producer.produce(topic, b"after")
        assert producer.flush(20) == 0
        assert _consume_all(broker, topic, 2) == [b"before", b"after"]


def test_refused_connections() -> None:
    with Broker() as broker:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        broker.faults.refuse_connections()
        with socket.create_connection((host, int(port)), timeout=5) as refused:
            assert refused.recv(1) == b""  # accepted, then closed at once
        admin = AdminClient(broker.admin_config())
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=1)
        broker.faults.clear()
        assert admin.list_topics(timeout=10).brokers


def test_acks_zero_failure_closes_quietly(caplog: pytest.LogCaptureFixture) -> None:
    with Broker() as broker:
        compacted = broker.create_topic(config={"max.message.bytes": "1000"})
        producer = Producer(broker.producer_config(acks=0))
        with caplog.at_level(logging.INFO, logger="strom"):
            producer.produce(compacted, b"x" * 5000)
            producer.flush(10)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not any(
                "acks=0" in record.getMessage() for record in caplog.records
            ):
                time.sleep(0.05)
    closing = [record for record in caplog.records if "acks=0" in record.getMessage()]
    assert closing
    assert all(record.exc_info is None for record in closing)


@pytest.mark.parametrize("release", ["2.8", "3.6", "4.0"])
def test_version_emulation(release: str) -> None:
    with Broker(kafka_version=release) as broker:
        advertised = _advertised(broker)
        expected = KAFKA_RELEASES[release]
        for api_key, (low, high) in advertised.items():
            served = KAFKA_BROKER_VERSIONS[ApiKey(api_key)]
            assert low == max(expected[ApiKey(api_key)].min_version, served.min_version)
            assert high == min(expected[ApiKey(api_key)].max_version, served.max_version)
        topic = broker.create_topic()
        _produce(broker, topic, [b"confluent"])
        from kafka import KafkaConsumer, KafkaProducer  # noqa: PLC0415
        from kafka import TopicPartition as KafkaTopicPartition  # noqa: PLC0415

        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        producer.send(topic, b"kafka-python").get(timeout=20)
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
        consumer.assign([KafkaTopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        values: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(values) < 2 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values += [record.value for record in records]
        consumer.close()
        assert values == [b"confluent", b"kafka-python"]


def test_emulated_release_caps_versions() -> None:
    with Broker(kafka_version="2.8") as broker:
        advertised = _advertised(broker)
    assert advertised[ApiKey.PRODUCE] == (3, 9)
    assert advertised[ApiKey.FETCH] == (4, 12)
    assert advertised[ApiKey.API_VERSIONS] == (0, 3)
    assert advertised[ApiKey.METADATA] == (0, 11)


def test_unknown_release_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown Kafka release '1\.1'"):
        Broker(kafka_version="1.1")
