"""The controller mutation quota as the controller charges it (KIP-599): each topic that passed
every other check, with the partitions it creates, deletes or adds; a refused topic answers
THROTTLING_QUOTA_EXCEEDED and writes nothing."""

from __future__ import annotations

import pytest
from controller_harness import Harness

from strom.common import ErrorCode, KafkaError
from strom.controller import (
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    DeletableTopic,
    DeleteTopicsRequest,
)

THROTTLED = ErrorCode.throttling_quota_exceeded


class Credits:
    """A strict quota of ``left`` partitions: a topic is taken while any is left."""

    def __init__(self, left: int) -> None:
        self.left = left
        self.charged: list[int] = []

    def record(self, partitions: int) -> None:
        if self.left <= 0:
            raise KafkaError(THROTTLED, "The throttling quota has been exceeded.")
        self.left -= partitions
        self.charged.append(partitions)


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.add_brokers([1, 2, 3])
    return harness


def test_create_topics_charges_the_partitions_of_each_valid_topic(h: Harness) -> None:
    quota = Credits(4)
    topics = [
        CreatableTopic("a", 3, 1),
        CreatableTopic("bad name!", 5, 1),  # refused before the quota: not charged
        CreatableTopic("b", 2, 1),  # one credit left: taken, and the credits go below zero
        CreatableTopic("c", 1, 1),
    ]
    results = h.run(h.controller.create_topics(h.image, CreateTopicsRequest(topics, quota=quota)))
    assert quota.charged == [3, 2]
    assert [result.error.code for result in results] == [
        ErrorCode.none,
        ErrorCode.invalid_topic_exception,
        ErrorCode.none,
        THROTTLED,
    ]
    assert results[3].error.message == "The throttling quota has been exceeded."
    assert sorted(topic.name for topic in h.image.topics.topics_by_id.values()) == ["a", "b"]


def test_validate_only_is_charged_too(h: Harness) -> None:
    quota = Credits(1)
    request = CreateTopicsRequest([CreatableTopic("a", 4, 1)], validate_only=True, quota=quota)
    [result] = h.run(h.controller.create_topics(h.image, request))
    assert result.error.code == ErrorCode.none and quota.charged == [4]
    assert len(h.image.topics) == 0


def test_delete_topics_charges_each_topics_partitions(h: Harness) -> None:
    h.run(
        h.controller.create_topics(
            h.image, CreateTopicsRequest([CreatableTopic("a", 3, 1), CreatableTopic("b", 2, 1)])
        )
    )
    quota = Credits(1)
    names = [DeletableTopic(name="missing"), DeletableTopic(name="a"), DeletableTopic(name="b")]
    results = h.run(h.controller.delete_topics(h.image, DeleteTopicsRequest(names, quota=quota)))
    assert quota.charged == [3]
    codes = [result.error.code for result in results]
    assert codes == [ErrorCode.unknown_topic_or_partition, ErrorCode.none, THROTTLED]
    assert [topic.name for topic in h.image.topics.topics_by_id.values()] == ["b"]


def test_create_partitions_charges_the_partitions_added(h: Harness) -> None:
    h.run(
        h.controller.create_topics(
            h.image, CreateTopicsRequest([CreatableTopic("a", 1, 1), CreatableTopic("b", 1, 1)])
        )
    )
    quota = Credits(2)
    grow = [
        CreatePartitionsTopic("missing", 4),  # refused before the quota: not charged
        CreatePartitionsTopic("a", 4),
        CreatePartitionsTopic("b", 3),
    ]
    request = CreatePartitionsRequest(grow, quota=quota)
    results = h.run(h.controller.create_partitions(h.image, request))
    assert quota.charged == [3]
    codes = [result.error.code for result in results]
    assert codes == [ErrorCode.unknown_topic_or_partition, ErrorCode.none, THROTTLED]
    topic_a, topic_b = h.image.topic("a"), h.image.topic("b")
    assert topic_a is not None and topic_a.num_partitions == 4
    assert topic_b is not None and topic_b.num_partitions == 1
