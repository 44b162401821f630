"""CreatePartitions (API key 37), v0 to v3: grow topics to a new partition count.

The controller checks each topic (it exists, the count grows, assignments fit) and places the
new partitions; their logs appear when the batch is applied. One result per distinct topic.

The client's ``controller_mutation_rate`` (KIP-599) is charged the partitions each topic gains:
strictly from v3 on (THROTTLING_QUOTA_EXCEEDED once exhausted), permissively before.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Protocol

from kio.schema.create_partitions.v3 import request as newest
from kio.schema.create_partitions.v3 import response as latest
from kio.schema.types import TopicName
from kio.static.primitive import i32Timedelta
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller import (
    ApiError,
    CreatePartitionsRequest,
    CreatePartitionsResult,
    CreatePartitionsTopic,
)
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version
from strom.server.controller.handlers.topic_mutation import TopicMutationHandler
from strom.server.quotas.client_quotas import (
    ControllerMutationQuota,
    ControllerMutationQuotaManager,
)

__all__ = ["CreatePartitionsHandler", "error_response"]

log = logging.getLogger(__name__)


class PartitionsCreator(Protocol):
    """What CreatePartitions needs of the controller."""

    async def create_partitions(
        self, request: CreatePartitionsRequest
    ) -> list[CreatePartitionsResult]:
        """CreatePartitions over the quorum; raises NotControllerError."""
        ...


class CreatePartitionsHandler(
    TopicMutationHandler[CreatePartitionsRequest, CreatePartitionsResult]
):
    api_key = ApiKey.CREATE_PARTITIONS
    versions = KAFKA_BROKER_VERSIONS[ApiKey.CREATE_PARTITIONS]
    strict_quota_since = 3

    def __init__(
        self, controller: PartitionsCreator, *, quotas: ControllerMutationQuotaManager
    ) -> None:
        super().__init__(quotas=quotas)
        self._controller = controller

    @staticmethod
    def parse(body: object) -> CreatePartitionsRequest:
        request = as_newest(body, newest.CreatePartitionsRequest)
        return CreatePartitionsRequest(
            topics=[
                CreatePartitionsTopic(
                    name=topic.name,
                    count=int(topic.count),
                    assignments=None
                    if topic.assignments is None
                    else [tuple(int(b) for b in a.broker_ids) for a in topic.assignments],
                )
                for topic in request.topics
            ],
            validate_only=request.validate_only,
        )

    def authorized(
        self, context: RequestContext, request: CreatePartitionsRequest
    ) -> tuple[CreatePartitionsRequest, list[CreatePartitionsResult]]:
        allowed = [
            topic
            for topic in request.topics
            if context.authorize(AclOperation.ALTER, ResourceType.TOPIC, topic.name)
        ]
        denied = [
            CreatePartitionsResult(topic.name, ApiError(ErrorCode.topic_authorization_failed))
            for topic in request.topics
            if topic not in allowed
        ]
        return dataclasses.replace(request, topics=allowed), denied

    async def mutate(
        self, request: CreatePartitionsRequest, quota: ControllerMutationQuota
    ) -> list[CreatePartitionsResult]:
        return await self._controller.create_partitions(dataclasses.replace(request, quota=quota))

    def log_result(
        self, result: CreatePartitionsResult, *, request: CreatePartitionsRequest, client: str
    ) -> None:
        if result.error.is_failure:
            log.info(
                "CreatePartitions from %s: topic %s not grown: %s (%s)",
                client,
                result.name,
                result.error.message,
                result.error.code.name.upper(),
            )
        elif not request.validate_only:
            count = {t.name: t.count for t in request.topics}.get(result.name, -1)
            log.info("topic %s now has %d partition(s)", result.name, count)

    @staticmethod
    def refused(request: CreatePartitionsRequest, code: ErrorCode) -> list[CreatePartitionsResult]:
        return [CreatePartitionsResult(topic.name, ApiError(code)) for topic in request.topics]

    @staticmethod
    def response(
        context: RequestContext,
        results: Sequence[CreatePartitionsResult],
        throttle_time: i32Timedelta,
    ) -> ResponsePayload:
        response = latest.CreatePartitionsResponse(
            throttle_time=throttle_time,
            results=tuple(
                latest.CreatePartitionsTopicResult(
                    name=TopicName(result.name),
                    error_code=result.error.code,
                    error_message=result.error.message if result.error.is_failure else None,
                )
                for result in results
            ),
        )
        return for_version(response, context.api_version)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """Every topic of the request refused with ``code`` (the controller was not reached)."""
    return CreatePartitionsHandler.refusal(context, code)
