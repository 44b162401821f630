"""DescribeClientQuotas (API key 48), v0-v1: the client quotas a filter matches, from the
broker's metadata image (``strom.metadata.client_quotas.describe_client_quotas``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, cast

from kio.schema.describe_client_quotas.v1 import request as newest
from kio.static.primitive import f64
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, KafkaError
from strom.metadata.client_quotas import describe_client_quotas
from strom.metadata.image import MetadataImage
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, response_module
from strom.server.api.throttle import NO_THROTTLE

__all__ = ["DescribeClientQuotasHandler"]


class DescribeClientQuotasHandler:
    api_key: Final = ApiKey.DESCRIBE_CLIENT_QUOTAS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DESCRIBE_CLIENT_QUOTAS]

    def __init__(self, image: Callable[[], MetadataImage]) -> None:
        self._image = image

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.DescribeClientQuotasRequest)
        schema: Any = response_module(ApiKey.DESCRIBE_CLIENT_QUOTAS, context.api_version)
        components = [(c.entity_type, int(c.match_type), c.match) for c in request.components]
        try:
            found = describe_client_quotas(
                self._image().client_quotas, components, strict=request.strict
            )
        except KafkaError as error:
            response: ResponsePayload = schema.DescribeClientQuotasResponse(
                throttle_time=NO_THROTTLE,
                error_code=error.error_code,
                error_message=error.message,
                entries=None,
            )
            return response
        return cast(
            ResponsePayload,
            schema.DescribeClientQuotasResponse(
                throttle_time=NO_THROTTLE,
                error_code=ErrorCode.none,
                error_message=None,
                entries=tuple(
                    schema.EntryData(
                        entity=tuple(
                            schema.EntityData(entity_type=kind, entity_name=name)
                            for kind, name in entity
                        ),
                        values=tuple(
                            schema.ValueData(key=key, value=f64(value))
                            for key, value in sorted(quotas.items())
                        ),
                    )
                    for entity, quotas in found
                ),
            ),
        )
