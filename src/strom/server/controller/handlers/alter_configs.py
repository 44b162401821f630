"""AlterConfigs (API key 33), v0 to v2: replace a resource's whole set of config overrides.

Kafka's legacy API: every override of the resource that the request does not list is removed.
The controller validates (unknown settings and bad values are INVALID_CONFIG, a missing topic
UNKNOWN_TOPIC_OR_PARTITION) and writes the differences; the log publisher applies new topic
settings to the partition logs at once.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Final, Protocol

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
from strom.server.api.kio_entities import as_newest, for_version
from strom.server.api.throttle import NO_THROTTLE
from strom.server.handlers.common import (
    alter_configs_results,
    log_config_changes,
    refused_config_results,
    split_config_resources,
)

__all__ = ["AlterConfigsHandler", "error_response", "parse_alter_configs"]

log = logging.getLogger(__name__)


def parse_alter_configs(body: object) -> AlterConfigsRequest:
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


class ConfigsAlterer(Protocol):
    """What AlterConfigs needs of the controller."""

    async def alter_configs(self, request: AlterConfigsRequest) -> list[AlterConfigsResult]:
        """AlterConfigs over the quorum; raises NotControllerError."""
        ...


class AlterConfigsHandler:
    api_key: Final = ApiKey.ALTER_CONFIGS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.ALTER_CONFIGS]

    def __init__(self, controller: ConfigsAlterer) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = parse_alter_configs(context.body)
        allowed, refused = split_config_resources(context, request.resources)
        request = dataclasses.replace(request, resources=allowed)
        results = [*await self._controller.alter_configs(request), *refused]
        log_config_changes(
            log,
            api="AlterConfigs",
            client=context.client_address,
            results=results,
            changes={
                (r.resource_type, r.resource_name): "replaced with "
                + (", ".join(f"{c.name}={c.value}" for c in r.configs) or "no overrides")
                for r in request.resources
            },
            validate_only=request.validate_only,
        )
        return _response(context, results)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """Every resource of the request refused with ``code`` (the controller was not reached)."""
    return _response(
        context, refused_config_results(parse_alter_configs(context.body).resources, code)
    )


def _response(context: RequestContext, results: list[AlterConfigsResult]) -> ResponsePayload:
    response = latest.AlterConfigsResponse(
        throttle_time=NO_THROTTLE,
        responses=alter_configs_results(latest.AlterConfigsResourceResponse, results),
    )
    return for_version(response, context.api_version)
