"""What the group handlers share: the coordinator runtime, requests as the newest version's
classes (what the core takes), and the client's host as Kafka reports it."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import response_type
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import build, convert
from strom.server.api.throttle import NO_THROTTLE
from strom.server.coordinator.group_coordinator_runtime import GroupCoordinatorRuntime

__all__ = [
    "GroupHandler",
    "OffsetCommitTopic",
    "client_host",
    "group_refused",
    "newest_request",
    "split_commit",
]

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


class _OffsetCommitPartition(Protocol):
    @property
    def partition_index(self) -> i32: ...


class OffsetCommitTopic(Protocol):
    """A topic of an OffsetCommit or TxnOffsetCommit request."""

    @property
    def name(self) -> str: ...

    @property
    def partitions(self) -> tuple[_OffsetCommitPartition, ...]: ...


CommitTopicT = TypeVar("CommitTopicT", bound=OffsetCommitTopic)


def split_commit(
    context: RequestContext,
    group_id: str,
    topics: tuple[CommitTopicT, ...],
    *,
    transactional_id: str | None = None,
) -> tuple[tuple[CommitTopicT, ...], list[tuple[str, list[i32], ErrorCode]]]:
    """An offset commit's topics it may commit, and the others' (topic, partitions, error), as
    Kafka checks them: WRITE on the transactional id, READ on the group, READ on each topic."""
    if context.authorizer is None:
        return topics, []
    code: ErrorCode | None = None
    if transactional_id is not None and not context.authorize(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        code = ErrorCode.transactional_id_authorization_failed
    elif not context.authorize(AclOperation.READ, ResourceType.GROUP, group_id):
        code = ErrorCode.group_authorization_failed
    allowed: list[CommitTopicT] = []
    denied: list[tuple[str, list[i32], ErrorCode]] = []
    for topic in topics:
        refused = code
        if refused is None and not context.authorize(
            AclOperation.READ, ResourceType.TOPIC, topic.name
        ):
            refused = ErrorCode.topic_authorization_failed
        if refused is None:
            allowed.append(topic)
        else:
            denied.append((topic.name, [p.partition_index for p in topic.partitions], refused))
    return tuple(allowed), denied


class GroupHandler:
    """Base of the group APIs' handlers: they all talk to the coordinator runtime."""

    def __init__(self, runtime: GroupCoordinatorRuntime) -> None:
        self._runtime = runtime
        self._coordinator = runtime.coordinator
