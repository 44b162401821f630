"""OffsetCommit (API key 8), v2 to v9: commit a group's offsets; answered once written.

A member commits in its generation; a group without members accepts generation -1 and an empty
member id (a simple consumer group, ``assign`` users). v2-v4's retention time sets an expire
timestamp, as Kafka does. A commit with a generation for a group that does not exist answers
GROUP_ID_NOT_FOUND from v9 on, ILLEGAL_GENERATION before.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Final

from kio.schema.offset_commit.v9 import request as newest
from kio.schema.offset_commit.v9 import response as commit
from kio.schema.types import TopicName
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version, request_field
from strom.server.handlers._groups import GroupHandler, newest_request, split_commit

__all__ = ["OffsetCommitHandler"]

GROUP_ID_NOT_FOUND_VERSION: Final = 9


class OffsetCommitHandler(GroupHandler):
    api_key: Final = ApiKey.OFFSET_COMMIT
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.OFFSET_COMMIT]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = newest_request(context, newest.OffsetCommitRequest)
        retention = request_field(context.body, "retention_time", None)
        retention_ms = (
            int(retention.total_seconds() * 1000)
            if isinstance(retention, datetime.timedelta)
            else -1
        )
        allowed, denied = split_commit(context, request.group_id, request.topics)
        request = dataclasses.replace(request, topics=allowed)
        await self._runtime.ensure_topic()
        response: commit.OffsetCommitResponse = await self._runtime.call(
            lambda reply: self._coordinator.offset_commit(
                request, retention_ms=retention_ms, now_ms=self._runtime.now_ms(), reply=reply
            )
        )
        if denied:
            refused = tuple(
                commit.OffsetCommitResponseTopic(
                    name=TopicName(name),
                    partitions=tuple(
                        commit.OffsetCommitResponsePartition(partition_index=index, error_code=code)
                        for index in indexes
                    ),
                )
                for name, indexes, code in denied
            )
            response = dataclasses.replace(response, topics=(*response.topics, *refused))
        if context.api_version < GROUP_ID_NOT_FOUND_VERSION:
            response = _without_group_id_not_found(response)
        return for_version(response, context.api_version)


def _without_group_id_not_found(
    response: commit.OffsetCommitResponse,
) -> commit.OffsetCommitResponse:
    return dataclasses.replace(
        response,
        topics=tuple(
            dataclasses.replace(
                topic,
                partitions=tuple(
                    dataclasses.replace(p, error_code=ErrorCode.illegal_generation)
                    if p.error_code is ErrorCode.group_id_not_found
                    else p
                    for p in topic.partitions
                ),
            )
            for topic in response.topics
        ),
    )
