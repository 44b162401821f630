"""IncrementalAlterConfigs (API key 44), v0 to v1: SET, DELETE, APPEND and SUBTRACT per setting.

The controller applies the operations to the resource's current overrides and validates the
result as a whole (INVALID_CONFIG for unknown settings and bad values, INVALID_REQUEST for a
setting named twice or an unknown operation); new topic settings reach the partition logs as
soon as the change is committed.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Final, Protocol

from kio.schema.incremental_alter_configs.v1 import request as newest
from kio.schema.incremental_alter_configs.v1 import response as latest
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller import (
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsResult,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version
from strom.server.api.throttle import NO_THROTTLE
from strom.server.handlers.common import (
    alter_configs_results,
    log_config_changes,
    refused_config_results,
    split_config_resources,
)

__all__ = [
    "IncrementalAlterConfigsHandler",
    "error_response",
    "parse_incremental_alter_configs",
]

log = logging.getLogger(__name__)


def parse_incremental_alter_configs(body: object) -> IncrementalAlterConfigsRequest:
    request = as_newest(body, newest.IncrementalAlterConfigsRequest)
    return IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsResource(
                resource_type=int(resource.resource_type),
                resource_name=resource.resource_name,
                configs=[
                    AlterableConfig(c.name, c.value, int(c.config_operation))
                    for c in resource.configs
                ],
            )
            for resource in request.resources
        ],
        validate_only=request.validate_only,
    )


def _describe(config: AlterableConfig) -> str:
    try:
        op = AlterConfigOp(config.op).name
    except ValueError:
        op = f"operation {config.op}"
    return f"{op} {config.name}" + ("" if config.value is None else f"={config.value}")


class IncrementalConfigsAlterer(Protocol):
    """What IncrementalAlterConfigs needs of the controller."""

    async def incremental_alter_configs(
        self, request: IncrementalAlterConfigsRequest
    ) -> list[AlterConfigsResult]:
        """IncrementalAlterConfigs over the quorum; raises NotControllerError."""
        ...


class IncrementalAlterConfigsHandler:
    api_key: Final = ApiKey.INCREMENTAL_ALTER_CONFIGS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.INCREMENTAL_ALTER_CONFIGS]

    def __init__(self, controller: IncrementalConfigsAlterer) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = parse_incremental_alter_configs(context.body)
        allowed, refused = split_config_resources(context, request.resources)
        request = dataclasses.replace(request, resources=allowed)
        results = [*await self._controller.incremental_alter_configs(request), *refused]
        log_config_changes(
            log,
            api="IncrementalAlterConfigs",
            client=context.client_address,
            results=results,
            changes={
                (r.resource_type, r.resource_name): ", ".join(_describe(c) for c in r.configs)
                for r in request.resources
            },
            validate_only=request.validate_only,
        )
        return _response(context, results)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """Every resource of the request refused with ``code`` (the controller was not reached)."""
    return _response(
        context,
        refused_config_results(parse_incremental_alter_configs(context.body).resources, code),
    )


def _response(context: RequestContext, results: list[AlterConfigsResult]) -> ResponsePayload:
    response = latest.IncrementalAlterConfigsResponse(
        throttle_time=NO_THROTTLE,
        responses=alter_configs_results(latest.AlterConfigsResourceResponse, results),
    )
    return for_version(response, context.api_version)
