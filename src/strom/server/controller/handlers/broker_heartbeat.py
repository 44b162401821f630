"""BrokerHeartbeat (API key 63), v0 and v1, on the controller listener: keeps a broker's session
alive, reports how far it has read the metadata log, and asks to be fenced, unfenced or shut
down; the answer says whether it is caught up, fenced, and may shut down. strom's brokers add
the balancer's load in a tagged field of their own (``strom.protocol.strom_fields``). The
controller hears when a connection that carried heartbeats closes (fast fencing of a dead
broker)."""

from __future__ import annotations

from functools import partial
from typing import Final, Protocol

from kio.schema.broker_heartbeat.v1 import response as latest
from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from strom.balancer.load import ReplicaLoad
from strom.common import TopicPartition
from strom.controller import BrokerHeartbeatReply
from strom.protocol.api import KAFKA_CONTROLLER_VERSIONS, ApiKey
from strom.protocol.strom_fields import BrokerHeartbeatRequest, PartitionLoad
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version, request_field
from strom.server.api.throttle import NO_THROTTLE

__all__ = ["BrokerHeartbeatHandler"]

_NO_LOADS: tuple[PartitionLoad, ...] = ()


class HeartbeatReceiver(Protocol):
    """What BrokerHeartbeat needs of the controller."""

    async def broker_heartbeat(
        self,
        *,
        broker_id: int,
        broker_epoch: int,
        metadata_offset: int,
        want_fence: bool,
        want_shut_down: bool,
        connection: str | None = None,
        loads: tuple[ReplicaLoad, ...] = (),
    ) -> BrokerHeartbeatReply:
        """A broker's heartbeat (``loads``: its new load sample, if any); raises
        NotControllerError."""
        ...

    def heartbeat_connection_closed(self, connection: str) -> None:
        """The connection heartbeats came on closed."""
        ...


class BrokerHeartbeatHandler:
    api_key: Final = ApiKey.BROKER_HEARTBEAT
    versions: Final = KAFKA_CONTROLLER_VERSIONS[ApiKey.BROKER_HEARTBEAT]

    def __init__(self, controller: HeartbeatReceiver) -> None:
        self._controller = controller
        self._watched: set[str] = set()
        """The connections heartbeats came on that are still open."""

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, BrokerHeartbeatRequest)
        connection = context.connection_id
        if connection not in self._watched:
            self._watched.add(connection)
            context.when_closed(partial(self._closed, connection))
        reply = await self._controller.broker_heartbeat(
            broker_id=int(request.broker_id),
            broker_epoch=int(request.broker_epoch),
            metadata_offset=int(request.current_metadata_offset),
            want_fence=request.want_fence,
            want_shut_down=request.want_shut_down,
            connection=connection,
            loads=tuple(
                ReplicaLoad(
                    TopicPartition(load.topic, int(load.partition)),
                    int(load.size),
                    float(load.bytes_in_rate),
                    float(load.bytes_out_rate),
                )
                for load in request_field(request, "partition_loads", _NO_LOADS)
            ),
        )
        response = latest.BrokerHeartbeatResponse(
            throttle_time=NO_THROTTLE,
            error_code=reply.error.code,
            is_caught_up=reply.is_caught_up,
            is_fenced=reply.is_fenced,
            should_shut_down=reply.should_shut_down,
        )
        return for_version(response, context.api_version)

    def _closed(self, connection: str) -> None:
        self._watched.discard(connection)
        self._controller.heartbeat_connection_closed(connection)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """The answer with ``code`` alone (the controller was not reached)."""
    response = latest.BrokerHeartbeatResponse(
        throttle_time=NO_THROTTLE, error_code=code, should_shut_down=False
    )
    return for_version(response, context.api_version)
