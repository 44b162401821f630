"""Topic and config administration of a running ``strom server`` with confluent-kafka's AdminClient
(librdkafka): CreateTopics, Metadata, DescribeTopics, CreatePartitions, DeleteTopics,
DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, DescribeCluster."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewPartitions, NewTopic
from strom_harness import StromServer

TIMEOUT = 15


@pytest.fixture(scope="module")
def admin(strom_server: StromServer) -> Iterator[AdminClient]:
    yield AdminClient({"bootstrap.servers": strom_server.bootstrap})


def error_of(future: Future[Any]) -> KafkaError | None:
    try:
        future.result(timeout=TIMEOUT)
    except KafkaException as error:
        code: KafkaError = error.args[0]
        return code
    return None


def create(admin: AdminClient, *topics: NewTopic, validate_only: bool = False) -> dict[str, Any]:
    futures = admin.create_topics(
        list(topics), validate_only=validate_only, request_timeout=TIMEOUT
    )
    return {name: error_of(future) for name, future in futures.items()}


def source(entry: ConfigEntry) -> ConfigSource:
    """The entry's source (librdkafka gives the number, typed as the enum)."""
    return ConfigSource(entry.source)


def topic_configs(admin: AdminClient, topic: str) -> Mapping[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    result: Mapping[str, ConfigEntry] = admin.describe_configs([resource])[resource].result(
        timeout=TIMEOUT
    )
    return result


def test_create_topics_with_broker_defaults_and_configs(
    admin: AdminClient, strom_server: StromServer
) -> None:
    outcome = create(
        admin,
        NewTopic("defaults"),  # -1 partitions and replication factor: the broker's defaults
        NewTopic("configured", 3, 1, config={"retention.ms": "1000", "cleanup.policy": "compact"}),
    )
    assert outcome == {"defaults": None, "configured": None}
    topics = admin.list_topics(timeout=TIMEOUT).topics
    assert len(topics["defaults"].partitions) == 1
    configured = topics["configured"]
    assert sorted(configured.partitions) == [0, 1, 2]
    for partition in configured.partitions.values():
        assert (partition.leader, partition.replicas, partition.isrs) == (1, [1], [1])
    assert (strom_server.data_dir / "configured-2").is_dir()
    configs = topic_configs(admin, "configured")
    assert (configs["retention.ms"].value, source(configs["retention.ms"])) == (
        "1000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
    )
    assert configs["cleanup.policy"].value == "compact"
    assert source(configs["segment.bytes"]) == ConfigSource.DEFAULT_CONFIG
    assert configs["segment.bytes"].is_default


def test_validate_only_creates_nothing(admin: AdminClient, strom_server: StromServer) -> None:
    assert create(admin, NewTopic("dry-run", 2, 1), validate_only=True) == {"dry-run": None}
    assert "dry-run" not in admin.list_topics(timeout=TIMEOUT).topics
    assert not (strom_server.data_dir / "dry-run-0").exists()


def test_create_topics_errors(admin: AdminClient) -> None:
    assert create(admin, NewTopic("taken", 1, 1), NewTopic("a.b", 1, 1)) == {
        "taken": None,
        "a.b": None,
    }
    outcome = create(
        admin,
        NewTopic("taken", 1, 1),
        NewTopic("bad name", 1, 1),
        NewTopic("a_b", 1, 1),
        NewTopic("too-many-replicas", 1, 3),
        NewTopic("bad-config", 1, 1, config={"retention.ms": "forever"}),
        NewTopic("unknown-config", 1, 1, config={"retention.whenever": "1"}),
    )
    codes = {name: error.code() for name, error in outcome.items()}
    assert codes == {
        "taken": KafkaError.TOPIC_ALREADY_EXISTS,
        "bad name": KafkaError.TOPIC_EXCEPTION,
        "a_b": KafkaError.TOPIC_EXCEPTION,
        "too-many-replicas": KafkaError.INVALID_REPLICATION_FACTOR,
        "bad-config": KafkaError.INVALID_CONFIG,
        "unknown-config": KafkaError.INVALID_CONFIG,
    }
    assert "collides with topic 'a.b'" in outcome["a_b"].str()
    assert "retention.ms" in outcome["bad-config"].str()


def test_describe_topics_with_topic_ids(admin: AdminClient) -> None:
    assert create(admin, NewTopic("described", 2, 1)) == {"described": None}
    futures = admin.describe_topics(
        TopicCollection(["described", "nowhere"]), include_authorized_operations=True
    )
    described = futures["described"].result(timeout=TIMEOUT)
    assert described.name == "described"
    assert not described.is_internal
    topic_id = uuid.UUID(bytes=_uuid_bytes(described.topic_id))
    assert topic_id.int != 0
    assert [(p.id, p.leader.id, [r.id for r in p.replicas]) for p in described.partitions] == [
        (0, 1, [1]),
        (1, 1, [1]),
    ]
    assert described.authorized_operations  # every operation: there is no authorizer
    missing = error_of(futures["nowhere"])
    assert missing is not None and missing.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def _uuid_bytes(topic_id: Any) -> bytes:
    high: int = topic_id.get_most_significant_bits() & (2**64 - 1)
    low: int = topic_id.get_least_significant_bits() & (2**64 - 1)
    return high.to_bytes(8, "big") + low.to_bytes(8, "big")


def test_create_partitions(admin: AdminClient, strom_server: StromServer) -> None:
    assert create(admin, NewTopic("growing", 1, 1)) == {"growing": None}
    futures = admin.create_partitions([NewPartitions("growing", 4)], request_timeout=TIMEOUT)
    assert error_of(futures["growing"]) is None
    assert len(admin.list_topics(timeout=TIMEOUT).topics["growing"].partitions) == 4
    assert (strom_server.data_dir / "growing-3").is_dir()
    shrink = error_of(admin.create_partitions([NewPartitions("growing", 2)])["growing"])
    assert shrink is not None and shrink.code() == KafkaError.INVALID_PARTITIONS
    missing = error_of(
        admin.create_partitions([NewPartitions("no-such-topic", 2)])["no-such-topic"]
    )
    assert missing is not None and missing.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_delete_topics(admin: AdminClient, strom_server: StromServer) -> None:
    assert create(admin, NewTopic("doomed", 2, 1)) == {"doomed": None}
    futures = admin.delete_topics(["doomed", "never-existed"], request_timeout=TIMEOUT)
    assert error_of(futures["doomed"]) is None
    missing = error_of(futures["never-existed"])
    assert missing is not None and missing.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert "doomed" not in admin.list_topics(timeout=TIMEOUT).topics
    assert not (strom_server.data_dir / "doomed-0").exists()
    # the name is free again
    assert create(admin, NewTopic("doomed", 1, 1)) == {"doomed": None}


def test_incremental_alter_configs(admin: AdminClient) -> None:
    assert create(admin, NewTopic("tuned", 1, 1, config={"retention.ms": "1000"})) == {
        "tuned": None
    }
    resource = ConfigResource(
        ResourceType.TOPIC,
        "tuned",
        incremental_configs=[
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
            ConfigEntry("segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry(
                "cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND
            ),
        ],
    )
    assert error_of(admin.incremental_alter_configs([resource])[resource]) is None
    configs = topic_configs(admin, "tuned")
    assert source(configs["retention.ms"]) == ConfigSource.DEFAULT_CONFIG
    assert configs["segment.bytes"].value == "1048576"
    assert configs["cleanup.policy"].value == "delete,compact"

    invalid = ConfigResource(
        ResourceType.TOPIC,
        "tuned",
        incremental_configs=[
            ConfigEntry("segment.bytes", "-5", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    error = error_of(admin.incremental_alter_configs([invalid])[invalid])
    assert error is not None and error.code() == KafkaError.INVALID_CONFIG
    assert topic_configs(admin, "tuned")["segment.bytes"].value == "1048576"


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_legacy_alter_configs_replaces_every_override(admin: AdminClient) -> None:
    assert create(admin, NewTopic("replaced", 1, 1, config={"retention.ms": "1000"})) == {
        "replaced": None
    }
    resource = ConfigResource(
        ResourceType.TOPIC, "replaced", set_config={"max.message.bytes": "2048"}
    )
    assert error_of(admin.alter_configs([resource])[resource]) is None
    configs = topic_configs(admin, "replaced")
    assert source(configs["max.message.bytes"]) == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert source(configs["retention.ms"]) == ConfigSource.DEFAULT_CONFIG
    bad = ConfigResource(ResourceType.TOPIC, "replaced", set_config={"retention.ms": "soon"})
    error = error_of(admin.alter_configs([bad])[bad])
    assert error is not None and error.code() == KafkaError.INVALID_CONFIG


def test_group_configs_are_altered_and_described(admin: AdminClient) -> None:
    """Kafka 4.0's group configs (ConfigResource type GROUP, KIP-848): the broker's value by
    default, the group's own once set; validated against the broker's bounds."""
    group = f"tuned-{uuid.uuid4().hex[:8]}"  # need not exist

    def group_configs() -> Mapping[str, ConfigEntry]:
        resource = ConfigResource(ResourceType.GROUP, group)
        result: Mapping[str, ConfigEntry] = admin.describe_configs([resource])[resource].result(
            timeout=TIMEOUT
        )
        return result

    def alter(*entries: ConfigEntry) -> KafkaError | None:
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=list(entries))
        return error_of(admin.incremental_alter_configs([resource])[resource])

    before = group_configs()
    assert before["consumer.session.timeout.ms"].value == "45000"
    assert source(before["consumer.session.timeout.ms"]) == ConfigSource.DEFAULT_CONFIG
    assert before["share.auto.offset.reset"].value == "latest"
    set_ = AlterConfigOpType.SET
    assert (
        alter(ConfigEntry("consumer.session.timeout.ms", "50000", incremental_operation=set_))
        is None
    )
    after = group_configs()
    assert after["consumer.session.timeout.ms"].value == "50000"
    assert source(after["consumer.session.timeout.ms"]) == ConfigSource.GROUP_CONFIG
    for name, value in (
        ("consumer.session.timeout.ms", "1000"),  # below group.consumer.min.session.timeout.ms
        ("consumer.heartbeat.interval.ms", "soon"),
        ("no.such.group.config", "1"),
    ):
        error = alter(ConfigEntry(name, value, incremental_operation=set_))
        assert error is not None and error.code() == KafkaError.INVALID_CONFIG, (name, error)
    delete = AlterConfigOpType.DELETE
    assert (
        alter(ConfigEntry("consumer.session.timeout.ms", None, incremental_operation=delete))
        is None
    )
    assert source(group_configs()["consumer.session.timeout.ms"]) == ConfigSource.DEFAULT_CONFIG


def test_describe_broker_configs(admin: AdminClient, strom_server: StromServer) -> None:
    resource = ConfigResource(ResourceType.BROKER, "1")
    configs = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT)
    assert configs["num.partitions"].value == "1"
    assert source(configs["num.partitions"]) == ConfigSource.DEFAULT_CONFIG
    assert source(configs["log.dirs"]) == ConfigSource.STATIC_BROKER_CONFIG
    assert configs["log.dirs"].is_read_only
    assert configs["log.dirs"].value == str(strom_server.data_dir)
    # (librdkafka sends a broker resource to that broker, so another id never reaches us)


def test_describe_cluster(admin: AdminClient, strom_server: StromServer) -> None:
    cluster = admin.describe_cluster(
        include_authorized_operations=True, request_timeout=TIMEOUT
    ).result(timeout=TIMEOUT)
    assert cluster.cluster_id == strom_server.cluster_id
    assert cluster.controller.id == 1
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [
        (1, strom_server.host, strom_server.port)
    ]
    assert cluster.authorized_operations
