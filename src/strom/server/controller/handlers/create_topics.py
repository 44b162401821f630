"""CreateTopics (API key 19), v2 to v7.

The controller validates and creates (``QuorumController.create_topics``: names, collisions,
-1 for the broker's ``num.partitions``/``default.replication.factor``, manual assignments,
configs, ``validate_only``); this handler turns its results into Kafka's answer: one result per
distinct topic name with an error code and message, and from v5 on the created (or, with
``validate_only``, the would-be) topic's partition count, replication factor and every config
with its source, as Kafka's ``ReplicationControlManager`` fills them; v7 adds the topic id.
Those details are answered only to a principal that may DescribeConfigs the topic; to another,
the topic's ``topic_config_error_code`` is TOPIC_AUTHORIZATION_FAILED and they are left out
(Kafka's ``ControllerApis.createTopics``).

The client's ``controller_mutation_rate`` (KIP-599) is charged the partitions of each topic:
strictly from v6 on (a topic over the quota answers THROTTLING_QUOTA_EXCEEDED), permissively
before (accepted, then throttled); the answer carries the quota's throttle time.

The request's ``timeout`` is not needed: the single voter commits before answering.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Final, Protocol

from kio.schema.create_topics.v7 import request as newest
from kio.schema.create_topics.v7 import response as latest
from kio.schema.types import TopicName
from kio.static.primitive import i8, i16, i32, i32Timedelta
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller import (
    ApiError,
    CreatableTopic,
    CreateTopicResult,
    CreateTopicsRequest,
    ReplicaAssignment,
)
from strom.metadata import MetadataImage
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version
from strom.server.configs.config_entries import ConfigDescriber
from strom.server.controller.handlers.topic_mutation import TopicMutationHandler
from strom.server.handlers.common import wire_uuid
from strom.server.quotas.client_quotas import (
    ControllerMutationQuota,
    ControllerMutationQuotaManager,
)

__all__ = ["CreateTopicsHandler", "error_response"]

_UNAUTHORIZED: Final = ErrorCode.topic_authorization_failed

log = logging.getLogger(__name__)


class TopicsCreator(Protocol):
    """What CreateTopics needs of the controller."""

    @property
    def image(self) -> MetadataImage:
        """The controller's committed metadata image."""
        ...

    async def create_topics(self, request: CreateTopicsRequest) -> list[CreateTopicResult]:
        """CreateTopics over the quorum; raises NotControllerError."""
        ...


