"""Topics and partitions: CreateTopics, DeleteTopics and CreatePartitions.

Each operation validates every topic of the request on its own, answers each with an error code
(or success), and returns the records for the topics that succeeded, all to be appended as one
batch. Checks run in Kafka's order and with Kafka's error codes; where strom differs, it says so:

* Two topics of one CreateTopics request whose names collide (``a.b`` and ``a_b``) are refused
  like a collision with an existing topic; Kafka only checks against existing topics.
* A request that would need more than ``max_records_per_operation`` records fails only for the
  topics that do not fit (POLICY_VIOLATION); Kafka fails the whole request.
* Validate-only CreateTopics answers with the zero topic id, since no topic was created.

The controller mutation quota (KIP-599) is charged as Kafka's ``ReplicationControlManager``
charges it, through the request's ``quota`` (a :class:`PartitionChangeQuota`): once a topic has
passed every other check, with the partitions it creates, deletes or adds; a refusal
(THROTTLING_QUOTA_EXCEEDED) is that topic's answer. Validate-only requests are charged too.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from strom.common import ErrorCode, KafkaError
from strom.controller.config_control import check_topic_configs
from strom.controller.placement import PlacementError, place_replicas, usable_brokers
from strom.controller.results import (
    NO_ERROR,
    ZERO_UUID,
    ApiError,
    ControllerResult,
    RandomSource,
    new_topic_id,
)
from strom.controller.settings import ControllerSettings, CreateTopicPolicyRequest
from strom.controller.topic_names import (
    CLUSTER_METADATA_TOPIC,
    CollisionIndex,
    invalid_topic_reason,
)
from strom.metadata import (
    ConfigRecord,
    ConfigResourceType,
    MetadataImage,
    MetadataRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicImage,
    TopicRecord,
)

__all__ = [
    "CreatableTopic",
    "CreatePartitionsRequest",
    "CreatePartitionsResult",
    "CreatePartitionsTopic",
    "CreateTopicResult",
    "CreateTopicsRequest",
    "DeletableTopic",
    "DeleteTopicResult",
    "DeleteTopicsRequest",
    "PartitionChangeQuota",
    "ReplicaAssignment",
    "ReplicationControl",
]


class PartitionChangeQuota(Protocol):
    """The controller mutation quota of the client a request came from (Kafka's
    ``ControllerRequestContext.applyPartitionChangeQuota``)."""

    def record(self, partitions: int) -> None:
        """Charge ``partitions`` created or deleted; raises KafkaError
        (THROTTLING_QUOTA_EXCEEDED) to refuse them."""


class _Unbounded:
    def record(self, partitions: int) -> None:
        pass


UNBOUNDED: PartitionChangeQuota = _Unbounded()


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A manual assignment: the brokers of one partition, the preferred leader first."""

    partition_index: int
    broker_ids: tuple[int, ...]


@dataclass(frozen=True)
class CreatableTopic:
    """One topic of a CreateTopics request; -1 means "the broker's default"."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Sequence[ReplicaAssignment] = ()
    configs: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class CreateTopicsRequest:
    topics: Sequence[CreatableTopic]
    validate_only: bool = False
    quota: PartitionChangeQuota = UNBOUNDED


@dataclass(frozen=True)
class CreateTopicResult:
    """The answer for one topic; on success, its id, size and config overrides."""

    name: str
    error: ApiError = NO_ERROR
    topic_id: uuid.UUID = ZERO_UUID
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeletableTopic:
    """A topic to delete, by name or by id (not both)."""

    name: str | None = None
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True)
class DeleteTopicsRequest:
    topics: Sequence[DeletableTopic]
    quota: PartitionChangeQuota = UNBOUNDED

    @classmethod
    def of_names(cls, *names: str) -> DeleteTopicsRequest:
        return cls([DeletableTopic(name=name) for name in names])

    @classmethod
    def of_ids(cls, *ids: uuid.UUID) -> DeleteTopicsRequest:
        return cls([DeletableTopic(topic_id=topic_id) for topic_id in ids])


@dataclass(frozen=True, slots=True)
class DeleteTopicResult:
    name: str | None
    topic_id: uuid.UUID
    error: ApiError = NO_ERROR


@dataclass(frozen=True)
class CreatePartitionsTopic:
    """Grow a topic to ``count`` partitions; ``assignments`` lists the new partitions' brokers."""

    name: str
    count: int
    assignments: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True)
