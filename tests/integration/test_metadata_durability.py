"""Cluster metadata across restarts, auto-creation of topics, static settings as config sources,
and producer ids, against real ``strom server`` processes."""

from __future__ import annotations

import datetime
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer, TopicCollection
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewTopic
from kafka import KafkaProducer
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import ProducerId, TopicName
from kio.static.primitive import i16, i32Timedelta
from strom_harness import StartServer, StromServer

TIMEOUT = 15


def admin_of(server: StromServer) -> AdminClient:
    return AdminClient({"bootstrap.servers": server.bootstrap})


def topic_ids(admin: AdminClient, *names: str) -> dict[str, str]:
    futures = admin.describe_topics(TopicCollection(list(names)))
    return {name: str(f.result(timeout=TIMEOUT).topic_id) for name, f in futures.items()}


def configs_of(admin: AdminClient, topic: str) -> dict[str, tuple[str | None, ConfigSource]]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT)
    return {name: (entry.value, ConfigSource(entry.source)) for name, entry in entries.items()}


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "kill-9"])
def test_metadata_survives_a_restart(
    start_server: StartServer, tmp_path: Path, stop: signal.Signals
) -> None:
    server = start_server()
    admin = admin_of(server)
    futures = admin.create_topics(
        [NewTopic("kept", 3, 1, config={"retention.ms": "123456"}), NewTopic("dropped", 1, 1)]
    )
    for future in futures.values():
        future.result(timeout=TIMEOUT)
    admin.delete_topics(["dropped"])["dropped"].result(timeout=TIMEOUT)
    altered = ConfigResource(
        ResourceType.TOPIC,
        "kept",
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([altered])[altered].result(timeout=TIMEOUT)
    ids_before = topic_ids(admin, "kept")
    configs_before = configs_of(admin, "kept")
    server.stop(stop)

    restarted = start_server(data_dir=tmp_path / "data")
    assert restarted.cluster_id == server.cluster_id
    admin = admin_of(restarted)
    metadata = admin.list_topics(timeout=TIMEOUT)
    assert set(metadata.topics) == {"kept"}
    assert sorted(metadata.topics["kept"].partitions) == [0, 1, 2]
    assert [(b.id, b.port) for b in metadata.brokers.values()] == [(1, restarted.port)]
    assert topic_ids(admin, "kept") == ids_before
    assert configs_of(admin, "kept") == configs_before
    assert configs_before["retention.ms"] == ("123456", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert configs_before["cleanup.policy"][0] == "compact"
    assert not (tmp_path / "data" / "dropped-0").exists()


def test_librdkafka_producer_auto_creates_a_topic(strom_server: StromServer) -> None:
    producer = Producer({"bootstrap.servers": strom_server.bootstrap})
    metadata = producer.list_topics(topic="auto-librdkafka", timeout=TIMEOUT)
    topic = metadata.topics["auto-librdkafka"]
    assert topic.error is None
    assert list(topic.partitions) == [0]
    assert topic.partitions[0].leader == 1
    assert (strom_server.data_dir / "auto-librdkafka-0").is_dir()
    strom_server.wait_for_line(r"auto-created topic auto-librdkafka with 1 partition")


def test_kafka_python_producer_auto_creates_a_topic(strom_server: StromServer) -> None:
    producer = KafkaProducer(bootstrap_servers=strom_server.bootstrap, max_block_ms=10_000)
    try:
        assert producer.partitions_for("auto-kafka-python") == {0}
    finally:
        producer.close(timeout=5)


def test_auto_creation_can_be_disabled(start_server: StartServer) -> None:
    server = start_server(overrides={"auto.create.topics.enable": "false"})
    producer = Producer({"bootstrap.servers": server.bootstrap})
    metadata = producer.list_topics(topic="not-created", timeout=TIMEOUT)
    error = metadata.topics["not-created"].error
    assert error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert "not-created" not in admin_of(server).list_topics(timeout=TIMEOUT).topics


def test_auto_creation_uses_num_partitions_and_invalid_names_are_refused(
    start_server: StartServer,
) -> None:
    server = start_server(overrides={"num.partitions": "3"})

    def metadata(*topics: MetadataRequestTopic) -> Any:
        with server.connect() as wire:
            return wire.request(
                MetadataRequest(
                    topics=topics,
                    allow_auto_topic_creation=True,
                    include_topic_authorized_operations=False,
                )
            )

    by_name = metadata(
        MetadataRequestTopic(topic_id=None, name=TopicName("three")),
        MetadataRequestTopic(topic_id=None, name=TopicName("no good")),
    )
    three, bad = by_name.topics
    assert (three.error_code, len(three.partitions)) == (0, 3)
    assert bad.error_code == 17  # INVALID_TOPIC_EXCEPTION
    # by id (v12+): never auto-created
    (unknown_id,) = metadata(MetadataRequestTopic(topic_id=uuid.uuid4(), name=None)).topics
    assert (unknown_id.name, unknown_id.error_code) == (None, 100)  # UNKNOWN_TOPIC_ID
    (known_id,) = metadata(MetadataRequestTopic(topic_id=three.topic_id, name=None)).topics
    assert (known_id.name, known_id.error_code) == ("three", 0)


def test_static_settings_are_reported_as_static(start_server: StartServer) -> None:
    server = start_server(overrides={"log.retention.bytes": "1000000", "log.roll.hours": "24"})
    admin = admin_of(server)
    admin.create_topics([NewTopic("static", 1, 1)])["static"].result(timeout=TIMEOUT)
    configs = configs_of(admin, "static")
    assert configs["retention.bytes"] == ("1000000", ConfigSource.STATIC_BROKER_CONFIG)
    assert configs["segment.ms"] == ("86400000", ConfigSource.STATIC_BROKER_CONFIG)
    assert configs["segment.bytes"][1] == ConfigSource.DEFAULT_CONFIG


def test_producer_ids_are_never_handed_out_twice(start_server: StartServer, tmp_path: Path) -> None:
    request = InitProducerIdRequest(
        transactional_id=None,
        transaction_timeout=i32Timedelta.parse(datetime.timedelta(seconds=60)),
        producer_id=ProducerId(-1),
        producer_epoch=i16(-1),
    )
    server = start_server()
    with server.connect() as wire:
        first = [wire.request(request).producer_id for _ in range(3)]
    assert first == [0, 1, 2]
    server.stop(signal.SIGKILL)
    restarted = start_server(data_dir=tmp_path / "data")
    with restarted.connect() as wire:
        response = wire.request(request)
    assert (response.error_code, response.producer_epoch) == (0, 0)
    assert response.producer_id == 1000  # the next block: the first one may have been used


def test_topic_config_changes_take_effect_without_a_restart(start_server: StartServer) -> None:
    server = start_server(overrides={"log.retention.check.interval.ms": "200"})
    admin = admin_of(server)
    admin.create_topics([NewTopic("shrinking", 1, 1, config={"segment.bytes": "1024"})])[
        "shrinking"
    ].result(timeout=TIMEOUT)
    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 0})
    for _ in range(30):
        producer.produce("shrinking", b"x" * 100)
        producer.flush(TIMEOUT)  # one batch each: many small segments
    log_dir = server.data_dir / "shrinking-0"
    assert len(list(log_dir.glob("*.log"))) > 3
    altered = ConfigResource(
        ResourceType.TOPIC,
        "shrinking",
        incremental_configs=[
            ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([altered])[altered].result(timeout=TIMEOUT)
    server.wait_for_line(r"retention deleted \d+ segment\(s\) of shrinking-0", timeout=10)
    assert len(list(log_dir.glob("*.log"))) == 1  # the (empty) active segment stays
