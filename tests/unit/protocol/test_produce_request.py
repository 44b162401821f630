"""``protocol.produce_request``: the struct-read ProduceRequest has kio's values, or is None."""

from __future__ import annotations

import datetime
import io
import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial import entity_reader, entity_writer

from strom.protocol.api import (
    KAFKA_BROKER_VERSIONS,
    ApiKey,
    decode_request,
    encode_request,
    make_request_header,
)
from strom.protocol.produce_request import (
    FIRST_VERSION,
    LAST_VERSION,
    PRODUCE_VIEW_MIN,
    ProduceRequestData,
    decode_produce_request,
)

I32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
NAMES = st.text(max_size=8)
RECORDS = st.none() | st.binary(max_size=40)
VERSIONS = st.integers(min_value=FIRST_VERSION, max_value=LAST_VERSION)


def schema(version: int) -> Any:
    """The module of ProduceRequest ``version`` (its nested classes)."""
    return sys.modules[load_request_schema(ApiKey.PRODUCE, version).__module__]


def kio_bytes(body: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(body))(buffer, body)
    return buffer.getvalue()


@st.composite
def requests(draw: st.DrawFn, version: int) -> Any:
    """A kio ProduceRequest of ``version``."""
    module = schema(version)
    topics = tuple(
        module.TopicProduceData(
            name=draw(NAMES),
            partition_data=tuple(
                module.PartitionProduceData(index=draw(I32), records=draw(RECORDS))
                for _ in range(draw(st.integers(min_value=0, max_value=3)))
            ),
        )
        for _ in range(draw(st.integers(min_value=0, max_value=3)))
    )
    return module.ProduceRequest(
        transactional_id=draw(st.none() | NAMES),
        acks=draw(st.sampled_from([-1, 0, 1, 2, -32768])),
        timeout=datetime.timedelta(milliseconds=draw(st.integers(0, 2**31 - 1))),
        topic_data=topics,
    )


def plain(body: Any) -> tuple[Any, ...]:
    """A body's values, kio's or ours, as plain Python values."""
    return (
        body.transactional_id,
        int(body.acks),
        body.timeout,
        [
            (
                str(topic.name),
                [
                    (int(p.index), None if p.records is None else bytes(p.records))
                    for p in topic.partition_data
                ],
            )
            for topic in body.topic_data
        ],
    )


@given(st.data(), VERSIONS, st.binary(max_size=4), st.binary(max_size=3))
def test_values_and_size_are_kios_in_every_version(
    data: st.DataObject, version: int, before: bytes, after: bytes
) -> None:
    body = data.draw(requests(version))
    encoded = kio_bytes(body)
    frame = before + encoded + after
    decoded = decode_produce_request(frame, len(before), version)
    assert decoded is not None
    ours, size = decoded
    kios, kio_size = entity_reader(type(body))(frame, len(before))
    assert size == kio_size == len(encoded)
    assert plain(ours) == plain(kios) == plain(body)
    assert isinstance(ours, ProduceRequestData)


@given(st.data(), VERSIONS)
def test_records_are_views_of_the_frame(data: st.DataObject, version: int) -> None:
    body = data.draw(requests(version))
    frame = kio_bytes(body)
    decoded = decode_produce_request(frame, 0, version)
    assert decoded is not None
    for topic in decoded[0].topic_data:
        for partition in topic.partition_data:
            assert partition.records is None or partition.records.obj is frame


@given(st.data(), VERSIONS)
def test_a_truncated_body_is_left_to_kio(data: st.DataObject, version: int) -> None:
    encoded = kio_bytes(data.draw(requests(version)))
    cut = data.draw(st.integers(min_value=0, max_value=len(encoded) - 1))
    assert decode_produce_request(encoded[:cut], 0, version) is None


def test_tagged_fields_are_left_to_kio() -> None:
    module = schema(9)
    body = module.ProduceRequest(
        transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=1), topic_data=()
    )
    encoded = kio_bytes(body)
    assert encoded[-1] == 0  # the body's tagged fields: none
    assert decode_produce_request(encoded[:-1] + b"\x01\x00\x00", 0, 9) is None


def test_versions_out_of_range_are_left_to_kio() -> None:
    encoded = kio_bytes(
        schema(3).ProduceRequest(
            transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=1), topic_data=()
        )
    )
    assert decode_produce_request(encoded, 0, 3) is not None
    assert decode_produce_request(encoded, 0, 2) is None
    assert decode_produce_request(encoded, 0, 13) is None


def test_decode_request_reads_large_produce_frames_here_and_small_ones_with_kio() -> None:
    def frame(records: bytes) -> bytes:
        module = schema(9)
        body = module.ProduceRequest(
            transactional_id="t",
            acks=-1,
            timeout=datetime.timedelta(seconds=30),
            topic_data=(
                module.TopicProduceData(
                    name="bench",
                    partition_data=(module.PartitionProduceData(index=2, records=records),),
                ),
            ),
        )
        header = make_request_header(body, correlation_id=7, client_id="c")
        return encode_request(header=header, body=body)

    large = decode_request(frame(b"x" * PRODUCE_VIEW_MIN), versions=KAFKA_BROKER_VERSIONS)
    small = decode_request(frame(b"x" * 100), versions=KAFKA_BROKER_VERSIONS)
    assert isinstance(large.body, ProduceRequestData)
    assert not isinstance(small.body, ProduceRequestData)
    assert (
        plain(large.body)[:3] == plain(small.body)[:3] == ("t", -1, datetime.timedelta(seconds=30))
    )
    assert large.trailing_bytes == small.trailing_bytes == 0
