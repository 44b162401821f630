"""LeaveGroup (API key 13), v0 to v5: members leave (v3+: many at once, static members by
group.instance.id); the group rebalances without them."""

from __future__ import annotations

from typing import Final

from kio.schema.leave_group.v5 import request as newest
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version, request_field
from strom.server.handlers._groups import GroupHandler, group_refused

__all__ = ["LeaveGroupHandler"]

BATCHED_VERSION: Final = 3


class LeaveGroupHandler(GroupHandler):
    api_key: Final = ApiKey.LEAVE_GROUP
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.LEAVE_GROUP]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        version = context.api_version
        body = as_newest(context.body, newest.LeaveGroupRequest)
        refused = group_refused(context, body.group_id, members=())
        if refused is not None:
            return refused
        if version >= BATCHED_VERSION:
            request = newest.LeaveGroupRequest(
                group_id=body.group_id,
                members=tuple(
                    newest.MemberIdentity(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        reason=request_field(m, "reason", None),
                    )
                    for m in body.members
                ),
            )
        else:
            member_id = str(request_field(context.body, "member_id", ""))
            request = newest.LeaveGroupRequest(
                group_id=body.group_id,
                members=(newest.MemberIdentity(member_id=member_id, group_instance_id=None),),
            )
        response = self._coordinator.leave_group(request, now_ms=self._runtime.now_ms())
        self._runtime.wake()
        if version < BATCHED_VERSION and response.error_code is ErrorCode.none:
            response = response.__class__(
                throttle_time=response.throttle_time,
                error_code=response.members[0].error_code,
                members=(),
            )
        return for_version(response, version)
