"""The spliced Fetch response is byte for byte what kio writes with the records inlined."""

from __future__ import annotations

import datetime
import itertools
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.static.primitive import Records, i32, i32Timedelta, i64

from strom.protocol.api import (
    KAFKA_BROKER_VERSIONS,
    ApiKey,
    decode_response,
    encode_response,
)
from strom.protocol.fetch_response import (
    FetchedPartition,
    RecordsSplicer,
    compact_length_prefix,
    legacy_length_prefix,
    pack_fetch_response,
)
from strom.server.api.kio_entities import build, response_module
from strom.storage.file_region import FileRegion

FETCH_VERSIONS = list(KAFKA_BROKER_VERSIONS[ApiKey.FETCH])


@dataclass(frozen=True)
class FakeRegion:
    """A region of in-memory bytes (the splicer only measures regions)."""

    data: bytes

    @property
    def length(self) -> int:
        return len(self.data)


def _partition_entries(
    draw: st.DrawFn,
) -> list[tuple[int, ErrorCode, list[bytes]]]:
    count = draw(st.integers(0, 6))
    entries = []
    for index in range(count):
        chunks = draw(st.lists(st.binary(min_size=0, max_size=300), max_size=3))
        error = draw(st.sampled_from([ErrorCode.none, ErrorCode.offset_out_of_range]))
        entries.append((index, error, chunks))
    return entries


@st.composite
def responses(draw: st.DrawFn) -> tuple[int, list[tuple[str, uuid.UUID, Any]]]:
    version = draw(st.sampled_from(FETCH_VERSIONS))
    topic_count = draw(st.integers(0, 4))
    topics = []
    for number in range(topic_count):
        name = draw(st.text("abcdefghijklmnopqrstuvwxyz._-0123456789", min_size=1, max_size=30))
        topic_id = uuid.UUID(int=draw(st.integers(0, 2**128 - 1)))
        topics.append((f"{name}{number}", topic_id, _partition_entries(draw)))
    return version, topics


def _body(
    version: int,
    topics: list[tuple[str, uuid.UUID, Any]],
    records_of: Any,
    *,
    error: ErrorCode = ErrorCode.none,
    session_id: int = 0,
    throttle_ms: int = 7,
    aborted: list[tuple[int, int]] | None = None,
) -> Any:
    """A kio FetchResponse; every partition has the ``aborted`` transactions (None: null)."""
    schema = response_module(ApiKey.FETCH, version)
    aborted_field = None
    if aborted is not None:
        aborted_field = tuple(
            build(schema.AbortedTransaction, producer_id=i64(producer), first_offset=i64(first))
            for producer, first in aborted
        )
    return build(
        schema.FetchResponse,
        throttle_time=i32Timedelta.parse(datetime.timedelta(milliseconds=throttle_ms)),
        error_code=error,
        session_id=i32(session_id),
        responses=tuple(
            build(
                schema.FetchableTopicResponse,
                topic=name,
                topic_id=topic_id,
                partitions=tuple(
                    build(
                        schema.PartitionData,
                        partition_index=i32(index),
                        error_code=partition_error,
                        high_watermark=i64(100 + index),
                        last_stable_offset=i64(90 + index),
                        log_start_offset=i64(index),
                        aborted_transactions=aborted_field,
                        preferred_read_replica=i32(-1),
                        records=records_of(chunks),
                    )
                    for index, partition_error, chunks in partitions
                ),
            )
            for name, topic_id, partitions in topics
        ),
    )


def _join(parts: list[Any]) -> bytes:
    return b"".join(part if isinstance(part, bytes) else part.data for part in parts)


@settings(max_examples=300, deadline=None)
@given(responses(), st.integers(0, 2**31 - 1))
def test_splice_matches_kio_inline(
    case: tuple[int, list[tuple[str, uuid.UUID, Any]]], correlation_id: int
) -> None:
    version, topics = case
    inline = encode_response(
        correlation_id=correlation_id,
        body=_body(version, topics, lambda chunks: Records(b"".join(chunks))),
    )
    splicer: RecordsSplicer[FakeRegion] = RecordsSplicer()
    body = _body(
        version, topics, lambda chunks: splicer.placeholder([FakeRegion(c) for c in chunks])
    )
    parts = splicer.encode(correlation_id=correlation_id, body=body)
    assert _join(parts) == inline
    regions = [part for part in parts if not isinstance(part, bytes)]
    assert [r.data for r in regions] == [
        chunk
        for _, _, partitions in topics
        for _, _, chunks in partitions
        for chunk in chunks
        if chunk
    ]
    assert splicer.size == sum(len(r.data) for r in regions)
    # Never two bytes parts in a row: each bytes part is followed by a region (or ends it).
    for first, second in itertools.pairwise(parts):
        assert not (isinstance(first, bytes) and isinstance(second, bytes))


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_spliced_response_decodes(version: int) -> None:
    topics = [
        (
            "orders",
            uuid.uuid4(),
            [(0, ErrorCode.none, [b"a" * 200, b"b" * 5]), (1, ErrorCode.none, [])],
        )
    ]
    splicer: RecordsSplicer[FakeRegion] = RecordsSplicer()
    body = _body(
        version, topics, lambda chunks: splicer.placeholder([FakeRegion(c) for c in chunks])
    )
    frame = _join(splicer.encode(correlation_id=42, body=body))
    correlation_id, decoded = decode_response(frame, api_key=ApiKey.FETCH, api_version=version)
    assert correlation_id == 42
    partitions = decoded.responses[0].partitions
    assert bytes(partitions[0].records) == b"a" * 200 + b"b" * 5
    assert bytes(partitions[1].records) == b""


