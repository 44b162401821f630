from __future__ import annotations

import dataclasses

import pytest
from controller_harness import Harness

from strom.common import ErrorCode
from strom.config import ServerConfig
from strom.controller import (
    ZERO_UUID,
    ControllerSettings,
    CreatableTopic,
    CreateTopicPolicyRequest,
    CreateTopicResult,
    CreateTopicsRequest,
    ReplicaAssignment,
)
from strom.metadata import (
    ConfigRecord,
    ConfigResourceType,
    PartitionRecord,
    TopicRecord,
)


def create(
    h: Harness, *topics: CreatableTopic, validate_only: bool = False
) -> list[CreateTopicResult]:
    return h.run(
        h.controller.create_topics(
            h.image, CreateTopicsRequest(topics, validate_only=validate_only)
        )
    )


def single_error(h: Harness, topic: CreatableTopic) -> tuple[ErrorCode, str]:
    before = h.image
    [result] = create(h, topic)
    assert h.image is before, "a failed topic must not add records"
    assert result.topic_id == ZERO_UUID
    assert result.error.message is not None
    assert "\n" not in result.error.message
    return result.error.code, result.error.message


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.add_brokers([1, 2, 3])
    return harness


def test_create_a_topic(h: Harness) -> None:
    result = h.controller.create_topics(
        h.image,
        CreateTopicsRequest(
            [
                CreatableTopic(
                    "orders", 3, 2, configs={"retention.ms": "1000", "cleanup.policy": "compact"}
                )
            ]
        ),
    )
    [reply] = result.response
    assert reply.error.is_success
    assert (reply.num_partitions, reply.replication_factor) == (3, 2)
    assert reply.configs == {"retention.ms": "1000", "cleanup.policy": "compact"}
    topic_record, *config_records = result.records[:3]
    assert topic_record == TopicRecord("orders", reply.topic_id)
    assert config_records == [
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "cleanup.policy", "compact"),
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "retention.ms", "1000"),
    ]
    partitions = result.records[3:]
    assert [p.partition_id for p in partitions if isinstance(p, PartitionRecord)] == [0, 1, 2]
    for record in partitions:
        assert isinstance(record, PartitionRecord)
        assert record.topic_id == reply.topic_id
        assert len(record.replicas) == 2
        assert record.isr == record.replicas
        assert record.leader == record.replicas[0]
        assert (record.leader_epoch, record.partition_epoch) == (0, 0)
    h.run(result)
    topic = h.image.topic("orders")
    assert topic is not None
    assert topic.topic_id == reply.topic_id
    assert h.image.topic_configs("orders") == {"retention.ms": "1000", "cleanup.policy": "compact"}


def test_minus_one_takes_the_broker_defaults() -> None:
    config = ServerConfig({"num.partitions": "4", "default.replication.factor": "2"})
    h = Harness(ControllerSettings.from_config(config))
    h.add_brokers([1, 2])
    [reply] = create(h, CreatableTopic("t"))
    assert (reply.num_partitions, reply.replication_factor) == (4, 2)
    topic = h.image.topic("t")
    assert topic is not None
    assert all(len(p.replicas) == 2 for p in topic.partitions.values())


def test_validate_only_creates_nothing(h: Harness) -> None:
    result = h.controller.create_topics(
        h.image, CreateTopicsRequest([CreatableTopic("t", 2, 1)], validate_only=True)
    )
    assert result.records == []
    [reply] = result.response
    assert reply.error.is_success
    assert reply.topic_id == ZERO_UUID
    assert reply.num_partitions == 2
    [bad] = create(h, CreatableTopic("t", 0), validate_only=True)
    assert bad.error.code is ErrorCode.invalid_partitions


def test_each_topic_succeeds_or_fails_on_its_own(h: Harness) -> None:
    results = create(
        h, CreatableTopic("good"), CreatableTopic("bad name"), CreatableTopic("also-good")
    )
    assert [r.error.code for r in results] == [
        ErrorCode.none,
        ErrorCode.invalid_topic_exception,
        ErrorCode.none,
    ]
    assert set(h.image.topics.topics_by_name) == {"good", "also-good"}


def test_topic_already_exists(h: Harness) -> None:
    create(h, CreatableTopic("t"))
    assert single_error(h, CreatableTopic("t")) == (
        ErrorCode.topic_already_exists,
        "topic 't' already exists",
    )


