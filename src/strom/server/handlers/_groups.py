"""What the group handlers share: the coordinator runtime, requests as the newest version's
classes (what the core takes), and the client's host as Kafka reports it."""

from __future__ import annotations

from typing import Any, TypeVar

from strom.server.group_coordinator_runtime import GroupCoordinatorRuntime
from strom.server.handlers._schema import convert
from strom.server.handlers.registry import RequestContext

__all__ = ["GroupHandler", "client_host", "newest_request"]

T = TypeVar("T")


def newest_request(context: RequestContext, newest: type[T], **extra: Any) -> T:
    """The request body as ``newest`` (fields older versions lack take their defaults, or
    ``extra``)."""
    return convert(context.body, newest, extra={k: v for k, v in extra.items() if v is not None})


def client_host(context: RequestContext) -> str:
    """``/127.0.0.1``: the client's address as Kafka's group descriptions show it."""
    host = context.client_address.rpartition(":")[0].strip("[]")
    return f"/{host}"


class GroupHandler:
    """Base of the group APIs' handlers: they all talk to the coordinator runtime."""

    def __init__(self, runtime: GroupCoordinatorRuntime) -> None:
        self._runtime = runtime
        self._coordinator = runtime.coordinator
