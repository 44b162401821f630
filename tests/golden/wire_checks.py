"""What must hold for every request a real client sent and every answer strom gave it.

- the request decodes with strom's decoder and re-encodes to the same bytes;
- the response decodes at the request's version, to its last byte, and re-encodes identically;
- the response carries no error but those a healthy flow expects (``EXPECTED_ERRORS``);
- offset commit metadata comes back from OffsetFetch exactly as some commit in the flow sent it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode
from wire_recorder import fields_named

from strom.protocol.api import (
    KAFKA_BROKER_VERSIONS,
    ApiKey,
    Request,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_type,
)
from strom.protocol.produce_request import ProduceRequestData, as_kio

EXPECTED_ERRORS: dict[ApiKey, frozenset[ErrorCode]] = {
    # A first JoinGroup (v4+) gets a member id to join with.
    ApiKey.JOIN_GROUP: frozenset({ErrorCode.member_id_required}),
    # A group's coordinator state may still be loading right after the first lookup.
    ApiKey.FIND_COORDINATOR: frozenset({ErrorCode.coordinator_not_available}),
    ApiKey.OFFSET_FETCH: frozenset({ErrorCode.coordinator_load_in_progress}),
    # Metadata asked right after CreateTopics may see the topic without a leader yet.
    ApiKey.METADATA: frozenset({ErrorCode.leader_not_available}),
    # librdkafka's transactional producer polls AddOffsetsToTxn/TxnOffsetCommit until the
    # previous step is done.
    ApiKey.ADD_PARTITIONS_TO_TXN: frozenset({ErrorCode.concurrent_transactions}),
    ApiKey.TXN_OFFSET_COMMIT: frozenset({ErrorCode.concurrent_transactions}),
}

_COMMITS = (ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT)


def check_request(frame: bytes) -> Request:
    """Decode ``frame`` and check that encoding it again gives the same bytes."""
    request = decode_request(frame, versions=KAFKA_BROKER_VERSIONS)
    assert not request.unsupported_version, f"{request}: unsupported version"
    body_end = len(frame) - request.trailing_bytes
    body: Any = request.body
    if isinstance(body, ProduceRequestData):  # read without kio
        body = as_kio(body, request_type(request.api_key, request.api_version))
    encoded = encode_request(header=request.header, body=body)
    assert encoded == frame[:body_end], f"{request}: re-encoding changed the frame"
    return request


def check_response(request: Request, frame: bytes) -> Any:
    """Decode the answer to ``request`` and check that encoding it again gives the same bytes."""
    correlation_id, body = decode_response(
        frame, api_key=request.api_key, api_version=request.api_version
    )
    assert correlation_id == request.correlation_id
    assert encode_response(correlation_id=correlation_id, body=body) == frame, (
        f"{request}: re-encoding the response changed it"
    )
    unexpected = [
        (path, ErrorCode(code).name)
        for path, code in fields_named(body, "error_code")
        if code and ErrorCode(code) not in EXPECTED_ERRORS.get(request.api_key, frozenset())
    ]
    assert not unexpected, f"{request} was answered with {unexpected}"
    return body


def check_exchanges(exchanges: Sequence[tuple[bytes, bytes | None]]) -> set[tuple[ApiKey, int]]:
    """Check every (request, response) pair; return the (API, version) pairs seen."""
    committed: set[str | None] = {None, ""}
    fetched: list[tuple[str, str | None]] = []
    seen: set[tuple[ApiKey, int]] = set()
    for request_frame, response_frame in exchanges:
        request = check_request(request_frame)
        seen.add((request.api_key, request.api_version))
        if request.api_key in _COMMITS:
            committed.update(value for _, value in fields_named(request.body, "committed_metadata"))
        if response_frame is None:
            continue
        response = check_response(request, response_frame)
        if request.api_key == ApiKey.OFFSET_FETCH:
            fetched += [(str(request), value) for _, value in fields_named(response, "metadata")]
    for where, value in fetched:
        assert value in committed, f"{where} answered metadata {value!r}, never committed"
    return seen
