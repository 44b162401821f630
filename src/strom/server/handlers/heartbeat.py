"""Heartbeat (API key 12), v0 to v4: keeps a member's session alive; REBALANCE_IN_PROGRESS
tells it to rejoin."""

from __future__ import annotations

from typing import Final

from kio.schema.heartbeat.v4 import request as newest
from kio.static.protocol import ResponsePayload

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version
from strom.server.handlers._groups import GroupHandler, group_refused, newest_request

__all__ = ["HeartbeatHandler"]


class HeartbeatHandler(GroupHandler):
    api_key: Final = ApiKey.HEARTBEAT
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.HEARTBEAT]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = newest_request(context, newest.HeartbeatRequest)
        refused = group_refused(context, request.group_id)
        if refused is not None:
            return refused
        response = self._coordinator.heartbeat(request, now_ms=self._runtime.now_ms())
        self._runtime.wake()
        return for_version(response, context.api_version)
