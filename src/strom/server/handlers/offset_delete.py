"""OffsetDelete (API key 47), v0: delete a group's committed offsets of some partitions;
GROUP_SUBSCRIBED_TO_TOPIC for topics an active consumer group is subscribed to."""

from __future__ import annotations

from typing import Final

from kio.schema.offset_delete.v0 import request as newest
from kio.static.protocol import ResponsePayload

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation
from strom.server.handlers._groups import GroupHandler, group_refused
from strom.server.handlers.common import as_newest
from strom.server.handlers.registry import RequestContext

__all__ = ["OffsetDeleteHandler"]


class OffsetDeleteHandler(GroupHandler):
    api_key: Final = ApiKey.OFFSET_DELETE
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.OFFSET_DELETE]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.OffsetDeleteRequest)
        refused = group_refused(context, request.group_id, AclOperation.DELETE, topics=())
        if refused is not None:
            return refused
        response: ResponsePayload = await self._runtime.call(
            lambda reply: self._coordinator.offset_delete(request, reply=reply)
        )
        return response
