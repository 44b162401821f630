"""DescribeGroups (API key 15), v0 to v6: state, protocol and members of groups. An unknown
group is Dead; v6 adds GROUP_ID_NOT_FOUND for it, older versions answer NONE."""

from __future__ import annotations

import dataclasses
from typing import Final

from kio.schema.describe_groups.v6 import request as newest
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version, request_field
from strom.server.handlers._groups import GroupHandler
from strom.server.handlers.common import AUTHORIZED_OPERATIONS_OMITTED, authorized_operations

__all__ = ["DescribeGroupsHandler"]

GROUP_ID_NOT_FOUND_VERSION: Final = 6


class DescribeGroupsHandler(GroupHandler):
    api_key: Final = ApiKey.DESCRIBE_GROUPS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DESCRIBE_GROUPS]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.DescribeGroupsRequest)
        include_operations = bool(
            request_field(context.body, "include_authorized_operations", False)
        )
        response = self._coordinator.describe_groups(tuple(request.groups))
        groups = []
        for described in response.groups:
            group = described
            if not context.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group.group_id):
                group = dataclasses.replace(
                    group,
                    error_code=ErrorCode.group_authorization_failed,
                    error_message=None,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=(),
                )
            elif group.error_code is ErrorCode.group_id_not_found and (
                context.api_version < GROUP_ID_NOT_FOUND_VERSION
            ):
                group = dataclasses.replace(group, error_code=ErrorCode.none, error_message=None)
            groups.append(
                dataclasses.replace(
                    group,
                    authorized_operations=authorized_operations(
                        context, ResourceType.GROUP, group.group_id
                    )
                    if include_operations
                    else AUTHORIZED_OPERATIONS_OMITTED,
                )
            )
        return for_version(dataclasses.replace(response, groups=tuple(groups)), context.api_version)
