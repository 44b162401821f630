"""The metadata and admin handlers, every version they serve, through the real codec.

Each exchange encodes the request, decodes it as the network layer does, runs the handler,
encodes the response, decodes it again and checks that re-encoding gives the same bytes
(``AdminNode.exchange``); the tests then check what Kafka would answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_harness import CLUSTER_ID, HOST, NODE_ID, PORT, AdminNode
from admin_requests import (
    alter_configs_request,
    create_partitions_request,
    create_topics_request,
    delete_topics_request,
    describe_cluster_request,
    describe_configs_request,
    describe_log_dirs_request,
    incremental_alter_configs_request,
    init_producer_id_request,
    metadata_request,
)

from strom.common import ErrorCode, TopicPartition
from strom.controller import PRODUCER_ID_BLOCK_SIZE
from strom.metadata import ConfigResourceType
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.protocol.records import Record, build_batch
from strom.server.configs.config_entries import ConfigSource

TOPIC = ConfigResourceType.TOPIC
BROKER = ConfigResourceType.BROKER
OMITTED = -(2**31)


def versions(api: ApiKey) -> list[int]:
    return list(KAFKA_BROKER_VERSIONS[api])


@pytest.fixture
def node(tmp_path: Path) -> Iterator[AdminNode]:
    node = AdminNode(tmp_path / "data")
    yield node
    node.close()


def create(node: AdminNode, name: str, partitions: int = 1, **configs: str) -> None:
    response = node.request(
        create_topics_request(
            7, [(name, partitions, -1, {k.replace("_", "."): v for k, v in configs.items()})]
        )
    )
    assert response.topics[0].error_code == ErrorCode.none, response


# --- Metadata -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.METADATA))
def test_metadata_every_version(node: AdminNode, version: int) -> None:
    create(node, "orders", 2)
    response = node.request(metadata_request(version, ["orders"]))
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [(NODE_ID, HOST, PORT)]
    if version >= 1:
        assert response.controller_id == NODE_ID
    if version >= 2:
        assert response.cluster_id == CLUSTER_ID
    (topic,) = response.topics
    assert (topic.error_code, topic.name) == (ErrorCode.none, "orders")
    assert [p.partition_index for p in topic.partitions] == [0, 1]
    partition = topic.partitions[0]
    assert (partition.leader_id, partition.replica_nodes, partition.isr_nodes) == (1, (1,), (1,))
    if version >= 7:
        assert partition.leader_epoch == 0
    if version >= 10:
        orders = node.image.topic("orders")
        assert orders is not None and topic.topic_id == orders.topic_id


@pytest.mark.parametrize(("version", "topics"), [(0, ()), (1, None), (12, None)])
def test_metadata_all_topics(node: AdminNode, version: int, topics: tuple[str] | None) -> None:
    create(node, "b")
    create(node, "a")
    response = node.request(metadata_request(version, topics))
    assert [t.name for t in response.topics] == ["a", "b"]


def test_metadata_empty_list_is_no_topics_from_v1(node: AdminNode) -> None:
    create(node, "a")
    assert node.request(metadata_request(1, [])).topics == ()


def test_metadata_auto_creates_unknown_topics(node: AdminNode) -> None:
    response = node.request(metadata_request(12, ["fresh", "fresh"]))
    (topic,) = response.topics
    assert (topic.name, topic.error_code, len(topic.partitions)) == ("fresh", ErrorCode.none, 1)
    assert topic.partitions[0].leader_id == NODE_ID
    assert node.log_manager.get(TopicPartition("fresh", 0)) is not None


def test_metadata_auto_creation_follows_num_partitions(tmp_path: Path) -> None:
    node = AdminNode(tmp_path / "data", {"num.partitions": "3"})
    try:
        (topic,) = node.request(metadata_request(3, ["fresh"])).topics
        assert len(topic.partitions) == 3
    finally:
        node.close()


@pytest.mark.parametrize("version", [4, 13])
def test_metadata_does_not_create_when_the_request_says_not_to(
    node: AdminNode, version: int
) -> None:
    (topic,) = node.request(
        metadata_request(version, ["fresh"], allow_auto_topic_creation=False)
    ).topics
    assert topic.error_code == ErrorCode.unknown_topic_or_partition
    assert node.image.topic("fresh") is None


def test_metadata_does_not_create_when_disabled(tmp_path: Path) -> None:
    node = AdminNode(tmp_path / "data", {"auto.create.topics.enable": "false"})
    try:
        (topic,) = node.request(metadata_request(9, ["fresh"])).topics
        assert topic.error_code == ErrorCode.unknown_topic_or_partition
    finally:
        node.close()


def test_metadata_invalid_and_colliding_names(node: AdminNode) -> None:
    create(node, "a.b")
    response = node.request(metadata_request(12, ["bad name", "a_b", "__cluster_metadata"]))
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("bad name", ErrorCode.invalid_topic_exception),
        ("a_b", ErrorCode.unknown_topic_or_partition),  # the controller refused the collision
        ("__cluster_metadata", ErrorCode.unknown_topic_or_partition),  # never a client's topic
    ]


def test_metadata_by_topic_id(node: AdminNode) -> None:
    create(node, "orders")
    orders = node.image.topic("orders")
    assert orders is not None
    unknown = uuid.uuid4()
    response = node.request(metadata_request(12, [], ids=[orders.topic_id, unknown]))
    assert [(t.name, t.topic_id, t.error_code) for t in response.topics] == [
        ("orders", orders.topic_id, ErrorCode.none),
        (None, unknown, ErrorCode.unknown_topic_id),
    ]


def test_metadata_topic_ids_before_v12_are_invalid(node: AdminNode) -> None:
    response = node.request(metadata_request(10, [], ids=[uuid.uuid4()]))
    assert [(t.name, t.error_code) for t in response.topics] == [("", ErrorCode.invalid_request)]
    assert response.brokers == ()


@pytest.mark.parametrize("version", [8, 10, 11, 13])
def test_metadata_authorized_operations(node: AdminNode, version: int) -> None:
    create(node, "orders")
    asked = node.request(metadata_request(version, ["orders"], authorized_operations=True))
    not_asked = node.request(metadata_request(version, ["orders"]))
    assert asked.topics[0].topic_authorized_operations == 3576
    assert not_asked.topics[0].topic_authorized_operations == OMITTED
    if version <= 10:
        assert asked.cluster_authorized_operations == 8096
        assert not_asked.cluster_authorized_operations == OMITTED


def test_metadata_internal_topic(node: AdminNode) -> None:
    (topic,) = node.request(metadata_request(1, ["__consumer_offsets"])).topics
    assert topic.is_internal
    assert len(topic.partitions) == 50
    assert dict(node.image.topic_configs("__consumer_offsets"))["cleanup.policy"] == "compact"


def test_metadata_v0_bytes(node: AdminNode) -> None:
    create(node, "t")
    _, frame = node.exchange(metadata_request(0, ["t"]))
    host = HOST.encode()
    expected = (
        "0000002a"  # correlation id
        "00000001"  # one broker
        "00000001" + f"{len(host):04x}" + host.hex() + f"{PORT:08x}"
        "00000001"  # one topic
        "0000" + "0001" + b"t".hex() + "00000001"  # no error, name, one partition
        "0000" + "00000000" + "00000001"  # no error, partition 0, leader 1
        "00000001" + "00000001"  # replicas [1]
        "00000001" + "00000001"  # isr [1]
    )
    assert frame.hex() == expected


# --- CreateTopics ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_TOPICS))
def test_create_topics_every_version(node: AdminNode, version: int) -> None:
    response = node.request(
        create_topics_request(version, [("orders", -1, -1, {"retention.ms": "1000"})])
    )
    (result,) = response.topics
    assert (result.name, result.error_code) == ("orders", ErrorCode.none)
    if version >= 5:
        assert (result.num_partitions, result.replication_factor) == (1, 1)
        configs = {c.name: (c.value, c.config_source) for c in result.configs}
        assert configs["retention.ms"] == ("1000", ConfigSource.TOPIC_CONFIG)
        assert configs["segment.bytes"] == ("1073741824", ConfigSource.DEFAULT_CONFIG)
    if version >= 7:
        orders = node.image.topic("orders")
        assert orders is not None and result.topic_id == orders.topic_id


def test_create_topics_errors(node: AdminNode) -> None:
    create(node, "taken")
    create(node, "a.b")
    response = node.request(
        create_topics_request(
            7,
            [
                ("taken", 1, 1, {}),
                ("bad/name", 1, 1, {}),
                ("a_b", 1, 1, {}),
                ("rf", 1, 3, {}),
                ("parts", 0, 1, {}),
                ("conf", 1, 1, {"retention.ms": "soon"}),
                ("unknown-conf", 1, 1, {"no.such.setting": "1"}),
            ],
        )
    )
    codes = {t.name: t.error_code for t in response.topics}
    assert codes == {
        "taken": ErrorCode.topic_already_exists,
        "bad/name": ErrorCode.invalid_topic_exception,
        "a_b": ErrorCode.invalid_topic_exception,
        "rf": ErrorCode.invalid_replication_factor,
        "parts": ErrorCode.invalid_partitions,
        "conf": ErrorCode.invalid_config,
        "unknown-conf": ErrorCode.invalid_config,
    }
    assert all(t.error_message for t in response.topics)
    failed = response.topics[0]
    assert (failed.num_partitions, failed.replication_factor, failed.configs) == (-1, -1, ())


def test_create_topics_validate_only(node: AdminNode) -> None:
    response = node.request(create_topics_request(7, [("dry", 4, 1, {})], validate_only=True))
    (result,) = response.topics
    assert (result.error_code, result.num_partitions) == (ErrorCode.none, 4)
    assert result.topic_id is None  # the zero id: nothing was created
    assert node.image.topic("dry") is None
    assert node.log_manager.get(TopicPartition("dry", 0)) is None


# --- DeleteTopics, CreatePartitions ---------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_TOPICS))
def test_delete_topics_every_version(node: AdminNode, version: int) -> None:
    create(node, "orders")
    response = node.request(delete_topics_request(version, ["orders", "missing"]))
    assert [(r.name, r.error_code) for r in response.responses] == [
        ("orders", ErrorCode.none),
        ("missing", ErrorCode.unknown_topic_or_partition),
    ]
    assert node.image.topic("orders") is None


def test_delete_topics_by_id(node: AdminNode) -> None:
    create(node, "orders")
    orders = node.image.topic("orders")
    assert orders is not None
    unknown = uuid.uuid4()
    response = node.request(delete_topics_request(6, ids=[orders.topic_id, unknown]))
    assert [(r.name, r.topic_id, r.error_code) for r in response.responses] == [
        ("orders", orders.topic_id, ErrorCode.none),
        (None, unknown, ErrorCode.unknown_topic_id),
    ]


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_PARTITIONS))
def test_create_partitions_every_version(node: AdminNode, version: int) -> None:
    create(node, "orders")
    response = node.request(create_partitions_request(version, "orders", 3))
    assert [(r.name, r.error_code) for r in response.results] == [("orders", ErrorCode.none)]
    orders = node.image.topic("orders")
    assert orders is not None and orders.num_partitions == 3
    again = node.request(create_partitions_request(version, "orders", 2)).results[0]
    assert again.error_code == ErrorCode.invalid_partitions
    assert again.error_message


# --- Configs --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_CONFIGS))
def test_describe_configs_every_version(node: AdminNode, version: int) -> None:
    create(node, "orders", retention_ms="1000")
    response = node.request(
        describe_configs_request(
            version,
            [(TOPIC, "orders", None), (BROKER, str(NODE_ID), ["num.partitions"])],
            synonyms=True,
            documentation=True,
        )
    )
    topic, broker = response.results
    assert topic.error_code == ErrorCode.none
    entries = {c.name: c for c in topic.configs}
    retention = entries["retention.ms"]
    assert (retention.value, retention.config_source, retention.read_only) == (
        "1000",
        ConfigSource.TOPIC_CONFIG,
        False,
    )
    assert [s.name for s in retention.synonyms] == ["retention.ms", "log.retention.hours"]
    assert entries["cleanup.policy"].config_source == ConfigSource.DEFAULT_CONFIG
    assert [c.name for c in broker.configs] == ["num.partitions"]
    if version >= 3:
        assert retention.config_type == 5  # LONG
        assert retention.documentation


def test_describe_configs_without_synonyms_or_documentation(node: AdminNode) -> None:
    create(node, "orders")
    response = node.request(describe_configs_request(4, [(TOPIC, "orders", ["segment.bytes"])]))
    (entry,) = response.results[0].configs
    assert (entry.synonyms, entry.documentation) == ((), None)


def test_describe_configs_errors(node: AdminNode) -> None:
    response = node.request(
        describe_configs_request(
            4,
            [
                (TOPIC, "missing", None),
                (TOPIC, "bad name", None),
                (BROKER, "2", None),
                (BROKER, "one", None),
                (ConfigResourceType.GROUP, "", None),
                (ConfigResourceType.BROKER_LOGGER, "1", None),
                (BROKER, "", None),
            ],
        )
    )
    assert [r.error_code for r in response.results] == [
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.invalid_topic_exception,
        ErrorCode.invalid_request,
        ErrorCode.invalid_request,
        ErrorCode.invalid_request,
        ErrorCode.invalid_request,
        ErrorCode.none,
    ]
    assert response.results[-1].configs == ()  # no cluster-wide dynamic defaults yet


@pytest.mark.parametrize("version", versions(ApiKey.ALTER_CONFIGS))
def test_alter_configs_replaces_every_override(node: AdminNode, version: int) -> None:
    create(node, "orders", retention_ms="1000", cleanup_policy="compact")
    response = node.request(
        alter_configs_request(version, TOPIC, "orders", {"segment.bytes": "4096"})
    )
    assert [(r.resource_name, r.error_code) for r in response.responses] == [
        ("orders", ErrorCode.none)
    ]
    assert dict(node.image.topic_configs("orders")) == {"segment.bytes": "4096"}
    config = node.log_manager.all()[TopicPartition("orders", 0)].config
    assert (config.segment_bytes, config.retention_ms) == (4096, 604800000)
    bad = node.request(alter_configs_request(version, TOPIC, "orders", {"retention.ms": "x"}))
    assert bad.responses[0].error_code == ErrorCode.invalid_config
    assert bad.responses[0].error_message


@pytest.mark.parametrize("version", versions(ApiKey.INCREMENTAL_ALTER_CONFIGS))
def test_incremental_alter_configs(node: AdminNode, version: int) -> None:
    create(node, "orders", retention_ms="1000")
    set_, delete, append = 0, 1, 2
    response = node.request(
        incremental_alter_configs_request(
            version,
            TOPIC,
            "orders",
            [
                ("retention.ms", delete, None),
                ("cleanup.policy", append, "compact"),
                ("max.message.bytes", set_, "2000"),
            ],
        )
    )
    assert response.responses[0].error_code == ErrorCode.none
    assert dict(node.image.topic_configs("orders")) == {
        "cleanup.policy": "delete,compact",
        "max.message.bytes": "2000",
    }
    assert node.log_manager.all()[TopicPartition("orders", 0)].config.max_message_bytes == 2000
    bad = node.request(
        incremental_alter_configs_request(version, TOPIC, "orders", [("segment.bytes", set_, "1")])
    )
    assert bad.responses[0].error_code == ErrorCode.invalid_config
    missing = node.request(
        incremental_alter_configs_request(version, TOPIC, "nope", [("segment.bytes", 0, "9999")])
    )
    assert missing.responses[0].error_code == ErrorCode.unknown_topic_or_partition


def test_broker_configs_round_trip(node: AdminNode) -> None:
    response = node.request(
        incremental_alter_configs_request(1, BROKER, "", [("log.retention.bytes", 0, "5000")])
    )
    assert response.responses[0].error_code == ErrorCode.none
    (default,) = node.request(describe_configs_request(4, [(BROKER, "", None)])).results
    assert [(c.name, c.value, c.config_source) for c in default.configs] == [
        ("log.retention.bytes", "5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    ]
    read_only = node.request(
        incremental_alter_configs_request(1, BROKER, "1", [("node.id", 0, "5")])
    )
    assert read_only.responses[0].error_code == ErrorCode.invalid_config


# --- DescribeCluster, DescribeLogDirs, InitProducerId ---------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_CLUSTER))
def test_describe_cluster_every_version(node: AdminNode, version: int) -> None:
    response = node.request(describe_cluster_request(version))
    assert response.error_code == ErrorCode.none
    assert (response.cluster_id, response.controller_id) == (CLUSTER_ID, NODE_ID)
    assert [(b.broker_id, b.host, b.port) for b in response.brokers] == [(NODE_ID, HOST, PORT)]
    assert response.cluster_authorized_operations == 8096


def test_describe_cluster_endpoint_types(node: AdminNode) -> None:
    controllers = node.request(describe_cluster_request(1, endpoint_type=2))
    assert controllers.error_code == ErrorCode.mismatched_endpoint_type
    assert controllers.brokers == ()
    unknown = node.request(describe_cluster_request(2, endpoint_type=7))
    assert unknown.error_code == ErrorCode.unsupported_endpoint_type


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_LOG_DIRS))
def test_describe_log_dirs_every_version(node: AdminNode, version: int) -> None:
    create(node, "orders", 2)
    create(node, "other")
    batch = build_batch([Record(0, 1000, None, b"x" * 100)])
    node.log_manager.all()[TopicPartition("orders", 1)].append(batch)
    response = node.request(describe_log_dirs_request(version))
    (result,) = response.results
    assert result.error_code == ErrorCode.none
    assert result.log_dir == str(node.data_dir)
    sizes = {
        (t.name, p.partition_index): p.partition_size for t in result.topics for p in t.partitions
    }
    assert sizes == {("orders", 0): 0, ("orders", 1): len(batch), ("other", 0): 0}
    assert all(
        p.offset_lag == 0 and not p.is_future_key for t in result.topics for p in t.partitions
    )
    if version >= 4:
        assert result.total_bytes > 0 and result.usable_bytes >= 0
    wanted = node.request(describe_log_dirs_request(version, {"orders": [1], "missing": [0]}))
    assert [
        (t.name, [p.partition_index for p in t.partitions]) for t in wanted.results[0].topics
    ] == [("orders", [1])]


@pytest.mark.parametrize("version", versions(ApiKey.INIT_PRODUCER_ID))
def test_init_producer_id_every_version(node: AdminNode, version: int) -> None:
    first = node.request(init_producer_id_request(version))
    second = node.request(init_producer_id_request(version))
    assert (first.error_code, first.producer_id, first.producer_epoch) == (ErrorCode.none, 0, 0)
    assert second.producer_id == 1
    # The first transactional request creates __transaction_state (no FindCoordinator before
    # it), whose partition may still be loading; then the coordinator answers, not a plain id.
    transactional = node.request(init_producer_id_request(version, "txn"))
    for _ in range(100):
        if transactional.error_code != ErrorCode.coordinator_load_in_progress:
            break
        transactional = node.request(init_producer_id_request(version, "txn"))
    answer = (transactional.error_code, transactional.producer_id, transactional.producer_epoch)
    assert answer == (ErrorCode.none, 2, 0)


def test_producer_ids_come_in_blocks_and_survive_restarts(tmp_path: Path) -> None:
    node = AdminNode(tmp_path / "data")
    ids = [node.request(init_producer_id_request(4)).producer_id for _ in range(1001)]
    assert ids == list(range(1001))
    assert node.image.producer_ids.next_producer_id == 2 * PRODUCER_ID_BLOCK_SIZE
    node.close()
    restarted = AdminNode(tmp_path / "data")
    try:
        assert restarted.request(init_producer_id_request(4)).producer_id == 2000
    finally:
        restarted.close()
