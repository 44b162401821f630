"""Metadata (API key 3), v0 to v13: brokers, cluster id, controller, topics and partitions.

Kafka's rules (``KafkaApis.handleTopicMetadataRequest``, ``KRaftMetadataCache``):

* which topics: v0's empty list and v1+'s null mean every topic; otherwise the named ones (once
  each, in request order), or from v12 on the ones named by topic id (UNKNOWN_TOPIC_ID for an
  id no topic has, with a null name). v10 and v11 carry the id field but Kafka never served it:
  a request that uses it is answered INVALID_REQUEST for every topic and no brokers.
* an unknown topic is auto-created when ``auto.create.topics.enable`` is on, the request allows
  it (``allow_auto_topic_creation``, v4+; always for v0-v3) and it is not an all-topics or a
  by-id request. Kafka answers LEADER_NOT_AVAILABLE while its controller creates the topic; the
  controller here commits before answering, so the new topic is answered as it is, which
  producers take on the first try. Otherwise unknown topics get UNKNOWN_TOPIC_OR_PARTITION and
  names Kafka would not accept INVALID_TOPIC_EXCEPTION.
* brokers: the unfenced brokers' endpoints on the client listener; the controller id is this
  node (Kafka gives clients an alive broker, since controllers are not reachable by them).
  Unlike Kafka, a broker fenced moments ago is listed a few seconds more (see
  ``fenced_brokers``: librdkafka would otherwise undo the move of the partitions it led).
* a partition whose leader has no endpoint gets LEADER_NOT_AVAILABLE and leader -1; replicas on
  brokers that are not alive are listed as offline.
* with an authorizer (Kafka's rules): an all-topics request lists only the topics the principal
  may DESCRIBE; a named topic it may not describe is answered TOPIC_AUTHORIZATION_FAILED, and so
  is an unknown one it may not create (CREATE on the cluster or the topic) when auto-creation
  would apply.
* ``*_authorized_operations``: a client that asks gets the operations it may do on the
  resource (all of them without an authorizer); one that does not gets Kafka's "omitted" value
  (-2^31).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Final, Protocol

from kio.schema.metadata.v13 import request as newest
from kio.schema.metadata.v13 import response as latest
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller import (
    CLUSTER_METADATA_TOPIC,
    ZERO_UUID,
    ApiError,
    invalid_topic_reason,
    is_internal,
)
from strom.metadata import MetadataImage, PartitionRegistration, TopicImage
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version, request_field
from strom.server.api.metadata_view import MetadataView
from strom.server.api.throttle import NO_THROTTLE
from strom.server.handlers.common import (
    AUTHORIZED_OPERATIONS_OMITTED,
    authorized_operations,
    broker_addresses,
    wire_uuid,
)
from strom.server.handlers.fenced_brokers import RecentlyFenced

__all__ = ["MetadataHandler", "MetadataQuery"]

_UNAUTHORIZED: Final = ErrorCode.topic_authorization_failed

_TOPIC_IDS_FROM: Final = 12
"""The first version whose topic ids Kafka serves."""


@dataclass(frozen=True)
class MetadataQuery:
    """What a Metadata request asks, whatever its version."""

    names: Sequence[str] | None
    """Topic names, or None for every topic."""
    topic_ids: Sequence[uuid.UUID] = ()
    allow_auto_topic_creation: bool = True
    include_cluster_authorized_operations: bool = False
    include_topic_authorized_operations: bool = False

    @classmethod
    def of(cls, body: object, version: int) -> MetadataQuery | None:
        """The query, or None when a v10/v11 request uses topic ids (INVALID_REQUEST)."""
        request = as_newest(body, newest.MetadataRequest)
        names: list[str] | None = None
        ids: list[uuid.UUID] = []
        if request.topics is not None and (request.topics or version > 0):
            names = []
            for topic in request.topics:
                topic_id = request_field(topic, "topic_id", ZERO_UUID) or ZERO_UUID
                if topic.name is not None and topic_id == ZERO_UUID:
                    names.append(topic.name)
                elif version < _TOPIC_IDS_FROM or topic_id == ZERO_UUID:
                    return None
                else:
                    ids.append(topic_id)
        return cls(
            names=None if names is None else list(dict.fromkeys(names)),
            topic_ids=list(dict.fromkeys(ids)),
            allow_auto_topic_creation=request_field(request, "allow_auto_topic_creation", True),
            include_cluster_authorized_operations=request_field(
                request, "include_cluster_authorized_operations", False
            ),
            include_topic_authorized_operations=request_field(
                request, "include_topic_authorized_operations", False
            ),
        )


class TopicAutoCreator(Protocol):
    """What Metadata needs to create the topics it is asked for (the broker's
    ``AutoTopicCreator``)."""

    @property
    def enabled(self) -> bool:
        """``auto.create.topics.enable`` as of now."""
        ...

    async def create(self, names: Sequence[str]) -> Mapping[str, ApiError]:
        """Create the topics; the outcome per name."""
        ...


class MetadataHandler:
    api_key: Final = ApiKey.METADATA
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.METADATA]

    def __init__(
        self,
        metadata: MetadataView,
        *,
        cluster_id: str,
        controller_id: Callable[[], int],
        auto_topics: TopicAutoCreator,
        recently_fenced: RecentlyFenced | None = None,
    ) -> None:
        """``recently_fenced``: the fenced brokers still listed (None: none, as Kafka)."""
        self._metadata = metadata
        self._cluster_id = cluster_id
        self._controller_id = controller_id
        self._auto_topics = auto_topics
        self._recently_fenced = recently_fenced

    async def handle(self, context: RequestContext) -> ResponsePayload:
        version = context.api_version
        query = MetadataQuery.of(context.body, version)
        if query is None:
            return for_version(_invalid_request(context.body), version)
        image = self._metadata.image
        denied = _undescribable(context, query.names or ())
        if query.names is not None and query.allow_auto_topic_creation and not query.topic_ids:
            unknown = [
                name
                for name in query.names
                if image.topic(name) is None
                and invalid_topic_reason(name) is None
                and name != CLUSTER_METADATA_TOPIC
                and name not in denied
            ]
            if unknown and self._auto_topics.enabled:
                uncreatable = _uncreatable(context, unknown)
                denied |= uncreatable
                unknown = [name for name in unknown if name not in uncreatable]
            if unknown and self._auto_topics.enabled:
                await self._auto_topics.create(unknown)
                image = self._metadata.image
        cluster_operations = (
            authorized_operations(context, ResourceType.CLUSTER)
            if query.include_cluster_authorized_operations
            else AUTHORIZED_OPERATIONS_OMITTED
        )
        return for_version(
            self.build(image, query, context, denied=denied),
            version,
            extra={"cluster_authorized_operations": cluster_operations},  # v8-v10 only
        )

    def build(
        self,
        image: MetadataImage,
        query: MetadataQuery,
        context: RequestContext,
        *,
        denied: Set[str] = frozenset(),
    ) -> latest.MetadataResponse:
        """The response (newest version) to ``query`` as of ``image``, brokers as reached on
        the context's listener; topics the principal may not describe are left out of an
        all-topics answer, and answered TOPIC_AUTHORIZATION_FAILED when named (``denied``)."""
        recently_fenced = (
            frozenset() if self._recently_fenced is None else self._recently_fenced.listed()
        )
        brokers = [
            address
            for address in broker_addresses(
                image, context.listener_name, include_fenced=bool(recently_fenced)
            )
            if not address.fenced or address.node_id in recently_fenced
        ]
        alive = {address.node_id for address in brokers if not address.fenced}
        topics: list[latest.MetadataResponseTopic] = []
        if query.names is None:
            for name in sorted(image.topics.topics_by_name):
                if context.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name, audit=False):
                    topics.append(
                        self._topic(image.topics.topics_by_name[name], alive, query, context)
                    )
        else:
            for name in query.names:
                topic = image.topic(name)
                if name in denied:
                    topics.append(_missing(_UNAUTHORIZED, name=name, topic_id=None))
                elif topic is None:
                    code = (
                        ErrorCode.invalid_topic_exception
                        if invalid_topic_reason(name) is not None
                        else ErrorCode.unknown_topic_or_partition
                    )
                    topics.append(_missing(code, name=name, topic_id=None))
                else:
                    topics.append(self._topic(topic, alive, query, context))
            for topic_id in query.topic_ids:
                by_id = image.topics.get_topic_by_id(topic_id)
                if by_id is None:
                    topics.append(
                        _missing(ErrorCode.unknown_topic_id, name=None, topic_id=topic_id)
                    )
                elif not context.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, by_id.name):
                    topics.append(_missing(_UNAUTHORIZED, name=None, topic_id=topic_id))
                else:
                    topics.append(self._topic(by_id, alive, query, context))
        return latest.MetadataResponse(
            throttle_time=NO_THROTTLE,
            brokers=tuple(
                latest.MetadataResponseBroker(
                    node_id=BrokerId(address.node_id),
                    host=address.host,
                    port=i32(address.port),
                    rack=address.rack,
                )
                for address in brokers
            ),
            cluster_id=self._cluster_id,
            controller_id=BrokerId(self._controller_id()),
            topics=tuple(topics),
            error_code=ErrorCode.none,
        )

    def _topic(
        self, topic: TopicImage, alive: set[int], query: MetadataQuery, context: RequestContext
    ) -> latest.MetadataResponseTopic:
        return latest.MetadataResponseTopic(
            error_code=ErrorCode.none,
            name=TopicName(topic.name),
            topic_id=topic.topic_id,
            is_internal=is_internal(topic.name),
            partitions=tuple(
                _partition(partition_id, topic.partitions[partition_id], alive)
                for partition_id in sorted(topic.partitions)
            ),
            topic_authorized_operations=(
                authorized_operations(context, ResourceType.TOPIC, topic.name)
                if query.include_topic_authorized_operations
                else AUTHORIZED_OPERATIONS_OMITTED
            ),
        )


def _undescribable(context: RequestContext, names: Sequence[str]) -> set[str]:
    """The named topics the principal may not DESCRIBE (none without an authorizer)."""
    if context.authorizer is None:
        return set()
    return {
        name
        for name in names
        if not context.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name)
    }


def _uncreatable(context: RequestContext, names: Sequence[str]) -> set[str]:
    """The topics the principal may not auto-create: CREATE on the cluster or on the topic."""
    if context.authorizer is None or context.authorize(AclOperation.CREATE, audit=False):
        return set()
    return {
        name
        for name in names
        if not context.authorize(AclOperation.CREATE, ResourceType.TOPIC, name)
    }


def _partition(
    partition_id: int, registration: PartitionRegistration, alive: set[int]
) -> latest.MetadataResponsePartition:
    leader = registration.leader
    error = ErrorCode.none
    if leader not in alive:
        error, leader = ErrorCode.leader_not_available, -1
    return latest.MetadataResponsePartition(
        error_code=error,
        partition_index=i32(partition_id),
        leader_id=BrokerId(leader),
        leader_epoch=i32(registration.leader_epoch),
        replica_nodes=tuple(BrokerId(b) for b in registration.replicas),
        isr_nodes=tuple(BrokerId(b) for b in registration.isr),
        offline_replicas=tuple(BrokerId(b) for b in registration.replicas if b not in alive),
    )


def _missing(
    code: ErrorCode, *, name: str | None, topic_id: uuid.UUID | None
) -> latest.MetadataResponseTopic:
    return latest.MetadataResponseTopic(
        error_code=code,
        name=None if name is None else TopicName(name),
        topic_id=topic_id,
        is_internal=name is not None and is_internal(name),
        partitions=(),
    )


def _invalid_request(body: object) -> latest.MetadataResponse:
    """Kafka's ``MetadataRequest.getErrorResponse``: every topic INVALID_REQUEST, no brokers."""
    topics = as_newest(body, newest.MetadataRequest).topics or ()
    return latest.MetadataResponse(
        throttle_time=NO_THROTTLE,
        brokers=(),
        topics=tuple(
            latest.MetadataResponseTopic(
                error_code=ErrorCode.invalid_request,
                name=TopicName(topic.name or ""),
                topic_id=wire_uuid(request_field(topic, "topic_id", ZERO_UUID)),
                partitions=(),
            )
            for topic in topics
        ),
        error_code=ErrorCode.none,
    )
