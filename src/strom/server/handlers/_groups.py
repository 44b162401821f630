"""What the group handlers share: the coordinator runtime, requests as the newest version's
classes (what the core takes), and the client's host as Kafka reports it."""

from __future__ import annotations

from typing import Any, TypeVar

from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import response_type
from strom.security.acls import AclOperation, ResourceType
from strom.server.group_coordinator_runtime import GroupCoordinatorRuntime
from strom.server.handlers._schema import build, convert
from strom.server.handlers.common import NO_THROTTLE
from strom.server.handlers.registry import RequestContext

__all__ = ["GroupHandler", "client_host", "group_refused", "newest_request"]

T = TypeVar("T")


def newest_request(context: RequestContext, newest: type[T], **extra: Any) -> T:
    """The request body as ``newest`` (fields older versions lack take their defaults, or
    ``extra``)."""
    return convert(context.body, newest, extra={k: v for k, v in extra.items() if v is not None})


def client_host(context: RequestContext) -> str:
    """``/127.0.0.1``: the client's address as Kafka's group descriptions show it."""
    host = context.client_address.rpartition(":")[0].strip("[]")
    return f"/{host}"


def group_refused(
    context: RequestContext,
    group_id: str,
    operation: AclOperation = AclOperation.READ,
    **fields: Any,
) -> ResponsePayload | None:
    """Without ``operation`` (READ by default) on the group: the API's answer of the request's
    version with GROUP_AUTHORIZATION_FAILED (``fields`` fill what else it requires)."""
    if context.authorize(operation, ResourceType.GROUP, group_id):
        return None
    response: ResponsePayload = build(
        response_type(context.api_key, context.api_version),
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.group_authorization_failed,
        **fields,
    )
    return response


class GroupHandler:
    """Base of the group APIs' handlers: they all talk to the coordinator runtime."""

    def __init__(self, runtime: GroupCoordinatorRuntime) -> None:
        self._runtime = runtime
        self._coordinator = runtime.coordinator
