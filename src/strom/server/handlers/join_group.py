"""JoinGroup (API key 11), v0 to v9: join a classic group, held until the rebalance completes.

v0 has no rebalance timeout (the session timeout is used, as Kafka does); v4+ first joins
without a member id get MEMBER_ID_REQUIRED and a member id to join with. Before v7 the protocol
name is not nullable: an error answers it empty.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from kio.schema.join_group.v9 import request as newest
from kio.schema.join_group.v9 import response as join
from kio.static.protocol import ResponsePayload

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version, request_field
from strom.server.handlers._groups import (
    GroupHandler,
    client_host,
    group_refused,
    newest_request,
)

__all__ = ["JoinGroupHandler"]

MEMBER_ID_REQUIRED_VERSION: Final = 4
NULLABLE_PROTOCOL_NAME_VERSION: Final = 7


class JoinGroupHandler(GroupHandler):
    api_key: Final = ApiKey.JOIN_GROUP
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.JOIN_GROUP]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        version = context.api_version
        request = newest_request(
            context,
            newest.JoinGroupRequest,
            rebalance_timeout=request_field(context.body, "session_timeout", None)
            if version == 0
            else None,
        )
        refused = group_refused(
            context,
            request.group_id,
            protocol_name=None if version >= NULLABLE_PROTOCOL_NAME_VERSION else "",
            leader="",
            member_id=request.member_id,
            members=(),
        )
        if refused is not None:
            return refused
        await self._runtime.ensure_topic()
        response: join.JoinGroupResponse = await self._runtime.call(
            lambda reply: self._coordinator.join_group(
                request,
                client_id=context.header.client_id or "",
                client_host=client_host(context),
                require_known_member_id=version >= MEMBER_ID_REQUIRED_VERSION,
                now_ms=self._runtime.now_ms(),
                reply=reply,
            )
        )
        if version < NULLABLE_PROTOCOL_NAME_VERSION and response.protocol_name is None:
            response = dataclasses.replace(response, protocol_name="")
        return for_version(response, version)
