"""OffsetDelete (API key 47), v0: delete a group's committed offsets of some partitions;
GROUP_SUBSCRIBED_TO_TOPIC for topics an active consumer group is subscribed to. Needs DELETE on
the group (GROUP_AUTHORIZATION_FAILED) and READ on each topic (TOPIC_AUTHORIZATION_FAILED)."""

from __future__ import annotations

import dataclasses
from typing import Final

from kio.schema.offset_delete.v0 import request as newest
from kio.schema.offset_delete.v0 import response as latest
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest
from strom.server.handlers._groups import GroupHandler, group_refused

__all__ = ["OffsetDeleteHandler"]


class OffsetDeleteHandler(GroupHandler):
    api_key: Final = ApiKey.OFFSET_DELETE
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.OFFSET_DELETE]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.OffsetDeleteRequest)
        refused = group_refused(context, request.group_id, AclOperation.DELETE, topics=())
        if refused is not None:
            return refused
        readable = {
            topic.name: context.authorize(AclOperation.READ, ResourceType.TOPIC, topic.name)
            for topic in request.topics
        }
        allowed = dataclasses.replace(
            request, topics=tuple(t for t in request.topics if readable[t.name])
        )
        response: latest.OffsetDeleteResponse = await self._runtime.call(
            lambda reply: self._coordinator.offset_delete(allowed, reply=reply)
        )
        denied = tuple(
            latest.OffsetDeleteResponseTopic(
                name=topic.name,
                partitions=tuple(
                    latest.OffsetDeleteResponsePartition(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.topic_authorization_failed,
                    )
                    for p in topic.partitions
                ),
            )
            for topic in request.topics
            if not readable[topic.name]
        )
        if denied:
            response = dataclasses.replace(response, topics=(*response.topics, *denied))
        return response
