"""Records inside v2 batches: build, iterate, control batches, corrupt input."""

from __future__ import annotations

import struct
from itertools import accumulate

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strom.common import ErrorCode, KafkaError
from strom.protocol.batch import (
    DELETE_HORIZON_FLAG,
    HEADER_SIZE,
    NO_TIMESTAMP,
    BatchHeader,
    Compression,
    TimestampType,
    rewrite_crc,
    validate_batch,
)
from strom.protocol.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    iter_records,
    read_control_record,
)

CODECS = list(Compression)
T0 = 1_700_000_000_000


def validate(batch: bytes | bytearray, *, from_client: bool = False) -> BatchHeader:
    return validate_batch(batch, 0, len(batch), max_batch_bytes=2**31 - 1, from_client=from_client)


def records_of(batch: bytes | bytearray | memoryview) -> list[Record]:
    return list(iter_records(batch))


def assert_corrupt(batch: bytes | bytearray | memoryview) -> KafkaError:
    with pytest.raises(KafkaError) as caught:
        records_of(batch)
    assert caught.value.error_code == ErrorCode.corrupt_message, caught.value
    return caught.value


SAMPLE = [
    Record(100, T0, b"k1", b"v1", (("h", b"x"), ("\u00e9t\u00e9", None))),
    Record(101, T0 - 5, None, b""),
    Record(102, T0 + 7, b"", None),
    Record(103, T0 + 3, b"k" * 70, b"v" * 10_000, (("empty", b""),)),
]


# --- build and iterate ---------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_round_trip(codec: Compression) -> None:
    batch = build_batch(SAMPLE, compression=codec)
    header = validate(batch, from_client=True)
    assert header.compression == codec
    assert header.base_offset == 100
    assert header.last_offset_delta == 3
    assert header.record_count == 4
    assert header.base_timestamp == T0  # the first record's, as Kafka's producer writes it
    assert header.max_timestamp == T0 + 7
    assert header.size == len(batch)
    assert records_of(batch) == SAMPLE


def test_null_and_empty_keys_and_values_stay_distinct() -> None:
    got = records_of(build_batch(SAMPLE))
    assert (got[1].key, got[1].value) == (None, b"")
    assert (got[2].key, got[2].value) == (b"", None)


def test_batch_attributes_and_producer_fields() -> None:
    batch = build_batch(
        SAMPLE,
        base_offset=90,
        producer_id=42,
        producer_epoch=3,
        base_sequence=17,
        is_transactional=True,
        partition_leader_epoch=9,
    )
    header = validate(batch)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 17)
    assert header.is_transactional and not header.is_control
    assert header.partition_leader_epoch == 9
    assert header.base_offset == 90
    assert header.last_offset_delta == 13
    assert records_of(batch) == SAMPLE


def test_offset_gaps_are_preserved() -> None:
    compacted = [SAMPLE[0], SAMPLE[3]]
    batch = build_batch(compacted, base_offset=99, last_offset_delta=10)
    header = validate(batch)
    assert (header.base_offset, header.last_offset_delta, header.record_count) == (99, 10, 2)
    assert records_of(batch) == compacted
    with pytest.raises(KafkaError) as caught:  # a producer never sends gaps
        validate(batch, from_client=True)
    assert caught.value.error_code == ErrorCode.invalid_record


def test_largest_offset_delta() -> None:
    far = Record(2**31 - 1, T0, b"k", b"v")
    batch = build_batch([Record(0, T0, None, None), far])
    assert records_of(batch)[-1] == far
    with pytest.raises(ValueError, match="2\\^31-1"):
        build_batch([Record(0, T0, None, None), Record(2**31, T0, None, None)])


def test_empty_batch_left_by_compaction() -> None:
    batch = build_batch(
        [],
        base_offset=500,
        last_offset_delta=4,
        compression=Compression.ZSTD,
        producer_id=7,
        producer_epoch=1,
        base_sequence=0,
        max_timestamp=T0,
    )
    header = validate(batch)
    assert header.record_count == 0
    assert header.compression == Compression.NONE  # as Kafka's cleaner writes empty batches
    assert (header.base_offset, header.last_offset, header.next_offset) == (500, 504, 505)
    assert header.base_timestamp == header.max_timestamp == T0
    assert len(batch) == HEADER_SIZE
    assert records_of(batch) == []
    with pytest.raises(ValueError, match="base_offset"):
        build_batch([])
    assert validate(build_batch([], base_offset=0)).max_timestamp == NO_TIMESTAMP


def test_log_append_time_reports_the_batch_max_timestamp() -> None:
    batch = build_batch(SAMPLE, timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=T0 + 99)
    header = validate(batch)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in records_of(batch)] == [T0 + 99] * 4


