"""The request quota's accounting (``strom.server.network.request_time``): only the time a
handler runs counts, not the time it waits; the throttle is recorded once, mutes the client and
goes into the answer's ``throttle_time_ms``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar, cast

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.list_groups.v4.request import ListGroupsRequest
from kio.schema.list_groups.v4.response import ListGroupsResponse
from kio.schema.write_txn_markers.v1.request import WriteTxnMarkersRequest
from kio.static.protocol import RequestPayload

from strom.common.clock import ManualClock
from strom.metadata.client_quotas import CLIENT_ID, REQUEST_PERCENTAGE, ClientQuotasImage
from strom.metadata.client_quotas import quota_entity as entity
from strom.protocol.api import Request, make_request_header
from strom.server.api.handler_table import NO_RESPONSE, RequestContext
from strom.server.api.response import Response
from strom.server.api.throttle import throttle_field, throttle_of
from strom.server.auth.authorizer import Authorizer
from strom.server.network.request_time import CLUSTER_ACTIONS, RequestTime, request_time
from strom.server.quotas.client_quotas import ClientQuotaManager

T = TypeVar("T")
MS = 1_000_000


class Nanos:
    """A nanosecond counter moved by hand."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def run(scenario: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def context(
    client_id: str,
    mutes: list[int],
    body: RequestPayload | None = None,
    authorizer: Authorizer | None = None,
) -> RequestContext:
    body = ListGroupsRequest(states_filter=()) if body is None else body
    header = make_request_header(body, correlation_id=7, client_id=client_id)
    return RequestContext(
        request=Request(header=header, body=body),
        client_address="127.0.0.1:1",
        connection_id="c",
        authorizer=authorizer,
        throttle=mutes.append,
    )


class DeniesEverything:
    def authorize(self, *args: object, audit: bool = True) -> bool:
        return False


def request_quota(percent: float) -> ClientQuotaManager:
    quota = ClientQuotaManager(
        REQUEST_PERCENTAGE, ManualClock(), windows=11, window_ms=1000, max_throttle_ms=1000
    )
    quota.configure(ClientQuotasImage({entity({CLIENT_ID: "busy"}): {REQUEST_PERCENTAGE: percent}}))
    return quota


def answer(throttle_ms: int = 0) -> ListGroupsResponse:
    return ListGroupsResponse(
        throttle_time=throttle_field(throttle_ms), error_code=ErrorCode.none, groups=()
    )


def test_what_is_counted_and_what_is_exempt() -> None:
    quota, markers = request_quota(1.0), WriteTxnMarkersRequest(markers=())
    assert request_time(quota, context("busy", []), CLUSTER_ACTIONS) is not None
    assert request_time(quota, context("busy", [], markers), CLUSTER_ACTIONS) is None
    refused = cast(Authorizer, DeniesEverything())  # may not CLUSTER_ACTION: counted (Kafka)
    assert request_time(quota, context("busy", [], markers, refused), CLUSTER_ACTIONS) is not None
    quota.configure(ClientQuotasImage())  # no request_percentage anywhere
    assert request_time(quota, context("busy", []), CLUSTER_ACTIONS) is None


def test_the_time_a_handler_runs_counts_and_the_time_it_waits_does_not() -> None:
    nanos = Nanos()
    timer = RequestTime(request_quota(1.0), context("busy", []), clock_ns=nanos)

    async def handler() -> str:
        nanos.now += 3 * MS  # working
        await asyncio.sleep(0.01)  # waiting: another task moves the clock meanwhile
        nanos.now += 2 * MS
        return "done"

    async def others() -> None:
        await asyncio.sleep(0.001)
        nanos.now += 100 * MS

    async def scenario() -> str:
        elsewhere = asyncio.create_task(others())
        result = await timer.run(handler())
        await elsewhere
        return result

    assert run(scenario) == "done"
    assert timer.running_ns == 5 * MS


def test_the_throttle_is_recorded_once_mutes_and_goes_into_the_answer() -> None:
    nanos, mutes = Nanos(), list[int]()
    timer = RequestTime(request_quota(0.01), context("busy", mutes), clock_ns=nanos)

    async def handler() -> ListGroupsResponse:
        nanos.now += 50 * MS  # 5 percent-seconds over a fresh 10 s window: 0.5%, 50 times 0.01%
        return answer()

    result = run(lambda: timer.serve(handler()))
    assert throttle_of(result) == 1000  # at most one window
    assert mutes == [1000]
    assert timer.context.request_throttle() == 1000
    assert mutes == [1000], "recorded once"
    assert throttle_of(timer.answer(answer(3000))) == 3000  # a longer throttle stays
    assert timer.answer(NO_RESPONSE) is NO_RESPONSE
    version_0 = ApiVersionsResponse(error_code=ErrorCode.none, api_keys=())
    assert timer.answer(version_0) is version_0  # no throttle_time_ms field to set
    encoded = Response.of(b"pre-encoded")
    assert timer.answer(encoded) is encoded


@pytest.mark.parametrize("client_id", ["busy", "free"])
def test_a_client_within_its_quota_or_without_one_is_not_throttled(client_id: str) -> None:
    nanos, mutes = Nanos(), list[int]()
    timer = RequestTime(request_quota(50.0), context(client_id, mutes), clock_ns=nanos)

    async def handler() -> ListGroupsResponse:
        nanos.now += 50 * MS
        return answer()

    result = run(lambda: timer.serve(handler()))
    assert throttle_of(result) == 0
    assert mutes == [0]


def test_cancellation_and_errors_go_through_to_the_handler() -> None:
    timer = RequestTime(request_quota(1.0), context("busy", []))
    seen: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def fails() -> None:
        await asyncio.sleep(0)
        raise ValueError("broken")

    async def timed_wait() -> None:
        await timer.run(waits())

    async def scenario() -> None:
        task = asyncio.create_task(timed_wait())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(ValueError, match="broken"):
            await timer.run(fails())

    run(scenario)
    assert seen == ["cancelled"]
