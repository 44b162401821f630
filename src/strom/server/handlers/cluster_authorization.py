"""APIs that need one operation on the cluster, as Kafka's ``KafkaApis`` and ``ControllerApis``
check them: the inter-node APIs (broker registration and heartbeats, AlterPartition, producer id
blocks, the Raft quorum's requests, WriteTxnMarkers) need CLUSTER_ACTION, which brokers and
controllers have as ``super.users``; admin APIs ALTER or DESCRIBE. Without it the request is
answered with CLUSTER_AUTHORIZATION_FAILED and nothing else (Kafka's ``getErrorResponse``).
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Callable
from typing import Any, Final

from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import response_type
from strom.security.acls import AclOperation
from strom.server.api.handler_table import Handler, HandlerResult, RequestContext
from strom.server.api.throttle import NO_THROTTLE

__all__ = ["ClusterAuthorized", "refusal"]

_EMPTY: Final[dict[str, Any]] = {
    "bool": False,
    "bytes": b"",
    "datetime_i64": None,
    "float64": 0.0,
    "int8": -1,
    "int16": -1,
    "int32": -1,
    "int64": -1,
    "uint16": 0,
    "records": None,
    "string": "",
    "timedelta_i32": NO_THROTTLE,
    "timedelta_i64": datetime.timedelta(0),
    "uuid": uuid.UUID(int=0),
}


def refusal(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """The request's response of its version with ``code`` as its error and nothing else:
    required arrays empty, other required fields -1, "" or false."""
    kind = response_type(context.api_key, context.api_version)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(kind):
        if field.name == "error_code":
            values[field.name] = code
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            kafka_type = field.metadata.get("kafka_type")
            values[field.name] = () if kafka_type is None else _EMPTY[kafka_type]
    response: ResponsePayload = kind(**values)
    return response


class ClusterAuthorized:
    """``handler``, served only to principals allowed ``operation`` on the cluster."""

    def __init__(
        self,
        handler: Handler,
        operation: AclOperation,
        *,
        refuse: Callable[[RequestContext, ErrorCode], ResponsePayload] = refusal,
    ) -> None:
        """``refuse``: the API's answer with every item failed (an API without a top-level
        error code); :func:`refusal` by default."""
        self.api_key: Final = handler.api_key
        self.versions: Final = handler.versions
        self._handler = handler
        self._operation = operation
        self._refuse = refuse

    async def handle(self, context: RequestContext) -> HandlerResult:
        if context.authorizer is None or context.authorize(self._operation):
            return await self._handler.handle(context)
        return self._refuse(context, ErrorCode.cluster_authorization_failed)