def test_delete_horizon_goes_in_base_timestamp() -> None:
    horizon = T0 + 86_400_000
    batch = build_batch(SAMPLE, delete_horizon_ms=horizon)
    header = validate(batch)
    assert header.attributes & DELETE_HORIZON_FLAG
    assert header.base_timestamp == horizon
    assert header.max_timestamp == T0 + 7
    assert records_of(batch) == SAMPLE  # record timestamps are deltas from the horizon


def test_last_offset_delta_below_the_last_record_is_refused() -> None:
    with pytest.raises(ValueError, match="last_offset_delta"):
        build_batch(SAMPLE, last_offset_delta=2)


def test_offsets_must_increase() -> None:
    with pytest.raises(ValueError, match="not above"):
        build_batch([SAMPLE[1], SAMPLE[0]])
    with pytest.raises(ValueError, match="not above"):
        build_batch([SAMPLE[0], SAMPLE[0]])


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "slice"])
def test_any_buffer_type(kind: str) -> None:
    batch = build_batch(SAMPLE)
    buffers: dict[str, bytes | bytearray | memoryview] = {
        "bytes": batch,
        "bytearray": bytearray(batch),
        "memoryview": memoryview(bytearray(batch)),
        "slice": memoryview(b"xx" + batch + b"yyy")[2:],  # trailing bytes beyond the batch
    }
    assert records_of(buffers[kind]) == SAMPLE


# --- hypothesis round trip -----------------------------------------------------------------

_payloads = st.one_of(
    st.none(),
    st.binary(max_size=200),
    st.integers(8_000, 20_000).map(lambda n: b"x" * n),  # three-byte length varints
)
_headers = st.lists(
    st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=16))), max_size=3
).map(tuple)


@st.composite
def record_lists(draw: st.DrawFn, min_size: int = 0) -> list[Record]:
    gaps = draw(st.lists(st.integers(1, 1000), min_size=min_size, max_size=12))
    offsets = list(accumulate(gaps, initial=draw(st.integers(100, 2**40))))[:-1]
    base_time = draw(st.integers(0, 2**42))
    return [
        Record(
            offset,
            draw(st.just(NO_TIMESTAMP) | st.integers(base_time - 10**9, base_time + 10**9)),
            draw(_payloads),
            draw(_payloads),
            draw(_headers),
        )
        for offset in offsets
    ]


@given(
    records=record_lists(),
    codec=st.sampled_from(CODECS),
    extra_delta=st.integers(0, 50),
    transactional=st.booleans(),
    producer=st.tuples(st.integers(-1, 2**63 - 1), st.integers(-1, 2**15 - 1)),
)
def test_round_trip_any_records(
    records: list[Record],
    codec: Compression,
    extra_delta: int,
    transactional: bool,
    producer: tuple[int, int],
) -> None:
    base_offset = records[0].offset - extra_delta if records else extra_delta
    last_delta = (records[-1].offset - base_offset if records else 0) + extra_delta
    batch = build_batch(
        records,
        base_offset=base_offset,
        last_offset_delta=last_delta,
        compression=codec,
        producer_id=producer[0],
        producer_epoch=producer[1],
        is_transactional=transactional,
    )
    header = validate(batch)
    assert header.record_count == len(records)
    assert (header.base_offset, header.last_offset_delta) == (base_offset, last_delta)
    assert header.compression == (codec if records else Compression.NONE)
    assert header.max_timestamp == max((r.timestamp for r in records), default=NO_TIMESTAMP)
    assert records_of(batch) == records


# --- corrupt input -------------------------------------------------------------------------


def resealed(batch: bytes | bytearray) -> bytearray:
    """The batch with its length and CRC made right again, so only its records are wrong."""
    fixed = bytearray(batch)
    struct.pack_into(">i", fixed, 8, len(fixed) - 12)
    rewrite_crc(fixed, 0)
    return fixed


def with_count(batch: bytes, count: int) -> bytearray:
    changed = bytearray(batch)
    struct.pack_into(">i", changed, 57, count)
    return resealed(changed)


def test_record_count_larger_than_the_records() -> None:
    message = assert_corrupt(with_count(build_batch(SAMPLE), 5)).message
    assert "record 4" in message


def test_record_count_smaller_than_the_records() -> None:
    batch = with_count(build_batch(SAMPLE), 3)
    records = iter_records(batch)
    assert [next(records) for _ in range(3)] == SAMPLE[:3]
    with pytest.raises(KafkaError, match="bytes after its 3 records"):
        next(records)


def test_negative_record_count() -> None:
    assert_corrupt(with_count(build_batch(SAMPLE), -1))


@pytest.mark.parametrize("cut", [1, 10, 100, 5000])
def test_truncated_records_section(cut: int) -> None:
    assert_corrupt(resealed(build_batch(SAMPLE)[:-cut]))


