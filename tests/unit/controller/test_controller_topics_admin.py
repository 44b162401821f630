"""DeleteTopics and CreatePartitions."""

from __future__ import annotations

import uuid

import pytest
from controller_harness import Harness

from strom.common import ErrorCode
from strom.controller import (
    ZERO_UUID,
    ControllerSettings,
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsResult,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    DeletableTopic,
    DeleteTopicResult,
    DeleteTopicsRequest,
)
from strom.metadata import ConfigResourceType, RemoveTopicRecord

UNKNOWN_ID = uuid.UUID(int=12345)


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.add_brokers([1, 2, 3])
    harness.run(
        harness.controller.create_topics(
            harness.image,
            CreateTopicsRequest(
                [
                    CreatableTopic("a", 2, 2, configs={"retention.ms": "10"}),
                    CreatableTopic("b", 1, 3),
                ]
            ),
        )
    )
    return harness


def topic_id(h: Harness, name: str) -> uuid.UUID:
    topic = h.image.topic(name)
    assert topic is not None
    return topic.topic_id


def delete(h: Harness, *topics: DeletableTopic) -> list[DeleteTopicResult]:
    return h.run(h.controller.delete_topics(h.image, DeleteTopicsRequest(topics)))


def test_delete_by_name_and_by_id(h: Harness) -> None:
    a, b = topic_id(h, "a"), topic_id(h, "b")
    result = h.controller.delete_topics(
        h.image, DeleteTopicsRequest([DeletableTopic(name="a"), DeletableTopic(topic_id=b)])
    )
    assert result.records == [RemoveTopicRecord(a), RemoveTopicRecord(b)]
    assert result.response == [DeleteTopicResult("a", a), DeleteTopicResult("b", b)]
    h.run(result)
    assert len(h.image.topics) == 0
    assert h.image.configs.resources == {}


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (
            [DeletableTopic(name="nope")],
            [("nope", ZERO_UUID, ErrorCode.unknown_topic_or_partition)],
        ),
        ([DeletableTopic(topic_id=UNKNOWN_ID)], [(None, UNKNOWN_ID, ErrorCode.unknown_topic_id)]),
        ([DeletableTopic()], [(None, ZERO_UUID, ErrorCode.invalid_request)]),
        ([DeletableTopic(topic_id=ZERO_UUID)], [(None, ZERO_UUID, ErrorCode.invalid_request)]),
        (
            [DeletableTopic(name="a", topic_id=UNKNOWN_ID)],
            [("a", UNKNOWN_ID, ErrorCode.invalid_request)],
        ),
        (
            [DeletableTopic(name="nope"), DeletableTopic(name="nope")],
            [("nope", ZERO_UUID, ErrorCode.invalid_request)] * 2,
        ),
    ],
)
def test_delete_errors(
    h: Harness,
    entries: list[DeletableTopic],
    expected: list[tuple[str | None, uuid.UUID, ErrorCode]],
) -> None:
    before = h.image
    results = delete(h, *entries)
    assert [(r.name, r.topic_id, r.error.code) for r in results] == expected
    assert h.image is before


def test_naming_a_topic_twice_deletes_nothing_of_it(h: Harness) -> None:
    a, b = topic_id(h, "a"), topic_id(h, "b")
    results = delete(
        h,
        DeletableTopic(name="a"),
        DeletableTopic(topic_id=a),
        DeletableTopic(topic_id=b),
        DeletableTopic(topic_id=b),
    )
    assert [r.error.code for r in results] == [ErrorCode.invalid_request] * 4
    assert "by name and by id" in (results[0].error.message or "")
    assert set(h.image.topics.topics_by_name) == {"a", "b"}


def test_deletion_can_be_disabled() -> None:
    h = Harness(ControllerSettings(delete_topic_enable=False))
    h.add_broker(1)
    h.run(h.controller.create_topics(h.image, CreateTopicsRequest([CreatableTopic("a")])))
    [result] = delete(h, DeletableTopic(name="a"))
    assert result.error.code is ErrorCode.topic_deletion_disabled
    assert h.image.topic("a") is not None


