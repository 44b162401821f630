"""``protocol.produce_response``: the packed ProduceResponse is kio's, byte for byte, or None."""

from __future__ import annotations

import datetime
import io
import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from strom.protocol.api import ApiKey, encode_response
from strom.protocol.headers import encode_response_header
from strom.protocol.produce_response import (
    FIRST_VERSION,
    LAST_VERSION,
    encode_produce_response,
)

I32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
TEXT = st.text(max_size=12)
TIMES = st.one_of(
    st.none(),
    st.integers(min_value=0, max_value=2**42).map(
        lambda ms: datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    ),
)


def schema(version: int) -> Any:
    """The module of ProduceResponse ``version`` (its nested classes)."""
    return sys.modules[load_response_schema(ApiKey.PRODUCE, version).__module__]


def kio_bytes(body: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(body))(buffer, body)
    return buffer.getvalue()


@st.composite
def partitions(draw: st.DrawFn, version: int) -> tuple[Any, bool]:
    """A PartitionProduceResponse and whether it uses what the packer leaves to kio."""
    module = schema(version)
    values: dict[str, Any] = {
        "index": draw(I32),
        "error_code": draw(st.sampled_from(list(ErrorCode))),
        "base_offset": draw(I64),
        "log_append_time": draw(TIMES),
    }
    unusual = False
    if version >= 5:
        values["log_start_offset"] = draw(I64)
    if version >= 8:
        values["error_message"] = draw(st.none() | TEXT)
        errors = draw(st.lists(st.integers(min_value=0, max_value=9), max_size=1))
        values["record_errors"] = tuple(
            module.BatchIndexAndErrorMessage(batch_index=index, batch_index_error_message="x")
            for index in errors
        )
        unusual |= bool(errors)
    if version >= 10 and draw(st.booleans()):
        values["current_leader"] = module.LeaderIdAndEpoch(
            leader_id=draw(I32), leader_epoch=draw(I32)
        )
        unusual |= values["current_leader"] != module.LeaderIdAndEpoch()
    return module.PartitionProduceResponse(**values), unusual


@st.composite
def responses(draw: st.DrawFn) -> tuple[Any, bool]:
    """A ProduceResponse of any served version and whether the packer should decline it."""
    version = draw(st.integers(min_value=FIRST_VERSION, max_value=LAST_VERSION))
    module = schema(version)
    unusual = False
    topics = []
    for name in draw(st.lists(TEXT, max_size=3)):
        parts = draw(st.lists(partitions(version), max_size=3))
        unusual |= any(flag for _, flag in parts)
        topics.append(
            module.TopicProduceResponse(
                name=name, partition_responses=tuple(part for part, _ in parts)
            )
        )
    values: dict[str, Any] = {
        "responses": tuple(topics),
        "throttle_time": datetime.timedelta(milliseconds=draw(st.integers(0, 60_000))),
    }
    if version >= 10 and draw(st.booleans()):
        values["node_endpoints"] = (module.NodeEndpoint(node_id=1, host="h", port=9092),)
        unusual = True
    return module.ProduceResponse(**values), unusual


@given(responses())
def test_packed_bytes_are_kios_or_the_packer_declines(case: tuple[Any, bool]) -> None:
    body, unusual = case
    packed = encode_produce_response(body)
    if unusual:
        assert packed is None
    else:
        assert packed == kio_bytes(body)


def test_encode_response_uses_it_with_the_header() -> None:
    module = schema(9)
    body = module.ProduceResponse(
        responses=(
            module.TopicProduceResponse(
                name="orders",
                partition_responses=(
                    module.PartitionProduceResponse(
                        index=2,
                        error_code=ErrorCode.none,
                        base_offset=41,
                        log_start_offset=0,
                        record_errors=(),
                    ),
                ),
            ),
        ),
        throttle_time=datetime.timedelta(0),
    )
    header = encode_response_header(correlation_id=7, version=1)
    assert encode_response(correlation_id=7, body=body) == header + kio_bytes(body)


def test_a_legacy_string_too_long_for_int16_is_left_to_kio() -> None:
    module = schema(8)
    body = module.ProduceResponse(
        responses=(module.TopicProduceResponse(name="t" * 40_000, partition_responses=()),),
        throttle_time=datetime.timedelta(0),
    )
    assert encode_produce_response(body) is None
