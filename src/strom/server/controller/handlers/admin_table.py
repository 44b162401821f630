"""The controller's admin APIs, as one table (the rest of Kafka's ``ControllerApis``): built on
the first request to one of them (``HandlerTable.register_lazy``), so that this module, the
handlers' modules and their kio schemas load then, not when a node starts."""

from __future__ import annotations

from collections.abc import Callable

from strom.metadata import MetadataImage
from strom.security.acls import AclOperation
from strom.server.api.handler_table import Handler
from strom.server.configs.config_entries import ConfigDescriber
from strom.server.controller.controller_server import ControllerServer
from strom.server.controller.handlers import acls, alter_client_quotas, alter_user_scram_credentials
from strom.server.controller.handlers.alter_configs import AlterConfigsHandler
from strom.server.controller.handlers.controller_table import Row
from strom.server.controller.handlers.create_partitions import CreatePartitionsHandler
from strom.server.controller.handlers.create_topics import CreateTopicsHandler
from strom.server.controller.handlers.delete_topics import DeleteTopicsHandler
from strom.server.controller.handlers.elect_leaders import ElectLeadersHandler
from strom.server.controller.handlers.incremental_alter_configs import (
    IncrementalAlterConfigsHandler,
)
from strom.server.controller.handlers.partition_reassignments import (
    AlterPartitionReassignmentsHandler,
    ListPartitionReassignmentsHandler,
)
from strom.server.controller.handlers.update_features import UpdateFeaturesHandler
from strom.server.quotas.client_quotas import ControllerMutationQuotaManager

__all__ = ["admin_handlers"]


def admin_handlers(
    controller: ControllerServer,
    *,
    describer: ConfigDescriber,
    mutations: ControllerMutationQuotaManager,
    image: Callable[[], MetadataImage],
) -> list[Handler]:
    """The handlers of :data:`ADMIN_APIS`, one each."""
    alter, describe = AclOperation.ALTER, AclOperation.DESCRIBE
    rows = [
        Row(CreateTopicsHandler(controller, describer, quotas=mutations)),
        Row(DeleteTopicsHandler(controller, quotas=mutations)),
        Row(CreatePartitionsHandler(controller, quotas=mutations)),
        Row(ElectLeadersHandler(controller), alter),
        Row(UpdateFeaturesHandler(controller), alter),
        Row(AlterPartitionReassignmentsHandler(controller), alter),
        Row(ListPartitionReassignmentsHandler(controller), describe),
        Row(AlterConfigsHandler(controller)),
        Row(IncrementalAlterConfigsHandler(controller)),
        Row(
            alter_user_scram_credentials.AlterUserScramCredentialsHandler(controller),
            alter,
            refuse=alter_user_scram_credentials.error_response,
            not_controller=alter_user_scram_credentials.error_response,
        ),
        Row(
            alter_client_quotas.AlterClientQuotasHandler(controller),
            AclOperation.ALTER_CONFIGS,
            refuse=alter_client_quotas.error_response,
            not_controller=alter_client_quotas.error_response,
        ),
        Row(acls.CreateAclsHandler(controller), not_controller=acls.create_error_response),
        Row(acls.DeleteAclsHandler(controller), not_controller=acls.delete_error_response),
        Row(acls.DescribeAclsHandler(image)),
    ]
    return [row.handler_to_register() for row in rows]