class CreateTopicsHandler(TopicMutationHandler[CreateTopicsRequest, CreateTopicResult]):
    api_key = ApiKey.CREATE_TOPICS
    versions = KAFKA_BROKER_VERSIONS[ApiKey.CREATE_TOPICS]
    strict_quota_since = 6

    def __init__(
        self,
        controller: TopicsCreator,
        describer: ConfigDescriber,
        *,
        quotas: ControllerMutationQuotaManager,
    ) -> None:
        super().__init__(quotas=quotas)
        self._controller = controller
        self._describer = describer

    @staticmethod
    def parse(body: object) -> CreateTopicsRequest:
        """The controller's request for a CreateTopics body of any version."""
        request = as_newest(body, newest.CreateTopicsRequest)
        topics = [
            CreatableTopic(
                name=topic.name,
                num_partitions=int(topic.num_partitions),
                replication_factor=int(topic.replication_factor),
                assignments=tuple(
                    ReplicaAssignment(
                        partition_index=int(assignment.partition_index),
                        broker_ids=tuple(int(b) for b in assignment.broker_ids),
                    )
                    for assignment in topic.assignments
                ),
                configs={config.name: config.value for config in topic.configs},
            )
            for topic in request.topics
        ]
        return CreateTopicsRequest(topics=topics, validate_only=request.validate_only)

    def authorized(
        self, context: RequestContext, request: CreateTopicsRequest
    ) -> tuple[CreateTopicsRequest, list[CreateTopicResult]]:
        if context.authorize(AclOperation.CREATE, audit=False):
            return request, []
        # without CREATE on the cluster, CREATE on each topic (Kafka's rule)
        allowed = []
        denied: list[CreateTopicResult] = []
        for topic in request.topics:
            if context.authorize(AclOperation.CREATE, ResourceType.TOPIC, topic.name):
                allowed.append(topic)
            else:
                denied.append(CreateTopicResult(topic.name, ApiError(_UNAUTHORIZED)))
        return dataclasses.replace(request, topics=allowed), denied

    async def mutate(
        self, request: CreateTopicsRequest, quota: ControllerMutationQuota
    ) -> list[CreateTopicResult]:
        return await self._controller.create_topics(dataclasses.replace(request, quota=quota))

    def log_result(
        self, result: CreateTopicResult, *, request: CreateTopicsRequest, client: str
    ) -> None:
        if result.error.is_failure:
            log.info(
                "CreateTopics from %s: topic %s refused: %s (%s)",
                client,
                result.name,
                result.error.message,
                result.error.code.name.upper(),
            )
        elif request.validate_only:
            log.info(
                "CreateTopics from %s: topic %s would be valid (validate only)", client, result.name
            )
        else:
            log.info(
                "created topic %s with %d partition(s), replication factor %d%s (topic id %s)",
                result.name,
                result.num_partitions,
                result.replication_factor,
                f", configs {dict(sorted(result.configs.items()))}" if result.configs else "",
                result.topic_id,
            )

    @staticmethod
    def refused(request: CreateTopicsRequest, code: ErrorCode) -> list[CreateTopicResult]:
        return [CreateTopicResult(topic.name, ApiError(code)) for topic in request.topics]

    @staticmethod
    def response(
        context: RequestContext, results: Sequence[CreateTopicResult], throttle_time: i32Timedelta
    ) -> ResponsePayload:
        """The answer to a request the controller did not reach: only failures."""
        return _response(context, [_failed(result) for result in results], throttle_time)

    def answer(
        self,
        context: RequestContext,
        results: Sequence[CreateTopicResult],
        throttle_time: i32Timedelta,
    ) -> ResponsePayload:
        answers = [
            self._result(result, may_describe=_may_describe_configs(context, result.name))
            for result in results
        ]
        return _response(context, answers, throttle_time)

    def _result(
        self, result: CreateTopicResult, *, may_describe: bool
    ) -> latest.CreatableTopicResult:
        """``may_describe``: may the principal see the topic's partitions and configs?"""
        if result.error.is_failure:
            return _failed(result)
        if not may_describe:
            return latest.CreatableTopicResult(
                name=TopicName(result.name),
                topic_id=wire_uuid(result.topic_id),
                error_code=result.error.code,
                error_message=None,
                topic_config_error_code=i16(_UNAUTHORIZED),
                configs=(),
            )
        described = self._describer.topic(
            self._controller.image, result.name, overrides=result.configs
        )
        return latest.CreatableTopicResult(
            name=TopicName(result.name),
            topic_id=wire_uuid(result.topic_id),
            error_code=result.error.code,
            error_message=None,
            num_partitions=i32(result.num_partitions),
            replication_factor=i16(result.replication_factor),
            configs=tuple(
                latest.CreatableTopicConfigs(
                    name=entry.name,
                    value=entry.value,
                    read_only=entry.read_only,
                    config_source=i8(entry.source),
                    is_sensitive=entry.is_sensitive,
                )
                for entry in described
            ),
        )


def _may_describe_configs(context: RequestContext, topic: str) -> bool:
    return context.authorize(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, topic, audit=False)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """Every topic of the request refused with ``code`` (the controller was not reached)."""
    return CreateTopicsHandler.refusal(context, code)


def _failed(result: CreateTopicResult) -> latest.CreatableTopicResult:
    return latest.CreatableTopicResult(
        name=TopicName(result.name),
        topic_id=None,
        error_code=result.error.code,
        error_message=result.error.message,
        configs=(),
    )


def _response(
    context: RequestContext,
    topics: list[latest.CreatableTopicResult],
    throttle_time: i32Timedelta,
) -> ResponsePayload:
    response = latest.CreateTopicsResponse(throttle_time=throttle_time, topics=tuple(topics))
    return for_version(response, context.api_version)
