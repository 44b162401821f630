"""AlterPartitionReassignments (API key 45) and ListPartitionReassignments (46), v0: moving
partition replicas between brokers (``kafka-reassign-partitions.sh``, the admin clients'
``alter_partition_reassignments``), served by the active controller
(``strom.controller.reassignment``) and forwarded there by brokers.

AlterPartitionReassignments answers each partition once its first step is committed (the
copying goes on afterwards); ListPartitionReassignments lists the partitions being moved, with
their replicas, the ones being added and the ones being removed.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Final, Protocol

from kio.schema.alter_partition_reassignments.v0 import response as alter_wire
from kio.schema.list_partition_reassignments.v0 import response as list_wire
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, TopicPartition
from strom.controller import ApiError, ReassignmentRequest, ReassignmentResult
from strom.metadata import PartitionRegistration
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.throttle import NO_THROTTLE

__all__ = [
    "AlterPartitionReassignmentsHandler",
    "ListPartitionReassignmentsHandler",
    "alter_error_response",
    "list_error_response",
]

log = logging.getLogger(__name__)


def _requests(body: Any) -> list[ReassignmentRequest]:
    return [
        ReassignmentRequest(
            TopicPartition(str(topic.name), int(partition.partition_index)),
            None if partition.replicas is None else tuple(int(b) for b in partition.replicas),
        )
        for topic in body.topics
        for partition in topic.partitions
    ]


def _alter_response(results: list[ReassignmentResult]) -> ResponsePayload:
    by_topic: defaultdict[str, list[ReassignmentResult]] = defaultdict(list)
    for result in results:
        by_topic[result.partition.topic].append(result)
    return alter_wire.AlterPartitionReassignmentsResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        responses=tuple(
            alter_wire.ReassignableTopicResponse(
                name=TopicName(topic),
                partitions=tuple(
                    alter_wire.ReassignablePartitionResponse(
                        partition_index=i32(result.partition.partition),
                        error_code=result.error.code,
                        error_message=result.error.message if result.error.is_failure else None,
                    )
                    for result in topic_results
                ),
            )
            for topic, topic_results in by_topic.items()
        ),
    )


def alter_error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """Every partition refused with ``code`` (the controller was not reached)."""
    return _alter_response(
        [ReassignmentResult(r.partition, ApiError(code)) for r in _requests(context.body)]
    )


def list_error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    return list_wire.ListPartitionReassignmentsResponse(
        throttle_time=NO_THROTTLE, error_code=code, error_message=None, topics=()
    )


class Reassigner(Protocol):
    """What the partition reassignment APIs need of the controller."""

    async def alter_reassignments(
        self, requests: Sequence[ReassignmentRequest]
    ) -> list[ReassignmentResult]:
        """AlterPartitionReassignments over the quorum; raises NotControllerError."""
        ...

    async def list_reassignments(
        self, partitions: Sequence[TopicPartition] | None
    ) -> list[tuple[TopicPartition, PartitionRegistration]]:
        """The ongoing reassignments (of ``partitions``, or all); raises NotControllerError."""
        ...


class AlterPartitionReassignmentsHandler:
    api_key: Final = ApiKey.ALTER_PARTITION_REASSIGNMENTS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.ALTER_PARTITION_REASSIGNMENTS]

    def __init__(self, controller: Reassigner) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        requests = _requests(context.body)
        results = await self._controller.alter_reassignments(requests)
        for request, result in zip(requests, results, strict=True):
            if result.error.is_success:
                target = "cancelled" if request.replicas is None else list(request.replicas)
                log.info("reassignment of %s: %s", request.partition, target)
        return _alter_response(results)


class ListPartitionReassignmentsHandler:
    api_key: Final = ApiKey.LIST_PARTITION_REASSIGNMENTS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.LIST_PARTITION_REASSIGNMENTS]

    def __init__(self, controller: Reassigner) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        body: Any = context.body
        partitions = None
        if body.topics is not None:
            partitions = [
                TopicPartition(str(topic.name), int(index))
                for topic in body.topics
                for index in topic.partition_indexes
            ]
        ongoing = await self._controller.list_reassignments(partitions)
        by_topic: defaultdict[str, list[Any]] = defaultdict(list)
        for tp, registration in ongoing:
            by_topic[tp.topic].append(
                list_wire.OngoingPartitionReassignment(
                    partition_index=i32(tp.partition),
                    replicas=tuple(BrokerId(b) for b in registration.replicas),
                    adding_replicas=tuple(BrokerId(b) for b in registration.adding_replicas),
                    removing_replicas=tuple(BrokerId(b) for b in registration.removing_replicas),
                )
            )
        return list_wire.ListPartitionReassignmentsResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            error_message=None,
            topics=tuple(
                list_wire.OngoingTopicReassignment(name=TopicName(name), partitions=tuple(parts))
                for name, parts in by_topic.items()
            ),
        )
