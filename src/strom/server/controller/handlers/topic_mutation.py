"""The steps CreateTopics, CreatePartitions and DeleteTopics share (Kafka's ``ControllerApis``
with a ``ControllerMutationQuota``).

The request is parsed, the topics the principal may not change are refused, the others go to
the controller with the client's ``controller_mutation_rate`` (KIP-599) to charge, strictly
from a version on (older clients do not know THROTTLING_QUOTA_EXCEEDED: theirs are accepted,
then throttled); each result is logged, and the answer carries what the quota used as its
throttle time, the client's connection muted for it (a forwarded request's by the broker that
forwarded it). Each API names only what differs: its parsing, ACL check, controller call, log
line and response.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import ClassVar, Generic, TypeVar

from kio.static.primitive import i32Timedelta
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import ApiKey, VersionRange
from strom.server.api.handler_table import RequestContext
from strom.server.api.throttle import NO_THROTTLE, throttle_field
from strom.server.quotas.client_quotas import (
    ControllerMutationQuota,
    ControllerMutationQuotaManager,
)

__all__ = ["TopicMutationHandler"]

RequestT = TypeVar("RequestT")
ResultT = TypeVar("ResultT")


class TopicMutationHandler(abc.ABC, Generic[RequestT, ResultT]):
    """A topic mutation's handler; a subclass names what differs."""

    api_key: ClassVar[ApiKey]
    versions: ClassVar[VersionRange]
    strict_quota_since: ClassVar[int]
    """The first version whose quota is strict."""

    def __init__(self, *, quotas: ControllerMutationQuotaManager) -> None:
        self._quotas = quotas

    @staticmethod
    @abc.abstractmethod
    def parse(body: object) -> RequestT:
        """The controller's request (without its quota), from a body of any version."""

    @abc.abstractmethod
    def authorized(
        self, context: RequestContext, request: RequestT
    ) -> tuple[RequestT, list[ResultT]]:
        """``request`` with only the topics the principal may change, and the others' results
        (TOPIC_AUTHORIZATION_FAILED)."""

    @abc.abstractmethod
    async def mutate(self, request: RequestT, quota: ControllerMutationQuota) -> list[ResultT]:
        """The controller's results for ``request``, its changes charged to ``quota``."""

    @abc.abstractmethod
    def log_result(self, result: ResultT, *, request: RequestT, client: str) -> None:
        """One log line: what changed, or why not."""

    @staticmethod
    @abc.abstractmethod
    def refused(request: RequestT, code: ErrorCode) -> list[ResultT]:
        """Every topic of ``request`` refused with ``code``."""

    @staticmethod
    @abc.abstractmethod
    def response(
        context: RequestContext, results: Sequence[ResultT], throttle_time: i32Timedelta
    ) -> ResponsePayload:
        """The answer, in the request's version."""

    def answer(
        self, context: RequestContext, results: Sequence[ResultT], throttle_time: i32Timedelta
    ) -> ResponsePayload:
        """The answer to a request the controller reached: :meth:`response`, unless the API
        adds what only then is known."""
        return self.response(context, results, throttle_time)

    async def handle(self, context: RequestContext) -> ResponsePayload:
        strict = context.api_version >= self.strict_quota_since
        quota = self._quotas.new_quota(context.user, context.client_id, strict=strict)
        request: RequestT  # declared: mypy cannot type an unpacking that an await follows
        denied: list[ResultT]
        request, denied = self.authorized(context, self.parse(context.body))
        results = [*await self.mutate(request, quota), *denied]
        for result in results:
            self.log_result(result, request=request, client=context.client_address)
        throttle_ms = quota.throttle_time_ms()
        context.throttle(throttle_ms)
        return self.answer(context, results, throttle_field(throttle_ms))

    @classmethod
    def refusal(cls, context: RequestContext, code: ErrorCode) -> ResponsePayload:
        """Every topic of the request refused with ``code`` (the controller was not reached)."""
        return cls.response(context, cls.refused(cls.parse(context.body), code), NO_THROTTLE)
