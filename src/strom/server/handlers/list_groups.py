"""ListGroups (API key 16), v0 to v5: the groups this coordinator knows (v4+: only those in
the states asked for; v5+: of the types asked for)."""

from __future__ import annotations

import dataclasses
from typing import Final

from kio.schema.list_groups.v5 import request as newest
from kio.static.protocol import ResponsePayload

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version
from strom.server.handlers._groups import GroupHandler, newest_request

__all__ = ["ListGroupsHandler"]


class ListGroupsHandler(GroupHandler):
    api_key: Final = ApiKey.LIST_GROUPS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.LIST_GROUPS]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = newest_request(context, newest.ListGroupsRequest)
        response = self._coordinator.list_groups(request)
        if not context.authorize(AclOperation.DESCRIBE, audit=False):
            # without DESCRIBE on the cluster, only the groups it may describe (Kafka's rule)
            groups = tuple(
                group
                for group in response.groups
                if context.authorize(
                    AclOperation.DESCRIBE, ResourceType.GROUP, group.group_id, audit=False
                )
            )
            response = dataclasses.replace(response, groups=groups)
        return for_version(response, context.api_version)
