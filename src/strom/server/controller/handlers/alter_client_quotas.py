"""AlterClientQuotas (API key 49), v0-v1: set or remove client quotas (KIP-546).

Served by the controller (``strom.controller.quota_control`` validates and writes
``ClientQuotaRecord``s); brokers forward it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from kio.schema.alter_client_quotas.v1 import request as newest
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller.quota_control import QuotaAlteration, QuotaAlterResult, alter_client_quotas
from strom.controller.results import ApiError
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, response_module
from strom.server.api.throttle import NO_THROTTLE
from strom.server.controller.controller_server import OperationRunner

__all__ = ["AlterClientQuotasHandler", "error_response"]

log = logging.getLogger(__name__)


def _alterations(body: object) -> tuple[list[QuotaAlteration], bool]:
    request = as_newest(body, newest.AlterClientQuotasRequest)
    alterations = [
        QuotaAlteration(
            entity=tuple((part.entity_type, part.entity_name) for part in entry.entity),
            ops=tuple((op.key, None if op.remove else float(op.value)) for op in entry.ops),
        )
        for entry in request.entries
    ]
    return alterations, request.validate_only


class AlterClientQuotasHandler:
    api_key: Final = ApiKey.ALTER_CLIENT_QUOTAS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.ALTER_CLIENT_QUOTAS]

    def __init__(self, controller: OperationRunner) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        alterations, validate_only = _alterations(context.body)
        results = await self._controller.run(
            "alter client quotas",
            lambda image: alter_client_quotas(image, alterations, validate_only=validate_only),
        )
        for result in results:
            if result.error.is_success and not validate_only:
                log.info(
                    "client quotas of %s altered by %s", dict(result.entity), context.principal
                )
        return _response(context.api_version, results)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    alterations, _ = _alterations(context.body)
    results = [QuotaAlterResult(a.entity, ApiError(code, None)) for a in alterations]
    return _response(context.api_version, results)


def _response(version: int, results: Sequence[QuotaAlterResult]) -> ResponsePayload:
    schema = response_module(ApiKey.ALTER_CLIENT_QUOTAS, version)
    response: ResponsePayload = schema.AlterClientQuotasResponse(
        throttle_time=NO_THROTTLE,
        entries=tuple(
            schema.EntryData(
                error_code=result.error.code,
                error_message=result.error.message,
                entity=tuple(
                    schema.EntityData(entity_type=kind, entity_name=name)
                    for kind, name in result.entity
                ),
            )
            for result in results
        ),
    )
    return response
