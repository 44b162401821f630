"""IncrementalAlterConfigs (API key 44), v0 to v1: SET, DELETE, APPEND and SUBTRACT per setting.

The controller applies the operations to the resource's current overrides and validates the
result as a whole (INVALID_CONFIG for unknown settings and bad values, INVALID_REQUEST for a
setting named twice or an unknown operation); new topic settings reach the partition logs as
soon as the change is committed. The steps it shares with AlterConfigs (the ACL check, the log
lines, the refusals) are :mod:`.config_changes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

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
from strom.server.api.kio_entities import as_newest
from strom.server.api.throttle import NO_THROTTLE
from strom.server.controller.handlers.config_changes import (
    ConfigsAlterHandler,
    resource_responses,
)

__all__ = ["IncrementalAlterConfigsHandler", "error_response"]


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


class IncrementalAlterConfigsHandler(ConfigsAlterHandler[IncrementalAlterConfigsRequest]):
    api_key = ApiKey.INCREMENTAL_ALTER_CONFIGS
    versions = KAFKA_BROKER_VERSIONS[ApiKey.INCREMENTAL_ALTER_CONFIGS]

    def __init__(self, controller: IncrementalConfigsAlterer) -> None:
        self._controller = controller

    @staticmethod
    def parse(body: object) -> IncrementalAlterConfigsRequest:
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

    async def alter(self, request: IncrementalAlterConfigsRequest) -> list[AlterConfigsResult]:
        return await self._controller.incremental_alter_configs(request)

    @staticmethod
    def describe(request: IncrementalAlterConfigsRequest) -> Mapping[tuple[int, str], str]:
        return {
            (r.resource_type, r.resource_name): ", ".join(_describe(c) for c in r.configs)
            for r in request.resources
        }

    @staticmethod
    def answer(results: Sequence[AlterConfigsResult]) -> ResponsePayload:
        return latest.IncrementalAlterConfigsResponse(
            throttle_time=NO_THROTTLE,
            responses=resource_responses(latest.AlterConfigsResourceResponse, results),
        )


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """Every resource of the request refused with ``code`` (the controller was not reached)."""
    return IncrementalAlterConfigsHandler.refusal(context, code)
