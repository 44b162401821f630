"""SyncGroup (API key 14), v0 to v5: the leader hands in the assignment; every member gets its
own, held until the leader's arrives."""

from __future__ import annotations

from typing import Final

from kio.schema.sync_group.v5 import request as newest
from kio.schema.sync_group.v5 import response as sync
from kio.static.protocol import ResponsePayload

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version
from strom.server.handlers._groups import GroupHandler, group_refused, newest_request

__all__ = ["SyncGroupHandler"]


class SyncGroupHandler(GroupHandler):
    api_key: Final = ApiKey.SYNC_GROUP
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.SYNC_GROUP]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = newest_request(context, newest.SyncGroupRequest)
        refused = group_refused(context, request.group_id, assignment=b"")
        if refused is not None:
            return refused
        response: sync.SyncGroupResponse = await self._runtime.call(
            lambda reply: self._coordinator.sync_group(
                request, now_ms=self._runtime.now_ms(), reply=reply
            )
        )
        return for_version(response, context.api_version)