class CreatePartitionsRequest:
    topics: Sequence[CreatePartitionsTopic]
    validate_only: bool = False
    quota: PartitionChangeQuota = UNBOUNDED


@dataclass(frozen=True, slots=True)
class CreatePartitionsResult:
    name: str
    error: ApiError = NO_ERROR


def _error(code: ErrorCode, message: str) -> KafkaError:
    return KafkaError(code, message)


class ReplicationControl:
    def __init__(self, settings: ControllerSettings, random: RandomSource) -> None:
        self._settings = settings
        self._random = random

    # CreateTopics ------------------------------------------------------------------------------

    def create_topics(
        self, image: MetadataImage, request: CreateTopicsRequest
    ) -> ControllerResult[list[CreateTopicResult]]:
        """One result per distinct name, in request order; records for the created topics."""
        counts = Counter(topic.name for topic in request.topics)
        collisions = CollisionIndex.of(image.topics.topics_by_name)
        taken_ids = set(image.topics.topics_by_id)
        records: list[MetadataRecord] = []
        results: dict[str, CreateTopicResult] = {}
        for topic in request.topics:
            if topic.name in results:
                continue
            try:
                if counts[topic.name] > 1:
                    raise _error(
                        ErrorCode.invalid_request,
                        f"topic {topic.name!r} appears more than once in the request",
                    )
                budget = self._settings.max_records_per_operation - len(records)
                topic_records, result = self._create_topic(
                    image,
                    topic,
                    collisions=collisions,
                    taken_ids=taken_ids,
                    budget=budget,
                    quota=request.quota,
                )
            except KafkaError as error:
                results[topic.name] = CreateTopicResult(topic.name, ApiError.of(error))
                continue
            collisions.add(topic.name)
            taken_ids.add(result.topic_id)
            records.extend(topic_records)
            if request.validate_only:
                result = CreateTopicResult(
                    name=result.name,
                    num_partitions=result.num_partitions,
                    replication_factor=result.replication_factor,
                    configs=result.configs,
                )
            results[topic.name] = result
        return ControllerResult([] if request.validate_only else records, list(results.values()))

    def _create_topic(
        self,
        image: MetadataImage,
        topic: CreatableTopic,
        *,
        collisions: CollisionIndex,
        taken_ids: set[uuid.UUID],
        budget: int,
        quota: PartitionChangeQuota,
    ) -> tuple[list[MetadataRecord], CreateTopicResult]:
        name = topic.name
        if name == CLUSTER_METADATA_TOPIC:
            raise _error(
                ErrorCode.invalid_request,
                f"{CLUSTER_METADATA_TOPIC} holds the cluster's metadata and cannot be created",
            )
        reason = invalid_topic_reason(name)
        if reason is not None:
            raise _error(ErrorCode.invalid_topic_exception, reason)
        if image.topics.get_topic(name) is not None:
            raise _error(ErrorCode.topic_already_exists, f"topic {name!r} already exists")
        other = collisions.collision(name)
        if other is not None:
            raise _error(
                ErrorCode.invalid_topic_exception,
                f"topic {name!r} collides with topic {other!r}: names that differ only in "
                "'.' and '_' cannot both exist",
            )
        configs = _creation_configs(topic.configs)
        if topic.assignments:
            assignments = self._manual_assignments(image, topic)
            policy_request = CreateTopicPolicyRequest(
                name=name,
                num_partitions=None,
                replication_factor=None,
                assignments=dict(enumerate(assignments)),
                configs=configs,
            )
        else:
            num_partitions, replication_factor = self._resolve_sizes(topic)
            if 1 + len(configs) + num_partitions > budget:
                raise _too_many_records()
            assignments = self._place(image, num_partitions, replication_factor)
            policy_request = CreateTopicPolicyRequest(
                name=name,
                num_partitions=num_partitions,
                replication_factor=replication_factor,
                assignments=None,
                configs=configs,
            )
        if 1 + len(configs) + len(assignments) > budget:
            raise _too_many_records()
        self._check_create_policy(policy_request)
        quota.record(len(assignments))
        topic_id = new_topic_id(self._random, taken_ids)
        records: list[MetadataRecord] = [TopicRecord(name=name, topic_id=topic_id)]
        records.extend(
            ConfigRecord(ConfigResourceType.TOPIC, name, key, value)
            for key, value in sorted(configs.items())
        )
        records.extend(
            _new_partition(image, topic_id, partition_id, replicas)
            for partition_id, replicas in enumerate(assignments)
        )
        result = CreateTopicResult(
            name=name,
            topic_id=topic_id,
            num_partitions=len(assignments),
            replication_factor=len(assignments[0]),
            configs=configs,
        )
        return records, result

    def _resolve_sizes(self, topic: CreatableTopic) -> tuple[int, int]:
        if topic.replication_factor < -1 or topic.replication_factor == 0:
            raise _error(
                ErrorCode.invalid_replication_factor,
                "replication factor must be at least 1, or -1 for the broker default",
            )
        if topic.num_partitions < -1 or topic.num_partitions == 0:
            raise _error(
                ErrorCode.invalid_partitions,
                "number of partitions must be at least 1, or -1 for the broker default",
            )
        num_partitions = topic.num_partitions
        if num_partitions == -1:
            num_partitions = self._settings.default_num_partitions
        replication_factor = topic.replication_factor
        if replication_factor == -1:
            replication_factor = self._settings.default_replication_factor
        return num_partitions, replication_factor

    def _manual_assignments(
        self, image: MetadataImage, topic: CreatableTopic
    ) -> list[tuple[int, ...]]:
        if topic.replication_factor != -1:
            raise _error(
                ErrorCode.invalid_request,
                "with a manual replica assignment the replication factor must be -1",
            )
        if topic.num_partitions != -1:
            raise _error(
                ErrorCode.invalid_request,
                "with a manual replica assignment the number of partitions must be -1",
            )
        by_partition: dict[int, tuple[int, ...]] = {}
        replication_factor: int | None = None
        for assignment in topic.assignments:
            index = assignment.partition_index
            if index in by_partition:
                raise _error(
                    ErrorCode.invalid_replica_assignment,
                    f"partition {index} is assigned more than once",
                )
            replicas = tuple(assignment.broker_ids)
            _check_manual_replicas(image, index, replicas, replication_factor)
            replication_factor = len(replicas)
            by_partition[index] = replicas
        if sorted(by_partition) != list(range(len(by_partition))):
            raise _error(
                ErrorCode.invalid_replica_assignment,
                "manually assigned partitions must be numbered 0 to n-1 without gaps",
            )
        return [by_partition[index] for index in range(len(by_partition))]

    def _place(
        self, image: MetadataImage, num_partitions: int, replication_factor: int
    ) -> list[tuple[int, ...]]:
        try:
            return place_replicas(
                usable_brokers(image.cluster),
                num_partitions=num_partitions,
                replication_factor=replication_factor,
                random=self._random,
            )
        except PlacementError as error:
            raise _error(
                ErrorCode.invalid_replication_factor,
                f"cannot place {replication_factor} replica(s): {error}",
            ) from None

    def _check_create_policy(self, request: CreateTopicPolicyRequest) -> None:
        policy = self._settings.create_topic_policy
        if policy is None:
            return
        reason = policy(request)
        if reason is not None:
            raise _error(ErrorCode.policy_violation, reason)

    # DeleteTopics ------------------------------------------------------------------------------

    def delete_topics(
        self, image: MetadataImage, request: DeleteTopicsRequest
    ) -> ControllerResult[list[DeleteTopicResult]]:
        """One result per entry of the request (one per repeated name or id)."""
        if not self._settings.delete_topic_enable:
            disabled = ApiError(
                ErrorCode.topic_deletion_disabled,
                "topic deletion is disabled on this cluster (delete.topic.enable=false)",
            )
            return ControllerResult(
                [],
                [
                    DeleteTopicResult(t.name, t.topic_id or ZERO_UUID, disabled)
                    for t in request.topics
                ],
            )
        targets = [self._resolve_deletion(image, t) for t in request.topics]
        by_name = Counter(t.name for t in request.topics if t.name is not None)
        by_id = Counter(t.topic_id for t in request.topics if _has_id(t))
        resolved = Counter(t.topic_id for t in targets if isinstance(t, TopicImage))
        records: list[MetadataRecord] = []
        results: list[DeleteTopicResult] = []
        for entry, resolution in zip(request.topics, targets, strict=True):
            target = resolution
            if (entry.name is not None and by_name[entry.name] > 1) or (
                _has_id(entry) and by_id[entry.topic_id] > 1
            ):
                target = ApiError(
                    ErrorCode.invalid_request, "the topic appears more than once in the request"
                )
            if isinstance(target, ApiError):
                results.append(DeleteTopicResult(entry.name, entry.topic_id or ZERO_UUID, target))
                continue
            if resolved[target.topic_id] > 1:
                error = ApiError(
                    ErrorCode.invalid_request,
                    "the topic is named both by name and by id in the request",
                )
            elif len(records) >= self._settings.max_records_per_operation:
                error = ApiError.of(_too_many_records())
            else:
                error = _charged(request.quota, target.num_partitions)
                if not error.is_failure:
                    records.append(RemoveTopicRecord(topic_id=target.topic_id))
            results.append(DeleteTopicResult(target.name, target.topic_id, error))
        return ControllerResult(records, results)

    @staticmethod
    def _resolve_deletion(image: MetadataImage, entry: DeletableTopic) -> TopicImage | ApiError:
        if entry.name is not None and _has_id(entry):
            return ApiError(ErrorCode.invalid_request, "give a topic's name or its id, not both")
        if entry.name is not None:
            topic = image.topics.get_topic(entry.name)
            if topic is None:
                return ApiError(
                    ErrorCode.unknown_topic_or_partition, f"topic {entry.name!r} does not exist"
                )
            return topic
        if entry.topic_id is None or not _has_id(entry):
            return ApiError(ErrorCode.invalid_request, "neither a topic name nor an id was given")
        by_id = image.topics.get_topic_by_id(entry.topic_id)
        if by_id is None:
            return ApiError(ErrorCode.unknown_topic_id, f"no topic has the id {entry.topic_id}")
        return by_id

    # CreatePartitions --------------------------------------------------------------------------

    def create_partitions(
        self, image: MetadataImage, request: CreatePartitionsRequest
    ) -> ControllerResult[list[CreatePartitionsResult]]:
        """One result per distinct topic name, in request order."""
        counts = Counter(topic.name for topic in request.topics)
        records: list[MetadataRecord] = []
        results: dict[str, CreatePartitionsResult] = {}
        for topic in request.topics:
            if topic.name in results:
                continue
            try:
                if counts[topic.name] > 1:
                    raise _error(
                        ErrorCode.invalid_request,
                        f"topic {topic.name!r} appears more than once in the request",
                    )
                budget = self._settings.max_records_per_operation - len(records)
                new_records = self._create_partitions(
                    image, topic, budget=budget, quota=request.quota
                )
            except KafkaError as error:
                results[topic.name] = CreatePartitionsResult(topic.name, ApiError.of(error))
                continue
            records.extend(new_records)
            results[topic.name] = CreatePartitionsResult(topic.name)
        return ControllerResult([] if request.validate_only else records, list(results.values()))

    def _create_partitions(
        self,
        image: MetadataImage,
        request: CreatePartitionsTopic,
        *,
        budget: int,
        quota: PartitionChangeQuota,
    ) -> list[MetadataRecord]:
        topic = image.topics.get_topic(request.name)
        if topic is None:
            raise _error(
                ErrorCode.unknown_topic_or_partition, f"topic {request.name!r} does not exist"
            )
        current = topic.num_partitions
        if request.count == current:
            raise _error(
                ErrorCode.invalid_partitions,
                f"topic {request.name!r} already has {current} partition(s)",
            )
        if request.count < current:
            raise _error(
                ErrorCode.invalid_partitions,
                f"topic {request.name!r} has {current} partition(s); "
                f"{request.count} would not be an increase",
            )
        additional = request.count - current
        if additional > budget:
            raise _too_many_records()
        replication_factor = len(topic.partitions[0].replicas) if current else 1
        if request.assignments is not None and len(request.assignments) != additional:
            raise _error(
                ErrorCode.invalid_replica_assignment,
                f"{additional} partition(s) are added but {len(request.assignments)} "
                "assignment(s) were given",
            )
        quota.record(additional)
        if request.assignments is not None:
            assignments = [tuple(brokers) for brokers in request.assignments]
            for offset, replicas in enumerate(assignments):
                _check_manual_replicas(image, current + offset, replicas, replication_factor)
        else:
            assignments = self._place(image, additional, replication_factor)
        return [
            _new_partition(image, topic.topic_id, current + offset, replicas)
            for offset, replicas in enumerate(assignments)
        ]