def test_delete_budget() -> None:
    h = Harness(ControllerSettings(max_records_per_operation=3))
    h.add_broker(1)
    h.run(h.controller.create_topics(h.image, CreateTopicsRequest([CreatableTopic("a")])))
    h.run(h.controller.create_topics(h.image, CreateTopicsRequest([CreatableTopic("b")])))
    h.run(h.controller.create_topics(h.image, CreateTopicsRequest([CreatableTopic("c")])))
    h.run(h.controller.create_topics(h.image, CreateTopicsRequest([CreatableTopic("d")])))
    results = delete(h, *(DeletableTopic(name=n) for n in "abcd"))
    assert [r.error.code for r in results] == [ErrorCode.none] * 3 + [ErrorCode.policy_violation]


def grow(
    h: Harness, *topics: CreatePartitionsTopic, validate_only: bool = False
) -> list[CreatePartitionsResult]:
    return h.run(
        h.controller.create_partitions(
            h.image, CreatePartitionsRequest(topics, validate_only=validate_only)
        )
    )


def test_create_partitions(h: Harness) -> None:
    [result] = grow(h, CreatePartitionsTopic("a", 5))
    assert result.error.is_success
    topic = h.image.topic("a")
    assert topic is not None
    assert sorted(topic.partitions) == [0, 1, 2, 3, 4]
    assert all(len(p.replicas) == 2 for p in topic.partitions.values())
    assert h.image.configs.configs(next(iter(h.image.configs.resources))) == {"retention.ms": "10"}
    assert next(iter(h.image.configs.resources)).type is ConfigResourceType.TOPIC


def test_create_partitions_with_assignments(h: Harness) -> None:
    [result] = grow(h, CreatePartitionsTopic("a", 4, assignments=[[3, 1], [2, 3]]))
    assert result.error.is_success
    topic = h.image.topic("a")
    assert topic is not None
    assert topic.partitions[2].replicas == (3, 1)
    assert topic.partitions[3].leader == 2


def test_validate_only_adds_nothing(h: Harness) -> None:
    before = h.image
    [result] = grow(h, CreatePartitionsTopic("a", 5), validate_only=True)
    assert result.error.is_success
    assert h.image is before


@pytest.mark.parametrize(
    ("topic", "code", "message"),
    [
        (CreatePartitionsTopic("nope", 3), ErrorCode.unknown_topic_or_partition, "does not exist"),
        (CreatePartitionsTopic("a", 2), ErrorCode.invalid_partitions, "already has 2 partition"),
        (CreatePartitionsTopic("a", 1), ErrorCode.invalid_partitions, "1 would not be an increase"),
        (
            CreatePartitionsTopic("a", 4, assignments=[[1, 2]]),
            ErrorCode.invalid_replica_assignment,
            "2 partition(s) are added but 1 assignment(s) were given",
        ),
        (
            CreatePartitionsTopic("a", 3, assignments=[[1]]),
            ErrorCode.invalid_replica_assignment,
            "assigned 1 replica(s) but the other partitions have 2",
        ),
        (
            CreatePartitionsTopic("a", 3, assignments=[[1, 7]]),
            ErrorCode.invalid_replica_assignment,
            "names broker 7, which is not registered",
        ),
        (
            CreatePartitionsTopic("a", 20_000),
            ErrorCode.policy_violation,
            "too large",
        ),
    ],
)
def test_create_partitions_errors(
    h: Harness, topic: CreatePartitionsTopic, code: ErrorCode, message: str
) -> None:
    before = h.image
    [result] = grow(h, topic)
    assert result.error.code is code
    assert message in (result.error.message or "")
    assert h.image is before


def test_create_partitions_needs_enough_brokers(h: Harness) -> None:
    [result] = grow(h, CreatePartitionsTopic("b", 2))
    assert result.error.is_success
    h.run(
        h.controller.fence_broker(
            h.image, broker_id=3, broker_epoch=h.image.cluster.brokers[3].epoch
        )
    )
    [result] = grow(h, CreatePartitionsTopic("b", 3))
    assert result.error.is_success
    registration = h.image.topics.partitions("b")[2]
    assert set(registration.replicas) == {1, 2, 3}
    assert set(registration.isr) == {1, 2}


def test_a_topic_named_twice_is_an_invalid_request(h: Harness) -> None:
    results = grow(h, CreatePartitionsTopic("a", 3), CreatePartitionsTopic("a", 4))
    assert [(r.name, r.error.code) for r in results] == [("a", ErrorCode.invalid_request)]
