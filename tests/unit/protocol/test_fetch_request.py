"""``protocol.fetch_request``: Fetch v15 bodies written with ``struct`` are kio's bytes."""

from __future__ import annotations

import datetime
import io
import uuid
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.fetch.v15.request import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ForgottenTopic,
    ReplicaState,
)
from kio.schema.types import BrokerId
from kio.serial import entity_writer
from kio.static.primitive import i8, i32, i32Timedelta, i64

from strom.protocol.api import (
    ApiKey,
    VersionRange,
    decode_request,
    encode_client_request,
    encode_request,
    make_request_header,
)
from strom.protocol.fetch_request import (
    FollowerFetch,
    FollowerFetchPartition,
    FollowerFetchTopic,
    FollowerState,
    encode_fetch_request_v15,
)

I32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
IDS = st.none() | st.uuids()
TEXT = st.text(max_size=300)  # longer than 127 bytes: a two-byte length varint


def kio_bytes(body: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(FetchRequest)(buffer, body)
    return buffer.getvalue()


@st.composite
def partitions(draw: st.DrawFn) -> FetchPartition:
    return FetchPartition(
        partition=i32(draw(I32)),
        current_leader_epoch=i32(draw(I32)),
        fetch_offset=i64(draw(I64)),
        last_fetched_epoch=i32(draw(I32)),
        log_start_offset=i64(draw(I64)),
        partition_max_bytes=i32(draw(I32)),
    )


@st.composite
def requests(draw: st.DrawFn) -> FetchRequest:
    topics = draw(
        st.lists(
            st.builds(
                lambda topic_id, parts: FetchTopic(topic_id=topic_id, partitions=tuple(parts)),
                IDS,
                st.lists(partitions(), max_size=3),
            ),
            max_size=3,
        )
    )
    forgotten = draw(
        st.lists(
            st.builds(
                lambda topic_id, parts: ForgottenTopic(
                    topic_id=topic_id, partitions=tuple(i32(p) for p in parts)
                ),
                IDS,
                st.lists(I32, max_size=3),
            ),
            max_size=2,
        )
    )
    state = draw(
        st.just(ReplicaState())
        | st.builds(
            lambda replica, epoch: ReplicaState(replica_id=BrokerId(replica), replica_epoch=epoch),
            I32,
            I64.map(i64),
        )
    )
    return FetchRequest(
        cluster_id=draw(st.none() | TEXT),
        replica_state=state,
        max_wait=i32Timedelta.parse(
            datetime.timedelta(milliseconds=draw(st.integers(0, 2**31 - 1)))
        ),
        min_bytes=i32(draw(I32)),
        max_bytes=i32(draw(I32)),
        isolation_level=i8(draw(st.integers(-128, 127))),
        session_id=i32(draw(I32)),
        session_epoch=i32(draw(I32)),
        topics=tuple(topics),
        forgotten_topics_data=tuple(forgotten),
        rack_id=draw(TEXT),
    )


@given(requests())
def test_the_bytes_are_kios(body: FetchRequest) -> None:
    assert encode_fetch_request_v15(body) == kio_bytes(body)


def test_a_followers_fetch_goes_out_in_these_bytes_and_reads_back() -> None:
    body = FetchRequest(
        replica_state=ReplicaState(replica_id=BrokerId(2), replica_epoch=i64(7)),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=500)),
        min_bytes=i32(1),
        max_bytes=i32(10 << 20),
        topics=(
            FetchTopic(
                topic_id=uuid.uuid4(),
                partitions=(
                    FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(3),
                        fetch_offset=i64(100),
                        last_fetched_epoch=i32(3),
                        log_start_offset=i64(0),
                        partition_max_bytes=i32(1 << 20),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )
    header = make_request_header(body, correlation_id=5, client_id="broker-2")
    frame = encode_request(header=header, body=body)
    assert frame.endswith(kio_bytes(body))
    request = decode_request(frame, versions={ApiKey.FETCH: VersionRange(15, 15)})
    assert request.body == body
    assert request.correlation_id == 5


@given(
    replica=st.integers(0, 2**31 - 1),
    epoch=I64,
    wait_ms=st.integers(0, 2**31 - 1),
    sizes=st.tuples(I32, I32),
    topics=st.lists(
        st.tuples(st.uuids(), st.lists(st.tuples(I32, I32, I64, I32, I64, I32), max_size=3)),
        max_size=3,
    ),
    correlation_id=I32,
)
def test_a_followers_plain_fetch_is_sent_as_kios_fetch_request(
    replica: int,
    epoch: int,
    wait_ms: int,
    sizes: tuple[int, int],
    topics: list[tuple[uuid.UUID, list[tuple[int, int, int, int, int, int]]]],
    correlation_id: int,
) -> None:
    plain = FollowerFetch(
        replica_state=FollowerState(replica, epoch),
        max_wait=datetime.timedelta(milliseconds=wait_ms),
        min_bytes=sizes[0],
        max_bytes=sizes[1],
        topics=tuple(
            FollowerFetchTopic(topic_id, tuple(FollowerFetchPartition(*p) for p in parts))
            for topic_id, parts in topics
        ),
    )
    kio = FetchRequest(
        replica_state=ReplicaState(replica_id=BrokerId(replica), replica_epoch=i64(epoch)),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=wait_ms)),
        min_bytes=i32(sizes[0]),
        max_bytes=i32(sizes[1]),
        topics=tuple(
            FetchTopic(
                topic_id=topic_id,
                partitions=tuple(
                    FetchPartition(
                        partition=i32(p[0]),
                        current_leader_epoch=i32(p[1]),
                        fetch_offset=i64(p[2]),
                        last_fetched_epoch=i32(p[3]),
                        log_start_offset=i64(p[4]),
                        partition_max_bytes=i32(p[5]),
                    )
                    for p in parts
                ),
            )
            for topic_id, parts in topics
        ),
        forgotten_topics_data=(),
    )
    header = make_request_header(kio, correlation_id=correlation_id, client_id="broker-2")
    assert encode_client_request(
        plain, correlation_id=correlation_id, client_id="broker-2"
    ) == encode_request(header=header, body=kio)
