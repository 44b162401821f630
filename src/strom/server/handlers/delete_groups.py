"""DeleteGroups (API key 42), v0 to v2: delete Empty groups and their offsets
(GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP otherwise)."""

from __future__ import annotations

import dataclasses
from typing import Final

from kio.schema.delete_groups.v2 import request as newest
from kio.schema.delete_groups.v2 import response as delete
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version
from strom.server.handlers._groups import GroupHandler

__all__ = ["DeleteGroupsHandler"]


class DeleteGroupsHandler(GroupHandler):
    api_key: Final = ApiKey.DELETE_GROUPS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DELETE_GROUPS]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.DeleteGroupsRequest)
        allowed = tuple(
            name
            for name in request.groups_names
            if context.authorize(AclOperation.DELETE, ResourceType.GROUP, name)
        )
        response: delete.DeleteGroupsResponse = await self._runtime.call(
            lambda reply: self._coordinator.delete_groups(allowed, reply=reply)
        )
        if len(allowed) < len(request.groups_names):
            denied = tuple(
                delete.DeletableGroupResult(
                    group_id=name, error_code=ErrorCode.group_authorization_failed
                )
                for name in request.groups_names
                if name not in allowed
            )
            response = dataclasses.replace(response, results=(*response.results, *denied))
        return for_version(response, context.api_version)