def test_length_prefixes() -> None:
    assert legacy_length_prefix(0) == b"\x00\x00\x00\x00"
    assert legacy_length_prefix(300) == b"\x00\x00\x01\x2c"
    assert compact_length_prefix(0) == b"\x01"
    assert compact_length_prefix(126) == b"\x7f"
    assert compact_length_prefix(127) == b"\x80\x01"
    assert compact_length_prefix(2**21) == bytes([0x81, 0x80, 0x80, 0x01])


def test_large_region_varint_prefix() -> None:
    """A region long enough for a multi-byte varint prefix, with a real file region."""
    version = max(FETCH_VERSIONS)
    data = bytes(range(256)) * 1000
    topics = [("big", uuid.uuid4(), [(0, ErrorCode.none, [data])])]
    inline = encode_response(
        correlation_id=1, body=_body(version, topics, lambda chunks: Records(b"".join(chunks)))
    )
    splicer: RecordsSplicer[FakeRegion] = RecordsSplicer()
    body = _body(
        version, topics, lambda chunks: splicer.placeholder([FakeRegion(c) for c in chunks])
    )
    assert _join(splicer.encode(correlation_id=1, body=body)) == inline


def test_file_regions(tmp_path: Path) -> None:
    path = tmp_path / "segment.log"
    path.write_bytes(b"xxxx" + b"batch-bytes" + b"yyyy")
    fd = os.open(path, os.O_RDONLY)
    try:
        region = FileRegion.dup(fd, path=path, position=4, length=11)
    finally:
        os.close(fd)
    with region:
        version = 12
        topics = [("t", uuid.uuid4(), [(0, ErrorCode.none, [b"batch-bytes"])])]
        splicer: RecordsSplicer[FileRegion] = RecordsSplicer()
        body = _body(version, topics, lambda _: splicer.placeholder([region]))
        parts = splicer.encode(correlation_id=3, body=body)
        assert parts[1] is region
        joined = b"".join(p if isinstance(p, bytes) else p.read() for p in parts)
        inline = encode_response(
            correlation_id=3, body=_body(version, topics, lambda c: Records(b"".join(c)))
        )
        assert joined == inline


def test_missing_placeholder_is_refused() -> None:
    splicer: RecordsSplicer[FakeRegion] = RecordsSplicer()
    splicer.placeholder([FakeRegion(b"abc")])
    body = _body(12, [], lambda chunks: Records(b""))
    with pytest.raises(ValueError, match="missing"):
        splicer.encode(correlation_id=1, body=body)


def test_placeholder_outside_records_is_refused() -> None:
    """A chance match of the token elsewhere (here: a forged topic name) is refused."""
    token = b"T" * 12
    splicer: RecordsSplicer[FakeRegion] = RecordsSplicer(token=token)
    records = splicer.placeholder([FakeRegion(b"abc")])
    topics: list[tuple[str, uuid.UUID, Any]] = [
        ("x" + records.decode("latin-1"), uuid.uuid4(), [(0, ErrorCode.none, [])])
    ]
    body = _body(12, topics, lambda chunks: Records(b""))
    with pytest.raises(ValueError, match="not a records field"):
        splicer.encode(correlation_id=1, body=body)


def test_empty_regions_are_inlined() -> None:
    splicer: RecordsSplicer[FakeRegion] = RecordsSplicer()
    assert splicer.placeholder([]) == b""
    assert splicer.placeholder([FakeRegion(b"")]) == b""
    assert splicer.size == 0


@settings(max_examples=300, deadline=None)
@given(
    responses(),
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.sampled_from([ErrorCode.none, ErrorCode.fetch_session_id_not_found]),
    st.none() | st.lists(st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1))),
)
def test_packed_response_is_the_spliced_one(
    case: tuple[int, list[tuple[str, uuid.UUID, Any]]],
    correlation_id: int,
    throttle_ms: int,
    session_id: int,
    error: ErrorCode,
    aborted: list[tuple[int, int]] | None,
) -> None:
    """``pack_fetch_response`` gives the parts the splicer gives with kio: the same bytes parts
    and the same regions in the same places."""
    version, topics = case
    splicer: RecordsSplicer[FakeRegion] = RecordsSplicer()
    body = _body(
        version,
        topics,
        lambda chunks: splicer.placeholder([FakeRegion(c) for c in chunks]),
        error=error,
        session_id=session_id,
        throttle_ms=throttle_ms,
        aborted=aborted,
    )
    spliced = splicer.encode(correlation_id=correlation_id, body=body)
    packed = pack_fetch_response(
        version=version,
        correlation_id=correlation_id,
        throttle_ms=throttle_ms,
        error_code=error,
        session_id=session_id,
        topics=[
            (
                name,
                topic_id,
                [
                    FetchedPartition(
                        index,
                        partition_error,
                        100 + index,
                        90 + index,
                        index,
                        aborted,
                        [FakeRegion(chunk) for chunk in chunks],
                    )
                    for index, partition_error, chunks in partitions
                ],
            )
            for name, topic_id, partitions in topics
        ],
    )
    assert packed == spliced


def test_packer_leaves_unknown_versions_to_kio() -> None:
    arguments: dict[str, Any] = {
        "correlation_id": 1,
        "throttle_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "topics": [],
    }
    assert pack_fetch_response(version=3, **arguments) is None
    assert pack_fetch_response(version=18, **arguments) is None
    assert pack_fetch_response(version=4, **arguments) is not None
