"""OffsetCommit (API key 8), v2 to v9: commit a group's offsets; answered once written.

A member commits in its generation; a group without members accepts generation -1 and an empty
member id (a simple consumer group, ``assign`` users). v2-v4's retention time sets an expire
timestamp, as Kafka does.
"""

from __future__ import annotations

import datetime
from typing import Final

from kio.schema.offset_commit.v9 import request as newest
from kio.schema.offset_commit.v9 import response as commit
from kio.static.protocol import ResponsePayload

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.handlers._groups import GroupHandler, newest_request
from strom.server.handlers._schema import for_version
from strom.server.handlers.common import request_field
from strom.server.handlers.registry import RequestContext

__all__ = ["OffsetCommitHandler"]


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
        response: commit.OffsetCommitResponse = await self._runtime.call(
            lambda reply: self._coordinator.offset_commit(
                request, retention_ms=retention_ms, now_ms=self._runtime.now_ms(), reply=reply
            )
        )
        return for_version(response, context.api_version)
