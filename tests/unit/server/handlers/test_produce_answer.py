"""The produce handler's packed answer is what kio encodes for the same outcomes."""

from __future__ import annotations

import pytest

from strom.common import ErrorCode, TopicPartition
from strom.protocol.api import encode_response
from strom.protocol.produce_response import FIRST_VERSION, LAST_VERSION
from strom.server.api.response import Response
from strom.server.handlers.produce import build_response, respond
from strom.server.replica.replica_manager import AppendResult

ORDERS_0, ORDERS_1, AUDIT_0 = (
    TopicPartition("orders", 0),
    TopicPartition("orders", 1),
    TopicPartition("audit", 0),
)
RESULTS = [
    (ORDERS_0, AppendResult(base_offset=40, last_offset=44, log_start_offset=3)),
    (
        ORDERS_1,
        AppendResult(base_offset=7, last_offset=7, log_append_time=1_700_000_000_123),
    ),
    (AUDIT_0, AppendResult.failed(ErrorCode.corrupt_message, "bad CRC", log_start_offset=0)),
]


@pytest.mark.parametrize("version", range(FIRST_VERSION, LAST_VERSION + 1))
@pytest.mark.parametrize(
    "errors",
    [{}, {ORDERS_1: ErrorCode.request_timed_out}, {ORDERS_0: ErrorCode.not_leader_or_follower}],
)
def test_packed_answer_is_kios(version: int, errors: dict[TopicPartition, ErrorCode]) -> None:
    results = [
        (tp, result.acknowledged(errors[tp]) if tp in errors else result) for tp, result in RESULTS
    ]
    packed = respond(17, version, results)
    assert isinstance(packed, Response)
    [part] = packed.parts
    assert isinstance(part, bytes)
    expected = encode_response(correlation_id=17, body=build_response(version, results))
    assert part == expected


def test_record_errors_go_through_kio() -> None:
    failed = AppendResult.failed(
        ErrorCode.invalid_record, "keyless record", ((2, "compacted topic needs a key"),)
    )
    assert not isinstance(respond(1, 9, [(ORDERS_0, failed)]), Response)
