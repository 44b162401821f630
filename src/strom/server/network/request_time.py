"""The request quota (``request_percentage``, Kafka's ``ClientRequestQuotaManager``, KIP-124)
on an event loop: the time spent handling each client's requests, in percent of one thread.

**What is measured.** Kafka counts the time a request-handler thread spends on a request
(from taking it off the queue to building the answer, waits in a purgatory excluded) and the
network thread's time on it. strom serves every request on one asyncio loop, where a handler's
wall time is mostly other requests' work while it awaits. So :class:`RequestTime` counts the
time the handler's coroutine is *running*: each step of it on the loop, from being resumed to
its next suspension, measured with ``time.perf_counter_ns`` around the coroutine's ``send``.
That is the loop's time this request took (its checks, its reads and appends, building its
answer), and none of the time it waits (a long poll, an acks=all produce, a
forwarded request's round trip, the controller's commit). Work the handler hands to other tasks
is not counted; decoding the frame before the handler starts and writing the answer after it
are not either.

**How it is enforced** (as Kafka): the time, as percent-seconds (``ns * 100 / 1e9``), is
recorded in the client's sampled rate of the ``request_percentage`` quota when the answer is
built; over the quota, the answer carries the throttle time (at most one quota window) in its
``throttle_time_ms`` — the largest of the quotas' throttles when a byte rate or the mutation
rate throttles it too — and the connection is muted for it (KIP-219).

**Exempt** (:func:`request_time`): the cluster actions (:data:`CLUSTER_ACTIONS`, from a
principal allowed CLUSTER_ACTION), a controller's Raft fetches (:data:`CONTROLLER_EXEMPT`), a
follower's Fetch, an acks=0 Produce (no answer), and what a SASL connection serves before its
client has authenticated (the handshake and tokens, ApiVersions).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, Final, TypeVar

from strom.protocol.api import ApiKey
from strom.security.acls import AclOperation
from strom.server.api.handler_table import NO_RESPONSE, HandlerResult, RequestContext
from strom.server.api.response import Response
from strom.server.api.throttle import throttle_field, throttle_of
from strom.server.quotas.client_quotas import ClientQuotaManager

__all__ = ["CLUSTER_ACTIONS", "CONTROLLER_EXEMPT", "RequestTime", "request_time"]

T = TypeVar("T")

CLUSTER_ACTIONS: Final = frozenset(
    {
        ApiKey.WRITE_TXN_MARKERS,
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.DESCRIBE_QUORUM,
        ApiKey.ALTER_PARTITION,
        ApiKey.ENVELOPE,
        ApiKey.BROKER_REGISTRATION,
        ApiKey.BROKER_HEARTBEAT,
        ApiKey.ALLOCATE_PRODUCER_IDS,
    }
)
"""Kafka's ``ApiKeys.clusterAction`` APIs that strom knows, but UpdateFeatures (which Kafka
throttles): what brokers and controllers send each other."""
CONTROLLER_EXEMPT: Final = CLUSTER_ACTIONS | {ApiKey.FETCH, ApiKey.FETCH_SNAPSHOT}
"""What a controller does not count: the cluster actions and the quorum's own fetches (Kafka's
``ControllerApis`` answers every Raft request exempt)."""

_NANOS_TO_PERCENT: Final = 100 / 1e9
"""Kafka's ``NanosToPercentagePerSecond``."""


def request_time(
    quota: ClientQuotaManager, context: RequestContext, exempt: frozenset[ApiKey]
) -> RequestTime | None:
    """The request's time, to be counted; None when it is not: no ``request_percentage`` in
    the image, or an API of ``exempt`` from a principal allowed CLUSTER_ACTION (Kafka throttles
    a cluster action it refuses)."""
    if not quota.enabled:
        return None
    if context.api_key in exempt and context.authorize(AclOperation.CLUSTER_ACTION, audit=False):
        return None
    return RequestTime(quota, context)


class RequestTime:
    """The running time of one request's handler, and its throttle under the client's
    ``request_percentage``."""

    def __init__(
        self,
        quota: ClientQuotaManager,
        context: RequestContext,
        *,
        clock_ns: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        """``context``: the request's, whose ``throttle`` mutes the client."""
        self._quota = quota
        self._client = context
        self._clock_ns = clock_ns
        self.context: Final = dataclasses.replace(context, request_throttle=self.throttle_ms)
        """The request's context for its handler (``request_throttle`` is :meth:`throttle_ms`)."""
        self.running_ns = 0
        """The time the handler has been running so far."""
        self._throttle_ms: int | None = None

    def run(self, work: Coroutine[Any, Any, T]) -> Awaitable[T]:
        """``work``, awaited, with each of its steps timed."""
        return _Timed(work, self, self._clock_ns)

    async def serve(self, work: Coroutine[Any, Any, HandlerResult]) -> HandlerResult:
        """The handler's answer (``work``, given :attr:`context`), timed and throttled."""
        return self.answer(await self.run(work))

    def throttle_ms(self) -> int:
        """Record the running time so far against the client's quota and mute the connection
        for the throttle; the throttle time (0: within the quota). Later calls record nothing
        and answer the same."""
        if self._throttle_ms is None:
            context = self._client
            used = self.running_ns * _NANOS_TO_PERCENT
            self._throttle_ms = self._quota.record(context.user, context.client_id, used)
            context.throttle(self._throttle_ms)
        return self._throttle_ms

    def answer(self, result: HandlerResult) -> HandlerResult:
        """The handler's answer with the request's throttle in its ``throttle_time_ms`` (when
        larger than the one there). A pre-encoded ``Response`` is left as it is: its handler
        put the throttle in (Produce, Fetch) or was exempt (a follower's Fetch)."""
        if result is NO_RESPONSE or isinstance(result, Response):
            return result
        throttle_ms = self.throttle_ms()
        if throttle_ms <= throttle_of(result) or not hasattr(result, "throttle_time"):
            return result
        return dataclasses.replace(result, throttle_time=throttle_field(throttle_ms))


class _Timed(Awaitable[T]):
    """Awaits a coroutine step by step, adding the time of each step to a ``RequestTime``."""

    def __init__(
        self, work: Coroutine[Any, Any, T], into: RequestTime, clock_ns: Callable[[], int]
    ) -> None:
        self._work = work
        self._into = into
        self._clock_ns = clock_ns

    def __await__(self) -> Generator[Any, Any, T]:
        work, into, clock_ns = self._work, self._into, self._clock_ns
        value: Any = None
        error: BaseException | None = None
        while True:
            start = clock_ns()
            try:
                yielded = work.send(value) if error is None else work.throw(error)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            finally:
                into.running_ns += clock_ns() - start
            try:
                value, error = (yield yielded), None
            except BaseException as thrown:  # cancellation and the like: into the coroutine
                value, error = None, thrown
