"""The controller server and the log publisher: committed changes reach the partition logs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_harness import NODE_ID, AdminNode

from strom.common import ErrorCode, TopicPartition
from strom.controller import (
    AlterableConfig,
    AlterConfigOp,
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from strom.metadata import (
    ConfigResourceType,
    MetadataDelta,
)
from strom.server.raft.raft_log import METADATA_PARTITION


@pytest.fixture
def node(tmp_path: Path) -> Iterator[AdminNode]:
    node = AdminNode(tmp_path / "data")
    yield node
    node.close()


def create(node: AdminNode, *topics: CreatableTopic) -> None:
    results = node.run(node.controller.create_topics(CreateTopicsRequest(topics)))
    assert all(r.error.is_success for r in results), results


def alter(node: AdminNode, resource_type: int, name: str, **configs: str | None) -> None:
    request = IncrementalAlterConfigsRequest(
        [
            IncrementalAlterConfigsResource(
                resource_type,
                name,
                [
                    AlterableConfig(
                        key.replace("_", "."),
                        value,
                        AlterConfigOp.DELETE if value is None else AlterConfigOp.SET,
                    )
                    for key, value in configs.items()
                ],
            )
        ]
    )
    results = node.run(node.controller.incremental_alter_configs(request))
    assert all(r.error.is_success for r in results), results


def test_created_topics_get_logs_with_their_configs(node: AdminNode) -> None:
    create(node, CreatableTopic("orders", 3, 1, configs={"segment.bytes": "4096"}))
    logs = node.log_manager.all()
    assert {tp for tp in logs if tp.topic == "orders"} == {
        TopicPartition("orders", p) for p in range(3)
    }
    assert logs[TopicPartition("orders", 0)].config.segment_bytes == 4096
    assert (node.data_dir / "orders-2").is_dir()


def test_new_partitions_get_logs(node: AdminNode) -> None:
    create(node, CreatableTopic("orders", 1, 1))
    results = node.run(
        node.controller.create_partitions(
            CreatePartitionsRequest([CreatePartitionsTopic("orders", 4)])
        )
    )
    assert results[0].error.is_success
    assert node.log_manager.get(TopicPartition("orders", 3)) is not None


def test_deleted_topics_lose_their_logs(node: AdminNode) -> None:
    create(node, CreatableTopic("orders", 2, 1), CreatableTopic("kept", 1, 1))
    results = node.run(node.controller.delete_topics(DeleteTopicsRequest.of_names("orders")))
    assert results[0].error.is_success
    assert node.log_manager.get(TopicPartition("orders", 0)) is None
    assert not (node.data_dir / "orders-0").exists()
    assert node.log_manager.get(TopicPartition("kept", 0)) is not None


def test_topic_config_changes_apply_at_once(node: AdminNode) -> None:
    create(node, CreatableTopic("orders", 2, 1))
    alter(node, ConfigResourceType.TOPIC, "orders", retention_ms="1000", cleanup_policy="compact")
    for p in range(2):
        config = node.log_manager.all()[TopicPartition("orders", p)].config
        assert config.retention_ms == 1000
        assert config.compacts
    alter(node, ConfigResourceType.TOPIC, "orders", retention_ms=None)
    assert node.log_manager.all()[TopicPartition("orders", 0)].config.retention_ms == 604800000


def test_dynamic_broker_defaults_reach_every_topic_without_an_override(node: AdminNode) -> None:
    create(
        node, CreatableTopic("a", 1, 1), CreatableTopic("b", 1, 1, configs={"retention.ms": "5"})
    )
    alter(node, ConfigResourceType.BROKER, "", log_retention_ms="7000")
    assert node.log_manager.all()[TopicPartition("a", 0)].config.retention_ms == 7000
    assert node.log_manager.all()[TopicPartition("b", 0)].config.retention_ms == 5
    alter(node, ConfigResourceType.BROKER, str(NODE_ID), log_retention_ms="8000")
    assert node.log_manager.all()[TopicPartition("a", 0)].config.retention_ms == 8000


def test_restart_matches_logs_to_the_image(tmp_path: Path) -> None:
    node = AdminNode(tmp_path / "data")
    create(node, CreatableTopic("orders", 2, 1, configs={"retention.ms": "1234"}))
    node.close()
    # A topic directory the metadata does not know: left by a crash during a deletion.
    (tmp_path / "data" / "ghost-0").mkdir()
    restarted = AdminNode(tmp_path / "data")
    try:
        logs = restarted.log_manager.all()
        assert TopicPartition("ghost", 0) not in logs
        assert not (tmp_path / "data" / "ghost-0").exists()
        assert logs[TopicPartition("orders", 1)].config.retention_ms == 1234
        assert METADATA_PARTITION in logs
        assert restarted.broker_epoch > node.broker_epoch
        assert restarted.quorum_epoch == node.quorum_epoch + 1
    finally:
        restarted.close()


def test_operations_commit_before_the_next_one_validates(node: AdminNode) -> None:
    async def both() -> list[ErrorCode]:
        first, second = await asyncio.gather(
            node.controller.create_topics(CreateTopicsRequest([CreatableTopic("same", 1, 1)])),
            node.controller.create_topics(CreateTopicsRequest([CreatableTopic("same", 1, 1)])),
        )
        return [first[0].error.code, second[0].error.code]

    assert node.run(both()) == [ErrorCode.none, ErrorCode.topic_already_exists]


def test_a_failing_publisher_does_not_undo_the_commit(
    node: AdminNode, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(delta: MetadataDelta, _: object) -> None:
        if delta.topics_delta.created_topics:
            raise OSError("disk gone")

    node.node.metadata.install_publisher(broken)
    with caplog.at_level(logging.ERROR):
        create(node, CreatableTopic("after", 1, 1))
    assert node.image.topic("after") is not None
    assert "disk gone" in caplog.text
