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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from strom.common import ErrorCode
from strom.metadata import MetadataImage
from strom.protocol.api import ApiKey
from strom.security.acls import AclOperation
from strom.server.api.handler_table import Handler, HandlerResult, HandlerTable, RequestContext
from strom.server.configs.config_entries import ConfigDescriber
from strom.server.controller.controller_server import ControllerServer, NotControllerError
from strom.server.controller.handlers import (
    acls,
    allocate_producer_ids,
    alter_client_quotas,
    alter_user_scram_credentials,
    broker_heartbeat,
    broker_registration,
)
from strom.server.controller.handlers.alter_configs import AlterConfigsHandler
from strom.server.controller.handlers.alter_partition import AlterPartitionHandler
from strom.server.controller.handlers.create_partitions import CreatePartitionsHandler
from strom.server.controller.handlers.create_topics import CreateTopicsHandler
from strom.server.controller.handlers.delete_topics import DeleteTopicsHandler
from strom.server.controller.handlers.elect_leaders import ElectLeadersHandler
from strom.server.controller.handlers.envelope import EnvelopeHandler
from strom.server.controller.handlers.incremental_alter_configs import (
    IncrementalAlterConfigsHandler,
)
from strom.server.controller.handlers.partition_reassignments import (
    AlterPartitionReassignmentsHandler,
    ListPartitionReassignmentsHandler,
)
from strom.server.controller.handlers.update_features import UpdateFeaturesHandler
from strom.server.handlers.cluster_authorization import ClusterAuthorized, refusal
from strom.server.handlers.forwarding import ErrorResponse
from strom.server.quotas.client_quotas import ClientQuotaManager, ControllerMutationQuotaManager

__all__ = ["AnswersNotController", "controller_handlers"]


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
class _Row:
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
    describer: ConfigDescriber,
    mutations: ControllerMutationQuotaManager,
    request_quota: ClientQuotaManager,
    request_exempt: frozenset[ApiKey],
    image: Callable[[], MetadataImage],
) -> list[Handler]:
    """The controller listener's handlers of the controller's own APIs (``registry`` is that
    listener's table, which the Envelope decodes its inner requests with)."""
    alter, describe = AclOperation.ALTER, AclOperation.DESCRIBE
    cluster_action = AclOperation.CLUSTER_ACTION
    rows = [
        _Row(CreateTopicsHandler(controller, describer, quotas=mutations)),
        _Row(DeleteTopicsHandler(controller, quotas=mutations)),
        _Row(CreatePartitionsHandler(controller, quotas=mutations)),
        _Row(ElectLeadersHandler(controller), alter),
        _Row(UpdateFeaturesHandler(controller), alter),
        _Row(AlterPartitionReassignmentsHandler(controller), alter),
        _Row(ListPartitionReassignmentsHandler(controller), describe),
        _Row(AlterConfigsHandler(controller)),
        _Row(AlterPartitionHandler(controller), cluster_action),
        _Row(IncrementalAlterConfigsHandler(controller)),
        _Row(
            EnvelopeHandler(
                registry,
                controller,
                request_quota=request_quota,
                request_exempt=request_exempt,
            )
        ),
        _Row(
            broker_registration.BrokerRegistrationHandler(controller, cluster_id=cluster_id),
            cluster_action,
            not_controller=broker_registration.error_response,
        ),
        _Row(
            broker_heartbeat.BrokerHeartbeatHandler(controller),
            cluster_action,
            not_controller=broker_heartbeat.error_response,
        ),
        _Row(
            allocate_producer_ids.AllocateProducerIdsHandler(controller),
            cluster_action,
            not_controller=allocate_producer_ids.error_response,
        ),
        _Row(
            alter_user_scram_credentials.AlterUserScramCredentialsHandler(controller),
            alter,
            refuse=alter_user_scram_credentials.error_response,
            not_controller=alter_user_scram_credentials.error_response,
        ),
        _Row(
            alter_client_quotas.AlterClientQuotasHandler(controller),
            AclOperation.ALTER_CONFIGS,
            refuse=alter_client_quotas.error_response,
            not_controller=alter_client_quotas.error_response,
        ),
        _Row(acls.CreateAclsHandler(controller), not_controller=acls.create_error_response),
        _Row(acls.DeleteAclsHandler(controller), not_controller=acls.delete_error_response),
        _Row(acls.DescribeAclsHandler(image)),
    ]
    return [row.handler_to_register() for row in rows]