def test_collision_with_an_existing_topic(h: Harness) -> None:
    create(h, CreatableTopic("metrics.cpu"))
    code, message = single_error(h, CreatableTopic("metrics_cpu"))
    assert code is ErrorCode.invalid_topic_exception
    assert "collides with topic 'metrics.cpu'" in message


def test_collision_within_one_request(h: Harness) -> None:
    results = create(h, CreatableTopic("a.b"), CreatableTopic("a_b"))
    assert [r.error.code for r in results] == [ErrorCode.none, ErrorCode.invalid_topic_exception]


@pytest.mark.parametrize(
    ("topic", "code", "message"),
    [
        (CreatableTopic(""), ErrorCode.invalid_topic_exception, "cannot be empty"),
        (CreatableTopic(".."), ErrorCode.invalid_topic_exception, "'..' cannot be"),
        (CreatableTopic("x" * 250), ErrorCode.invalid_topic_exception, "longer than"),
        (CreatableTopic("a$b"), ErrorCode.invalid_topic_exception, "may only contain"),
        (CreatableTopic("__cluster_metadata"), ErrorCode.invalid_request, "cannot be created"),
        (CreatableTopic("t", 0), ErrorCode.invalid_partitions, "at least 1, or -1"),
        (CreatableTopic("t", -2), ErrorCode.invalid_partitions, "at least 1, or -1"),
        (CreatableTopic("t", 1, 0), ErrorCode.invalid_replication_factor, "at least 1, or -1"),
        (CreatableTopic("t", 1, -3), ErrorCode.invalid_replication_factor, "at least 1, or -1"),
        (
            CreatableTopic("t", 1, 4),
            ErrorCode.invalid_replication_factor,
            "replication factor 4 is more than the 3 usable broker",
        ),
        (
            CreatableTopic("t", configs={"retention.ms": "soon"}),
            ErrorCode.invalid_config,
            "retention.ms: expected an integer",
        ),
        (
            CreatableTopic("t", configs={"no.such.config": "1"}),
            ErrorCode.invalid_config,
            "no.such.config: unknown topic setting",
        ),
        (
            CreatableTopic("t", configs={"cleanup.policy": "shred"}),
            ErrorCode.invalid_config,
            "'shred' is not one of",
        ),
        (
            CreatableTopic("t", configs={"retention.ms": None}),
            ErrorCode.invalid_config,
            "need a value: retention.ms",
        ),
        (
            CreatableTopic("t", 1_000_000),
            ErrorCode.policy_violation,
            "too large for one metadata operation",
        ),
    ],
)
def test_create_topic_errors(
    h: Harness, topic: CreatableTopic, code: ErrorCode, message: str
) -> None:
    found_code, found_message = single_error(h, topic)
    assert found_code is code
    assert message in found_message


def test_a_repeated_name_is_an_invalid_request(h: Harness) -> None:
    results = create(h, CreatableTopic("t"), CreatableTopic("u"), CreatableTopic("t", 3))
    assert [(r.name, r.error.code) for r in results] == [
        ("t", ErrorCode.invalid_request),
        ("u", ErrorCode.none),
    ]


def test_no_brokers_no_topics() -> None:
    h = Harness()
    code, message = single_error(h, CreatableTopic("t"))
    assert code is ErrorCode.invalid_replication_factor
    assert "no brokers are registered" in message
    h.add_broker(1, fenced=True)
    code, message = single_error(h, CreatableTopic("t"))
    assert code is ErrorCode.invalid_replication_factor
    assert "all brokers are fenced" in message


def test_fenced_brokers_are_replicas_but_not_in_the_isr() -> None:
    h = Harness()
    h.add_brokers([1, 2])
    h.add_broker(3, fenced=True)
    [reply] = create(h, CreatableTopic("t", 6, 3))
    assert reply.error.is_success
    topic = h.image.topic("t")
    assert topic is not None
    for registration in topic.partitions.values():
        assert set(registration.replicas) == {1, 2, 3}
        assert set(registration.isr) == {1, 2}
        assert registration.leader in (1, 2)


def test_manual_assignment(h: Harness) -> None:
    [reply] = create(
        h,
        CreatableTopic(
            "t",
            assignments=[ReplicaAssignment(1, (3, 1)), ReplicaAssignment(0, (2, 3))],
        ),
    )
    assert reply.error.is_success
    assert (reply.num_partitions, reply.replication_factor) == (2, 2)
    topic = h.image.topic("t")
    assert topic is not None
    assert topic.partitions[0].replicas == (2, 3)
    assert topic.partitions[1].leader == 3