def test_truncated_compressed_records_section() -> None:
    batch = build_batch(SAMPLE, compression=Compression.GZIP)
    assert_corrupt(resealed(batch[:-20]))


def test_header_problems() -> None:
    batch = build_batch(SAMPLE)
    assert_corrupt(batch[: HEADER_SIZE - 1])
    assert_corrupt(batch[:-1])  # shorter than batchLength says
    wrong_magic = bytearray(batch)
    wrong_magic[16] = 1
    assert "magic" in assert_corrupt(wrong_magic).message


def test_unknown_codec() -> None:
    batch = bytearray(build_batch(SAMPLE))
    batch[22] |= 0x07
    with pytest.raises(KafkaError) as caught:
        records_of(batch)
    assert caught.value.error_code == ErrorCode.unsupported_compression_type


def test_negative_field_lengths_and_null_header_keys() -> None:
    one = build_batch([Record(0, T0, b"k", b"v", (("h", b"x"),))])
    # The record: length, attributes, timestampDelta, offsetDelta, key length (zig-zag 2)...
    key_length_at = HEADER_SIZE + 4
    assert one[key_length_at] == 2
    changed = bytearray(one)
    changed[key_length_at] = 0x03
    assert "negative field length -2" in assert_corrupt(resealed(changed)).message
    longer = bytearray(one) + b"\x00"  # the record's length says one byte more than its fields
    longer[HEADER_SIZE] += 2
    assert "record fields end -1 bytes" in assert_corrupt(resealed(longer)).message
    header_key_length_at = key_length_at + 5
    assert one[header_key_length_at] == 2
    changed = bytearray(one)
    changed[header_key_length_at] = 0x01
    assert "null header key" in assert_corrupt(resealed(changed)).message


def test_header_key_that_is_not_utf8() -> None:
    batch = bytearray(build_batch([Record(0, T0, None, None, (("h", None),))]))
    batch[batch.index(b"h", HEADER_SIZE)] = 0xFF
    assert_corrupt(resealed(batch))


@given(
    records=record_lists(min_size=1),
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.integers(0, 40),
)
def test_mangled_records_decode_or_raise_corrupt_message(
    records: list[Record], edits: list[tuple[int, int]], cut: int
) -> None:
    """Whatever the record bytes, iteration yields records or raises CORRUPT_MESSAGE only."""
    batch = bytearray(build_batch(records))
    for position, byte in edits:
        batch[HEADER_SIZE + position % (len(batch) - HEADER_SIZE)] = byte
    del batch[max(HEADER_SIZE, len(batch) - cut) :]
    try:
        records_of(resealed(batch))
    except KafkaError as error:
        assert error.error_code == ErrorCode.corrupt_message


# --- control batches -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(ControlRecordType), ids=lambda k: k.name)
def test_control_batch(kind: ControlRecordType) -> None:
    batch = build_control_batch(
        kind,
        producer_id=1234,
        producer_epoch=5,
        coordinator_epoch=77,
        base_offset=40,
        timestamp=T0,
        partition_leader_epoch=3,
    )
    header = validate(batch, from_client=True)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (1234, 5, -1)
    assert (header.base_offset, header.record_count, header.partition_leader_epoch) == (40, 1, 3)
    (record,) = records_of(batch)
    assert (record.offset, record.timestamp, record.headers) == (40, T0, ())
    assert record.key == struct.pack(">hh", 0, kind)  # EndTransactionMarker, version 0
    assert record.value == struct.pack(">hi", 0, 77)
    assert read_control_record(record) == (kind, 77)


def test_control_record_of_a_later_version_is_read() -> None:
    record = Record(0, T0, struct.pack(">hh", 1, 1), struct.pack(">hi", 1, 9) + b"more")
    assert read_control_record(record) == (ControlRecordType.COMMIT, 9)


@pytest.mark.parametrize(
    ("key", "value", "what"),
    [
        (None, struct.pack(">hi", 0, 1), "key"),
        (b"\x00\x00\x00", struct.pack(">hi", 0, 1), "key"),
        (struct.pack(">hh", -1, 0), struct.pack(">hi", 0, 1), "version"),
        (struct.pack(">hh", 0, 2), struct.pack(">hi", 0, 1), "not a transaction marker"),
        (struct.pack(">hh", 0, 0), None, "value"),
        (struct.pack(">hh", 0, 0), b"\x00\x00\x00", "value"),
        (struct.pack(">hh", 0, 0), struct.pack(">hi", -1, 1), "version"),
    ],
)
def test_bad_control_records(key: bytes | None, value: bytes | None, what: str) -> None:
    with pytest.raises(KafkaError, match=what) as caught:
        read_control_record(Record(0, T0, key, value))
    assert caught.value.error_code == ErrorCode.corrupt_message
