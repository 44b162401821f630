"""Topic administration of a running ``strom server`` with kafka-python's KafkaAdminClient and
aiokafka's AIOKafkaAdminClient, each with its own codec and version choices."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError
from strom_harness import StromServer


@pytest.fixture(scope="module")
def kafka_admin(strom_server: StromServer) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=strom_server.bootstrap, client_id="strom-tests")
    yield client
    client.close()


def test_kafka_python_creates_and_deletes_topics(
    kafka_admin: KafkaAdminClient, strom_server: StromServer
) -> None:
    kafka_admin.create_topics(
        [
            NewTopic("kp-orders", num_partitions=3, replication_factor=1),
            NewTopic("kp-defaults"),  # -1, -1: the broker's defaults
        ]
    )
    topics = set(kafka_admin.list_topics())
    assert {"kp-orders", "kp-defaults"} <= topics
    with pytest.raises(TopicAlreadyExistsError):
        kafka_admin.create_topics([NewTopic("kp-orders", 1, 1)])
    (described,) = kafka_admin.describe_topics(["kp-orders"])
    assert described["error_code"] == 0
    assert [p["partition_index"] for p in described["partitions"]] == [0, 1, 2]
    kafka_admin.delete_topics(["kp-orders"])
    assert "kp-orders" not in set(kafka_admin.list_topics())
    assert not (strom_server.data_dir / "kp-orders-0").exists()
    with pytest.raises(UnknownTopicOrPartitionError):
        kafka_admin.delete_topics(["kp-orders"])


def test_kafka_python_describes_configs(kafka_admin: KafkaAdminClient) -> None:
    kafka_admin.create_topics(
        [NewTopic("kp-configured", 1, 1, topic_configs={"retention.ms": "5000"})]
    )
    described = kafka_admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, "kp-configured")],
        include_synonyms=True,
        config_filter="all",
    )
    entries = described["topic"]["kp-configured"]
    retention = entries["retention.ms"]
    assert (retention["value"], retention["config_source"]) == ("5000", "DYNAMIC_TOPIC_CONFIG")
    assert [s["name"] for s in retention["synonyms"]] == ["retention.ms", "log.retention.hours"]
    assert retention["config_type"] == "LONG"
    assert entries["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
    modified = kafka_admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, "kp-configured")]
    )
    assert set(modified["topic"]["kp-configured"]) == {"retention.ms"}


def test_kafka_python_alters_a_kafka_setting_strom_only_records(
    kafka_admin: KafkaAdminClient, strom_server: StromServer
) -> None:
    """Legacy AlterConfigs of the broker resource with a setting of Kafka's catalog."""
    broker = str(strom_server.node_id)
    setting = "sasl.kerberos.min.time.before.relogin"
    kafka_admin.alter_configs(
        [ConfigResource(ConfigResourceType.BROKER, broker, {setting: "30000"})]
    )
    described = kafka_admin.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, broker, [setting])]
    )
    entry = described["broker"][broker][setting]
    assert (entry["value"], entry["config_source"]) == ("30000", "DYNAMIC_BROKER_CONFIG")
    kafka_admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, broker, {})])


def test_kafka_python_describes_log_dirs(
    kafka_admin: KafkaAdminClient, strom_server: StromServer
) -> None:
    kafka_admin.create_topics([NewTopic("kp-logdirs", 2, 1)])
    described = kafka_admin.describe_log_dirs()
    text = repr(described)
    assert str(strom_server.data_dir) in text
    assert "kp-logdirs" in text
    assert "__cluster_metadata" not in text


def test_aiokafka_creates_and_lists_topics(strom_server: StromServer) -> None:
    async def scenario() -> list[str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=strom_server.bootstrap)
        await admin.start()
        try:
            await admin.create_topics(
                [AioNewTopic("aio-orders", num_partitions=2, replication_factor=1)]
            )
            cluster = await admin.describe_cluster()
            assert cluster["cluster_id"] == strom_server.cluster_id
            topics: list[str] = await admin.list_topics()
            return topics
        finally:
            await admin.close()

    assert "aio-orders" in asyncio.run(scenario())