@pytest.mark.parametrize(
    ("topic", "code", "message"),
    [
        (
            CreatableTopic("t", replication_factor=2, assignments=[ReplicaAssignment(0, (1,))]),
            ErrorCode.invalid_request,
            "replication factor must be -1",
        ),
        (
            CreatableTopic("t", num_partitions=1, assignments=[ReplicaAssignment(0, (1,))]),
            ErrorCode.invalid_request,
            "number of partitions must be -1",
        ),
        (
            CreatableTopic(
                "t", assignments=[ReplicaAssignment(0, (1,)), ReplicaAssignment(0, (2,))]
            ),
            ErrorCode.invalid_replica_assignment,
            "partition 0 is assigned more than once",
        ),
        (
            CreatableTopic("t", assignments=[ReplicaAssignment(0, ())]),
            ErrorCode.invalid_replica_assignment,
            "has no replicas",
        ),
        (
            CreatableTopic("t", assignments=[ReplicaAssignment(0, (9,))]),
            ErrorCode.invalid_replica_assignment,
            "names broker 9, which is not registered",
        ),
        (
            CreatableTopic("t", assignments=[ReplicaAssignment(0, (1, 1))]),
            ErrorCode.invalid_replica_assignment,
            "names broker 1 more than once",
        ),
        (
            CreatableTopic(
                "t", assignments=[ReplicaAssignment(0, (1,)), ReplicaAssignment(1, (1, 2))]
            ),
            ErrorCode.invalid_replica_assignment,
            "assigned 2 replica(s) but the other partitions have 1",
        ),
        (
            CreatableTopic(
                "t", assignments=[ReplicaAssignment(0, (1,)), ReplicaAssignment(2, (2,))]
            ),
            ErrorCode.invalid_replica_assignment,
            "numbered 0 to n-1",
        ),
    ],
)
def test_manual_assignment_errors(
    h: Harness, topic: CreatableTopic, code: ErrorCode, message: str
) -> None:
    found_code, found_message = single_error(h, topic)
    assert found_code is code
    assert message in found_message


def test_manual_assignment_to_fenced_brokers_only() -> None:
    h = Harness()
    h.add_broker(1)
    h.add_broker(2, fenced=True)
    code, message = single_error(h, CreatableTopic("t", assignments=[ReplicaAssignment(0, (2,))]))
    assert code is ErrorCode.invalid_replica_assignment
    assert "fenced or shutting down" in message


def test_a_policy_can_refuse_topics() -> None:
    seen: list[CreateTopicPolicyRequest] = []

    def no_single_partition(request: CreateTopicPolicyRequest) -> str | None:
        seen.append(request)
        return "topics need at least two partitions" if request.num_partitions == 1 else None

    h = Harness(ControllerSettings(create_topic_policy=no_single_partition))
    h.add_broker(1)
    assert single_error(h, CreatableTopic("t", 1, configs={"retention.ms": "5"})) == (
        ErrorCode.policy_violation,
        "topics need at least two partitions",
    )
    assert seen[0] == CreateTopicPolicyRequest("t", 1, 1, None, {"retention.ms": "5"})
    [ok] = create(h, CreatableTopic("t", 2))
    assert ok.error.is_success
    create(h, CreatableTopic("m", assignments=[ReplicaAssignment(0, (1,))]))
    assert seen[-1].assignments == {0: (1,)}


def test_the_record_budget_is_per_request() -> None:
    h = Harness(ControllerSettings(max_records_per_operation=10))
    h.add_broker(1)
    results = create(h, CreatableTopic("a", 5), CreatableTopic("b", 4), CreatableTopic("c", 1))
    assert [r.error.code for r in results] == [
        ErrorCode.none,
        ErrorCode.policy_violation,
        ErrorCode.none,
    ]


def test_topic_ids_are_unique_and_never_reserved(h: Harness) -> None:
    results = create(h, *(CreatableTopic(f"t{i}") for i in range(50)))
    ids = {r.topic_id for r in results}
    assert len(ids) == 50
    assert all(i.int > 1 and i.bytes[0] >> 2 != 62 for i in ids)


def test_results_are_comparable_dataclasses(h: Harness) -> None:
    [reply] = create(h, CreatableTopic("t"))
    assert dataclasses.replace(reply, name="t") == reply
