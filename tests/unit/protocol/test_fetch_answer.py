"""``strom.protocol.fetch_answer``: the Fetch v12 reader that leaves the records in the frame
gives kio's values for the same bytes."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import response as kio
from kio.schema.types import BrokerId, ProducerId, TopicName
from kio.static.primitive import Records, i32, i32Timedelta, i64

from strom.common import KafkaError
from strom.protocol.api import decode_response, encode_response
from strom.protocol.fetch_answer import read

_ERRORS = [ErrorCode.none, ErrorCode.offset_out_of_range, ErrorCode.not_leader_or_follower]


@st.composite
def partitions(draw: Any) -> kio.PartitionData:
    aborted = draw(
        st.none() | st.lists(st.tuples(st.integers(0, 2**62), st.integers(0, 2**62)), max_size=3)
    )
    tagged = draw(st.booleans())
    return kio.PartitionData(
        partition_index=i32(draw(st.integers(0, 2**31 - 1))),
        error_code=draw(st.sampled_from(_ERRORS)),
        high_watermark=i64(draw(st.integers(-1, 2**62))),
        last_stable_offset=i64(draw(st.integers(-1, 2**62))),
        log_start_offset=i64(draw(st.integers(-1, 2**62))),
        current_leader=kio.LeaderIdAndEpoch(leader_id=BrokerId(3), leader_epoch=i32(9))
        if tagged
        else kio.LeaderIdAndEpoch(),
        aborted_transactions=None
        if aborted is None
        else tuple(
            kio.AbortedTransaction(producer_id=ProducerId(p), first_offset=i64(o))
            for p, o in aborted
        ),
        preferred_read_replica=BrokerId(draw(st.integers(-1, 5))),
        records=draw(st.none() | st.binary(max_size=300)),
    )


@st.composite
def responses(draw: Any) -> kio.FetchResponse:
    topics = draw(
        st.lists(
            st.tuples(st.text(min_size=1, max_size=20), st.lists(partitions(), max_size=3)),
            max_size=3,
        )
    )
    return kio.FetchResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(milliseconds=draw(st.integers(0, 99)))),
        error_code=draw(st.sampled_from(_ERRORS)),
        session_id=i32(draw(st.integers(0, 2**31 - 1))),
        responses=tuple(
            kio.FetchableTopicResponse(topic=TopicName(name), partitions=tuple(parts))
            for name, parts in topics
        ),
    )


@given(responses(), st.integers(0, 2**31 - 1))
def test_the_same_values_as_kio(response: kio.FetchResponse, correlation_id: int) -> None:
    frame = encode_response(correlation_id=correlation_id, body=response)
    answered, answer = read(memoryview(frame))
    assert answered == correlation_id
    assert datetime.timedelta(milliseconds=answer.throttle_time_ms) == response.throttle_time
    _, theirs = decode_response(frame, api_key=1, api_version=12)
    assert (answer.error_code, answer.session_id) == (theirs.error_code, theirs.session_id)
    assert [t.topic for t in answer.responses] == [t.topic for t in theirs.responses]
    for ours_topic, their_topic in zip(answer.responses, theirs.responses, strict=True):
        for ours, their in zip(ours_topic.partitions, their_topic.partitions, strict=True):
            assert (
                ours.partition_index,
                ours.error_code,
                ours.high_watermark,
                ours.last_stable_offset,
                ours.log_start_offset,
                ours.preferred_read_replica,
            ) == (
                their.partition_index,
                their.error_code,
                their.high_watermark,
                their.last_stable_offset,
                their.log_start_offset,
                their.preferred_read_replica,
            )
            assert ours.aborted_transactions == (
                None
                if their.aborted_transactions is None
                else tuple((t.producer_id, t.first_offset) for t in their.aborted_transactions)
            )
            if their.records is None:
                assert ours.records is None
            else:
                assert ours.records is not None and ours.records.readonly
                assert bytes(ours.records) == their.records


def one_partition_frame() -> bytes:
    partition = kio.PartitionData(
        partition_index=i32(0),
        error_code=ErrorCode.none,
        high_watermark=i64(5),
        aborted_transactions=None,
        records=Records(b"x" * 40),
    )
    response = kio.FetchResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=(kio.FetchableTopicResponse(topic=TopicName("t"), partitions=(partition,)),),
    )
    return encode_response(correlation_id=1, body=response)


@pytest.mark.parametrize("cut", [1, 10, 30, 60])
def test_a_frame_cut_short_is_corrupt(cut: int) -> None:
    frame = one_partition_frame()
    with pytest.raises(KafkaError, match="cut short") as raised:
        read(memoryview(frame[:-cut]))
    assert raised.value.error_code == ErrorCode.corrupt_message


def test_bytes_after_the_body_are_corrupt() -> None:
    with pytest.raises(KafkaError, match="2 unexpected bytes"):
        read(memoryview(one_partition_frame() + b"\0\0"))
