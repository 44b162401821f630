"""The console's ListOffsets requests and answers (``strom.console.offsets``): a leader's
partitions in one request, by topic; an answer's partitions with an error left out."""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v5.response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta, i64

from strom.console.offsets import EARLIEST, list_offsets_requests, offsets_of
from strom.protocol.api import (
    KAFKA_BROKER_VERSIONS,
    decode_request,
    encode_request,
    make_request_header,
)


def test_a_leaders_partitions_go_in_one_request_by_topic() -> None:
    request = list_offsets_requests([("a", 0), ("b", 1), ("a", 2)], EARLIEST)
    frame = encode_request(header=make_request_header(request, correlation_id=1, client_id="c"),
                           body=request)  # fmt: skip
    decoded: Any = decode_request(frame, versions=KAFKA_BROKER_VERSIONS).body
    assert int(decoded.replica_id) == -1
    assert int(decoded.isolation_level) == 0  # read uncommitted: the high watermark
    assert [(t.name, [(p.partition_index, p.timestamp) for p in t.partitions])
            for t in decoded.topics] == [("a", [(0, -2), (2, -2)]), ("b", [(1, -2)])]  # fmt: skip


def test_partitions_answered_with_an_error_are_left_out() -> None:
    def answer(index: int, error: ErrorCode, offset: int) -> ListOffsetsPartitionResponse:
        return ListOffsetsPartitionResponse(partition_index=i32(index), error_code=error,
                                            timestamp=i64(-1), offset=i64(offset),
                                            leader_epoch=i32(0))  # fmt: skip

    response = ListOffsetsResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        topics=(
            ListOffsetsTopicResponse(
                name=TopicName("a"),
                partitions=(
                    answer(0, ErrorCode.none, 7),
                    answer(1, ErrorCode.not_leader_or_follower, -1),
                ),
            ),
        ),
    )
    assert offsets_of(response) == {("a", 0): 7}
