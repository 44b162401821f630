"""AlterConfigs (API key 33), v0 to v2: replace a resource's whole set of config overrides.

Kafka's legacy API: every override of the resource that the request does not list is removed.
The controller validates (unknown settings and bad values are INVALID_CONFIG, a missing topic
UNKNOWN_TOPIC_OR_PARTITION) and writes the differences; the log publisher applies new topic
settings to the partition logs at once. The steps it shares with IncrementalAlterConfigs (the
ACL check, the log lines, the refusals) are :mod:`.config_changes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from kio.schema.alter_configs.v2 import request as newest
from kio.schema.alter_configs.v2 import response as latest
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller import (
    AlterConfigsRequest,
    AlterConfigsResource,
    AlterConfigsResult,
    ConfigEntry,
)
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest
from strom.server.api.throttle import NO_THROTTLE
from strom.server.controller.handlers.config_changes import (
    ConfigsAlterHandler,
    resource_responses,
)

__all__ = ["AlterConfigsHandler", "error_response"]


class ConfigsAlterer(Protocol):
    """What AlterConfigs needs of the controller."""

    async def alter_configs(self, request: AlterConfigsRequest) -> list[AlterConfigsResult]:
        """AlterConfigs over the quorum; raises NotControllerError."""
        ...


class AlterConfigsHandler(ConfigsAlterHandler[AlterConfigsRequest]):
    api_key = ApiKey.ALTER_CONFIGS
    versions = KAFKA_BROKER_VERSIONS[ApiKey.ALTER_CONFIGS]

    def __init__(self, controller: ConfigsAlterer) -> None:
        self._controller = controller

    @staticmethod
    def parse(body: object) -> AlterConfigsRequest:
        request = as_newest(body, newest.AlterConfigsRequest)
        return AlterConfigsRequest(
            resources=[
                AlterConfigsResource(
                    resource_type=int(resource.resource_type),
                    resource_name=resource.resource_name,
                    configs=[ConfigEntry(c.name, c.value) for c in resource.configs],
                )
                for resource in request.resources
            ],
            validate_only=request.validate_only,
        )

    async def alter(self, request: AlterConfigsRequest) -> list[AlterConfigsResult]:
        return await self._controller.alter_configs(request)

    @staticmethod
    def describe(request: AlterConfigsRequest) -> Mapping[tuple[int, str], str]:
        return {
            (r.resource_type, r.resource_name): "replaced with "
            + (", ".join(f"{c.name}={c.value}" for c in r.configs) or "no overrides")
            for r in request.resources
        }

    @staticmethod
    def answer(results: Sequence[AlterConfigsResult]) -> ResponsePayload:
        return latest.AlterConfigsResponse(
            throttle_time=NO_THROTTLE,
            responses=resource_responses(latest.AlterConfigsResourceResponse, results),
        )


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """Every resource of the request refused with ``code`` (the controller was not reached)."""
    return AlterConfigsHandler.refusal(context, code)