def _charged(quota: PartitionChangeQuota, partitions: int) -> ApiError:
    """NO_ERROR once ``partitions`` are charged to the quota, or its refusal."""
    try:
        quota.record(partitions)
    except KafkaError as error:
        return ApiError.of(error)
    return NO_ERROR


def _has_id(entry: DeletableTopic) -> bool:
    return entry.topic_id is not None and entry.topic_id != ZERO_UUID


def _too_many_records() -> KafkaError:
    return _error(ErrorCode.policy_violation, "the request is too large for one metadata operation")


def _creation_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    missing = sorted(name for name, value in configs.items() if value is None)
    if missing:
        raise _error(ErrorCode.invalid_config, f"topic configs need a value: {', '.join(missing)}")
    present = {name: value for name, value in configs.items() if value is not None}
    check_topic_configs(present)
    return present


def _check_manual_replicas(
    image: MetadataImage,
    partition: int,
    replicas: tuple[int, ...],
    replication_factor: int | None,
) -> None:
    code = ErrorCode.invalid_replica_assignment
    if not replicas:
        raise _error(code, f"the assignment of partition {partition} has no replicas")
    seen: set[int] = set()
    for broker_id in replicas:
        if image.cluster.broker(broker_id) is None:
            raise _error(
                code,
                f"the assignment of partition {partition} names broker {broker_id}, "
                "which is not registered",
            )
        if broker_id in seen:
            raise _error(
                code,
                f"the assignment of partition {partition} names broker {broker_id} more than once",
            )
        seen.add(broker_id)
    if replication_factor is not None and len(replicas) != replication_factor:
        raise _error(
            code,
            f"partition {partition} is assigned {len(replicas)} replica(s) but the other "
            f"partitions have {replication_factor}",
        )
    if not any(_is_active(image, broker_id) for broker_id in replicas):
        raise _error(
            code,
            f"every broker assigned to partition {partition} is fenced or shutting down",
        )


def _is_active(image: MetadataImage, broker_id: int) -> bool:
    broker = image.cluster.broker(broker_id)
    return broker is not None and broker.active


def _new_partition(
    image: MetadataImage, topic_id: uuid.UUID, partition_id: int, replicas: tuple[int, ...]
) -> PartitionRecord:
    """A new partition: the ISR is its active replicas, led by the first of them."""
    isr = tuple(b for b in replicas if _is_active(image, b))
    if not isr:
        raise _error(
            ErrorCode.invalid_replication_factor,
            "cannot place the replicas: every chosen broker is fenced or shutting down",
        )
    return PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=replicas,
        isr=isr,
        leader=isr[0],
        leader_epoch=0,
        partition_epoch=0,
    )
