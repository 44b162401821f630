"""OffsetFetch (API key 9), v1 to v9: a group's committed offsets (v8+: many groups at once;
no topics: all of them). A partition without a commit answers offset -1. With
``require_stable`` (v7+, what read_committed consumers send), a partition with an undecided
transactional offset commit answers UNSTABLE_OFFSET_COMMIT and the client asks again."""

from __future__ import annotations

import dataclasses
from typing import Final

from kio.schema.offset_fetch.v9 import request as newest
from kio.schema.types import GroupId
from kio.static.protocol import ResponsePayload

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.handlers._groups import GroupHandler, newest_request
from strom.server.handlers._schema import build, for_version, response_module
from strom.server.handlers.common import NO_THROTTLE, request_field
from strom.server.handlers.registry import RequestContext

__all__ = ["OffsetFetchHandler"]

BATCHED_VERSION: Final = 8


class OffsetFetchHandler(GroupHandler):
    api_key: Final = ApiKey.OFFSET_FETCH
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.OFFSET_FETCH]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        version = context.api_version
        if version >= BATCHED_VERSION:
            request = newest_request(context, newest.OffsetFetchRequest)
            return for_version(self._coordinator.offset_fetch(request), version)
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
        answer = self._coordinator.offset_fetch(
            newest.OffsetFetchRequest(
                groups=(group,), require_stable=request_field(body, "require_stable", False)
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
