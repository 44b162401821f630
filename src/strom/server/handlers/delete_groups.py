"""DeleteGroups (API key 42), v0 to v2: delete Empty groups and their offsets
(GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP otherwise)."""

from __future__ import annotations

from typing import Final

from kio.schema.delete_groups.v2 import request as newest
from kio.schema.delete_groups.v2 import response as delete
from kio.static.protocol import ResponsePayload

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.handlers._groups import GroupHandler
from strom.server.handlers._schema import for_version
from strom.server.handlers.common import as_newest
from strom.server.handlers.registry import RequestContext

__all__ = ["DeleteGroupsHandler"]


class DeleteGroupsHandler(GroupHandler):
    api_key: Final = ApiKey.DELETE_GROUPS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DELETE_GROUPS]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.DeleteGroupsRequest)
        response: delete.DeleteGroupsResponse = await self._runtime.call(
            lambda reply: self._coordinator.delete_groups(tuple(request.groups_names), reply=reply)
        )
        return for_version(response, context.api_version)
