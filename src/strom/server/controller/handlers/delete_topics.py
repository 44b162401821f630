"""DeleteTopics (API key 20), v1 to v6: by name, and from v6 on by topic id.

The controller resolves each entry (UNKNOWN_TOPIC_OR_PARTITION for a name, UNKNOWN_TOPIC_ID for
an id no topic has, INVALID_REQUEST for an entry given twice, TOPIC_DELETION_DISABLED under
``delete.topic.enable=false``) and removes the topics in one batch; the log publisher deletes
their partition logs when the batch is applied. One result per request entry, as Kafka's.

The client's ``controller_mutation_rate`` (KIP-599) is charged the partitions of each topic
deleted: strictly from v5 on (THROTTLING_QUOTA_EXCEEDED once exhausted), permissively before.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Protocol

from kio.schema.delete_topics.v6 import request as newest
from kio.schema.delete_topics.v6 import response as latest
from kio.schema.types import TopicName
from kio.static.primitive import i32Timedelta
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller import (
    ZERO_UUID,
    ApiError,
    DeletableTopic,
    DeleteTopicResult,
    DeleteTopicsRequest,
)
from strom.metadata import MetadataImage
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version, request_field
from strom.server.controller.handlers.topic_mutation import TopicMutationHandler
from strom.server.handlers.common import wire_uuid
from strom.server.quotas.client_quotas import (
    ControllerMutationQuota,
    ControllerMutationQuotaManager,
)

__all__ = ["DeleteTopicsHandler", "error_response"]

log = logging.getLogger(__name__)


class TopicsDeleter(Protocol):
    """What DeleteTopics needs of the controller."""

    @property
    def image(self) -> MetadataImage:
        """The controller's committed metadata image."""
        ...

    async def delete_topics(self, request: DeleteTopicsRequest) -> list[DeleteTopicResult]:
        """DeleteTopics over the quorum; raises NotControllerError."""
        ...


class DeleteTopicsHandler(TopicMutationHandler[DeleteTopicsRequest, DeleteTopicResult]):
    api_key = ApiKey.DELETE_TOPICS
    versions = KAFKA_BROKER_VERSIONS[ApiKey.DELETE_TOPICS]
    strict_quota_since = 5

    def __init__(
        self, controller: TopicsDeleter, *, quotas: ControllerMutationQuotaManager
    ) -> None:
        super().__init__(quotas=quotas)
        self._controller = controller

    @staticmethod
    def parse(body: object) -> DeleteTopicsRequest:
        """The controller's request: v6 names topics or ids, earlier versions only names."""
        states: tuple[newest.DeleteTopicState, ...] | None = request_field(body, "topics", None)
        if states is not None:
            return DeleteTopicsRequest(
                [DeletableTopic(name=state.name, topic_id=state.topic_id) for state in states]
            )
        names: tuple[str, ...] = request_field(body, "topic_names", ())
        return DeleteTopicsRequest.of_names(*names)

    def authorized(
        self, context: RequestContext, request: DeleteTopicsRequest
    ) -> tuple[DeleteTopicsRequest, list[DeleteTopicResult]]:
        """The topics it may DELETE, and the others answered TOPIC_AUTHORIZATION_FAILED (an
        id no topic has is left to the controller, as Kafka)."""
        if context.authorizer is None:
            return request, []
        image = self._controller.image
        allowed: list[DeletableTopic] = []
        denied: list[DeleteTopicResult] = []
        for topic in request.topics:
            name = topic.name
            if name is None and topic.topic_id is not None:
                found = image.topics.get_topic_by_id(topic.topic_id)
                name = None if found is None else found.name
            if name is None or context.authorize(AclOperation.DELETE, ResourceType.TOPIC, name):
                allowed.append(topic)
            else:
                error = ApiError(ErrorCode.topic_authorization_failed)
                denied.append(DeleteTopicResult(topic.name, topic.topic_id or ZERO_UUID, error))
        return DeleteTopicsRequest(allowed), denied

    async def mutate(
        self, request: DeleteTopicsRequest, quota: ControllerMutationQuota
    ) -> list[DeleteTopicResult]:
        return await self._controller.delete_topics(dataclasses.replace(request, quota=quota))

    def log_result(
        self, result: DeleteTopicResult, *, request: DeleteTopicsRequest, client: str
    ) -> None:
        if result.error.is_failure:
            log.info(
                "DeleteTopics from %s: %s not deleted: %s (%s)",
                client,
                result.name if result.name is not None else f"topic id {result.topic_id}",
                result.error.message,
                result.error.code.name.upper(),
            )
        else:
            log.info("deleted topic %s (topic id %s)", result.name, result.topic_id)

    @staticmethod
    def refused(request: DeleteTopicsRequest, code: ErrorCode) -> list[DeleteTopicResult]:
        return [
            DeleteTopicResult(topic.name, topic.topic_id or ZERO_UUID, ApiError(code))
            for topic in request.topics
        ]

    @staticmethod
    def response(
        context: RequestContext, results: Sequence[DeleteTopicResult], throttle_time: i32Timedelta
    ) -> ResponsePayload:
        response = latest.DeleteTopicsResponse(
            throttle_time=throttle_time,
            responses=tuple(
                latest.DeletableTopicResult(
                    name=None if result.name is None else TopicName(result.name),
                    topic_id=wire_uuid(result.topic_id),
                    error_code=result.error.code,
                    error_message=result.error.message if result.error.is_failure else None,
                )
                for result in results
            ),
        )
        return for_version(response, context.api_version)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """Every topic of the request refused with ``code`` (the controller was not reached)."""
    return DeleteTopicsHandler.refusal(context, code)
