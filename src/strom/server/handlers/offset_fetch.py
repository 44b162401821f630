"""OffsetFetch (API key 9), v1 to v9: a group's committed offsets (v8+: many groups at once;
no topics: all of them). A partition without a commit answers offset -1. With
``require_stable`` (v7+, what read_committed consumers send), a partition with an undecided
transactional offset commit answers UNSTABLE_OFFSET_COMMIT and the client asks again."""

from __future__ import annotations

import dataclasses
from typing import Final

from kio.schema.offset_fetch.v9 import request as newest
from kio.schema.offset_fetch.v9 import response as latest
from kio.schema.types import GroupId
from kio.static.primitive import i64
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import build, for_version, request_field, response_module
from strom.server.api.throttle import NO_THROTTLE
from strom.server.handlers._groups import GroupHandler, newest_request

__all__ = ["OffsetFetchHandler"]

BATCHED_VERSION: Final = 8


class OffsetFetchHandler(GroupHandler):
    api_key: Final = ApiKey.OFFSET_FETCH
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.OFFSET_FETCH]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        version = context.api_version
        if version >= BATCHED_VERSION:
            request = newest_request(context, newest.OffsetFetchRequest)
            return for_version(await self._fetch(context, request), version)
        body = context.body
        topics = request_field(body, "topics", None)
        group = newest.OffsetFetchRequestGroup(
            group_id=GroupId(request_field(body, "group_id", "")),
            member_id=None,
            topics=None
            if topics is None
            else tuple(
                newest.OffsetFetchRequestTopics(name=t.name, partition_indexes=t.partition_indexes)
                for t in topics
            ),
        )
        answer = (
            await self._fetch(
                context,
                newest.OffsetFetchRequest(
                    groups=(group,), require_stable=request_field(body, "require_stable", False)
                ),
            )
        ).groups[0]
        old = response_module(self.api_key, version)
        response: ResponsePayload = build(
            old.OffsetFetchResponse,
            throttle_time=NO_THROTTLE,
            error_code=answer.error_code,
            topics=tuple(
                old.OffsetFetchResponseTopic(
                    name=t.name,
                    partitions=tuple(
                        build(
                            old.OffsetFetchResponsePartition,
                            **{f.name: getattr(p, f.name) for f in dataclasses.fields(p)},
                        )
                        for p in t.partitions
                    ),
                )
                for t in answer.topics
            ),
        )
        return response

    async def _fetch(
        self, context: RequestContext, request: newest.OffsetFetchRequest
    ) -> latest.OffsetFetchResponse:
        """The coordinator's answer, with Kafka's checks: DESCRIBE on each group (else
        GROUP_AUTHORIZATION_FAILED) and on each topic (a named one it may not describe answers
        TOPIC_AUTHORIZATION_FAILED; an all-topics fetch leaves such topics out). The offsets
        topic is created only for a request that may read some group."""
        if context.authorizer is None:
            await self._runtime.ensure_topic()
            return self._coordinator.offset_fetch(request)
        allowed: list[newest.OffsetFetchRequestGroup] = []
        denied_topics: dict[str, list[latest.OffsetFetchResponseTopics]] = {}
        for group in request.groups:
            if not context.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group.group_id):
                continue
            if group.topics is None:
                allowed.append(group)
                continue
            named = {t.name: _describable(context, t.name) for t in group.topics}
            denied_topics[group.group_id] = [
                _unauthorized_topic(t) for t in group.topics if not named[t.name]
            ]
            kept = tuple(t for t in group.topics if named[t.name])
            allowed.append(dataclasses.replace(group, topics=kept))
        if allowed:
            await self._runtime.ensure_topic()
        answered = {
            group.group_id: group
            for group in self._coordinator.offset_fetch(
                dataclasses.replace(request, groups=tuple(allowed))
            ).groups
        }
        groups = []
        for group in request.groups:
            answer = answered.get(group.group_id)
            if answer is None:
                groups.append(
                    latest.OffsetFetchResponseGroup(
                        group_id=group.group_id,
                        topics=(),
                        error_code=ErrorCode.group_authorization_failed,
                    )
                )
            elif group.topics is None:
                topics = tuple(
                    t for t in answer.topics if _describable(context, t.name, audit=False)
                )
                groups.append(dataclasses.replace(answer, topics=topics))
            else:
                topics = (*answer.topics, *denied_topics[group.group_id])
                groups.append(dataclasses.replace(answer, topics=topics))
        return latest.OffsetFetchResponse(throttle_time=NO_THROTTLE, groups=tuple(groups))


def _describable(context: RequestContext, topic: str, *, audit: bool = True) -> bool:
    return context.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, topic, audit=audit)


def _unauthorized_topic(topic: newest.OffsetFetchRequestTopics) -> latest.OffsetFetchResponseTopics:
    return latest.OffsetFetchResponseTopics(
        name=topic.name,
        partitions=tuple(
            latest.OffsetFetchResponsePartitions(
                partition_index=index,
                committed_offset=i64(-1),
                metadata=None,
                error_code=ErrorCode.topic_authorization_failed,
            )
            for index in topic.partition_indexes
        ),
    )
