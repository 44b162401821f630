"""The controller's handlers, as one table (Kafka's ``ControllerApis``).

Each row is an API's handler, the operation on the cluster it needs (served only to principals
allowed it, :class:`~strom.server.handlers.cluster_authorization.ClusterAuthorized`) and, for
the APIs that answer NOT_CONTROLLER themselves when this node is not (or stops being) the
active controller, the API's answer with an error. Those are wrapped once, in
:class:`AnswersNotController`; the others let :class:`NotControllerError` reach the Envelope
that carried them, which answers NOT_CONTROLLER on the envelope so that the broker retries with
the new active controller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from strom.common import ErrorCode
from strom.protocol.api import ApiKey
from strom.security.acls import AclOperation
from strom.server.api.handler_table import Handler, HandlerResult, HandlerTable, RequestContext
from strom.server.controller.controller_server import ControllerServer, NotControllerError
from strom.server.controller.handlers import (
    allocate_producer_ids,
    broker_heartbeat,
    broker_registration,
)
from strom.server.controller.handlers.alter_partition import AlterPartitionHandler
from strom.server.controller.handlers.envelope import EnvelopeHandler
from strom.server.handlers.cluster_authorization import ClusterAuthorized, refusal
from strom.server.handlers.forwarding import ErrorResponse
from strom.server.quotas.client_quotas import ClientQuotaManager

__all__ = ["ADMIN_APIS", "AnswersNotController", "Row", "controller_handlers"]

ADMIN_APIS: Final = (
    ApiKey.CREATE_TOPICS,
    ApiKey.DELETE_TOPICS,
    ApiKey.CREATE_PARTITIONS,
    ApiKey.ELECT_LEADERS,
    ApiKey.UPDATE_FEATURES,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.ALTER_CONFIGS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    ApiKey.ALTER_CLIENT_QUOTAS,
    ApiKey.CREATE_ACLS,
    ApiKey.DELETE_ACLS,
    ApiKey.DESCRIBE_ACLS,
)
"""The controller's admin APIs, whose handlers ``admin_table.admin_handlers`` builds on the
first request to one of them (their modules and kio schemas load then, not at start)."""


class AnswersNotController:
    """``handler``, answering NOT_CONTROLLER with ``error_response`` when the controller is
    not active (Kafka's ``ControllerApis`` answers each request's error response)."""

    def __init__(self, handler: Handler, error_response: ErrorResponse) -> None:
        self.api_key: Final = handler.api_key
        self.versions: Final = handler.versions
        self._handler = handler
        self._error_response = error_response

    async def handle(self, context: RequestContext) -> HandlerResult:
        try:
            return await self._handler.handle(context)
        except NotControllerError:
            return self._error_response(context, ErrorCode.not_controller)


@dataclass(frozen=True, slots=True)
class Row:
    handler: Handler
    operation: AclOperation | None = None
    """ClusterAuthorized's operation on the cluster (None: the handler authorizes itself)."""
    refuse: ErrorResponse = refusal
    """The answer when ``operation`` is refused."""
    not_controller: ErrorResponse | None = None
    """The answer when the controller is not active (None: NotControllerError propagates)."""

    def handler_to_register(self) -> Handler:
        handler = self.handler
        if self.not_controller is not None:
            handler = AnswersNotController(handler, self.not_controller)
        if self.operation is not None:
            handler = ClusterAuthorized(handler, self.operation, refuse=self.refuse)
        return handler


def controller_handlers(
    controller: ControllerServer,
    *,
    registry: HandlerTable,
    cluster_id: str,
    request_quota: ClientQuotaManager,
    request_exempt: frozenset[ApiKey],
) -> list[Handler]:
    """The handlers of the APIs brokers send the controller (registration, heartbeats, ISR
    changes, producer id blocks, forwarded requests): needed from the start. ``registry`` is the
    controller listener's table, which the Envelope decodes its inner requests with."""
    cluster_action = AclOperation.CLUSTER_ACTION
    rows = [
        Row(AlterPartitionHandler(controller), cluster_action),
        Row(
            EnvelopeHandler(
                registry,
                controller,
                request_quota=request_quota,
                request_exempt=request_exempt,
            )
        ),
        Row(
            broker_registration.BrokerRegistrationHandler(controller, cluster_id=cluster_id),
            cluster_action,
            not_controller=broker_registration.error_response,
        ),
        Row(
            broker_heartbeat.BrokerHeartbeatHandler(controller),
            cluster_action,
            not_controller=broker_heartbeat.error_response,
        ),
        Row(
            allocate_producer_ids.AllocateProducerIdsHandler(controller),
            cluster_action,
            not_controller=allocate_producer_ids.error_response,
        ),
    ]
    return [row.handler_to_register() for row in rows]
