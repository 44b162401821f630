from __future__ import annotations

import contextlib
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strom.metadata import (
    BrokerEndpoint,
    ConfigRecord,
    FeatureLevelRecord,
    MetadataRecord,
    MetadataRecordError,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    decode_record,
    encode_record,
)
from strom.metadata.records import RECORD_TYPES, RecordType
from strom.protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    UUID,
    ArrayType,
    FieldType,
    IntType,
    StringType,
    StructSchema,
    StructType,
)

TOPIC_ID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")


def strategy_for(field_type: FieldType) -> st.SearchStrategy[Any]:
    """Any value the field type can encode, derived from the schema itself."""
    if isinstance(field_type, IntType):
        return st.integers(field_type.low, field_type.high)
    if field_type is BOOL:
        return st.booleans()
    if field_type is UUID:
        return st.uuids()
    if field_type is BYTES:
        return st.binary(max_size=40)
    if field_type is FLOAT64:
        return st.floats(allow_nan=False)
    if isinstance(field_type, StringType):
        text = st.text(max_size=40)
        return st.none() | text if field_type.nullable else text
    if isinstance(field_type, ArrayType):
        items = st.lists(strategy_for(field_type.element), max_size=5).map(tuple)
        return st.none() | items if field_type.nullable else items
    if isinstance(field_type, StructType):
        return struct_strategy(field_type.schema)
    raise AssertionError(f"no strategy for {field_type.name}")


def struct_strategy(schema: StructSchema) -> st.SearchStrategy[Any]:
    fields = {field.attr: strategy_for(field.type) for field in schema.fields}
    return st.builds(schema.cls, **fields)


@pytest.mark.parametrize("record_type", RECORD_TYPES.values(), ids=lambda rt: rt.name)
@given(data=st.data())
def test_every_record_type_round_trips(record_type: RecordType, data: st.DataObject) -> None:
    record = data.draw(struct_strategy(record_type.schema))
    encoded = encode_record(record)
    assert decode_record(encoded) == record
    assert decode_record(memoryview(encoded)) == record


@pytest.mark.parametrize("record_type", RECORD_TYPES.values(), ids=lambda rt: rt.name)
@given(data=st.data())
def test_every_version_that_can_carry_a_record_round_trips_it(
    record_type: RecordType, data: st.DataObject
) -> None:
    record = data.draw(struct_strategy(record_type.schema))
    for version in range(record_type.max_version + 1):
        if record_type.schema.can_encode(record, version):
            assert decode_record(encode_record(record, version=version)) == record
        else:
            with pytest.raises(MetadataRecordError, match="cannot carry"):
                encode_record(record, version=version)


@pytest.mark.parametrize("record_type", RECORD_TYPES.values(), ids=lambda rt: rt.name)
@given(data=st.data())
def test_every_truncation_is_a_clear_error(record_type: RecordType, data: st.DataObject) -> None:
    encoded = encode_record(data.draw(struct_strategy(record_type.schema)))
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(MetadataRecordError):
        decode_record(encoded[:cut])


@given(st.binary(max_size=64))
def test_garbage_raises_only_metadata_record_error(data: bytes) -> None:
    with contextlib.suppress(MetadataRecordError):
        decode_record(data)


def test_topic_record_bytes_are_kafkas() -> None:
    # frame version 1, api key 2, version 0, compact string "foo", uuid, no tagged fields
    encoded = encode_record(TopicRecord(name="foo", topic_id=TOPIC_ID))
    assert encoded == bytes.fromhex("010200") + b"\x04foo" + TOPIC_ID.bytes + b"\x00"


def test_partition_change_record_writes_only_changed_fields_as_tags() -> None:
    record = PartitionChangeRecord(partition_id=7, topic_id=TOPIC_ID, isr=(1,), leader=1)
    expected = (
        bytes.fromhex("010500")
        + bytes.fromhex("00000007")
        + TOPIC_ID.bytes
        + bytes.fromhex("02")  # two tagged fields
        + bytes.fromhex("00050200000001")  # tag 0: isr = [1]
        + bytes.fromhex("010400000001")  # tag 1: leader = 1
    )
    assert encode_record(record) == expected
    unchanged = PartitionChangeRecord(partition_id=7, topic_id=TOPIC_ID)
    assert encode_record(unchanged).endswith(b"\x00")


def test_register_broker_record_bytes_are_kafkas() -> None:
    record = RegisterBrokerRecord(
        broker_id=1,
        incarnation_id=TOPIC_ID,
        broker_epoch=5,
        endpoints=(BrokerEndpoint("PLAINTEXT", "h", 9092),),
        fenced=True,
    )
    expected = (
        bytes.fromhex("010000")
        + bytes.fromhex("00000001")
        + TOPIC_ID.bytes
        + bytes.fromhex("0000000000000005")
        + bytes.fromhex("02")  # one endpoint
        + b"\x0aPLAINTEXT"
        + b"\x02h"
        + bytes.fromhex("2384")  # port 9092
        + bytes.fromhex("0000")  # PLAINTEXT
        + b"\x00"  # the endpoint's tagged fields
        + bytes.fromhex("01")  # no features
        + bytes.fromhex("00")  # rack: null
        + bytes.fromhex("01")  # fenced
        + b"\x00"
    )
    assert encode_record(record) == expected


def version_of(record: MetadataRecord) -> int:
    return encode_record(record)[2]


def test_the_lowest_version_that_carries_the_record_is_written() -> None:
    base = PartitionRecord(
        partition_id=0,
        topic_id=TOPIC_ID,
        replicas=(1,),
        isr=(1,),
        leader=1,
        leader_epoch=0,
        partition_epoch=0,
    )
    assert version_of(base) == 0
    assert version_of(PartitionRecord(**{**_fields(base), "directories": (TOPIC_ID,)})) == 1
    assert version_of(PartitionRecord(**{**_fields(base), "last_known_elr": ()})) == 2
    broker = RegisterBrokerRecord(
        broker_id=1, incarnation_id=TOPIC_ID, broker_epoch=0, endpoints=()
    )
    assert version_of(broker) == 0
    assert version_of(RegisterBrokerRecord(**{**_fields(broker), "fenced": False})) == 0
    assert (
        version_of(RegisterBrokerRecord(**{**_fields(broker), "in_controlled_shutdown": True})) == 1
    )
    assert version_of(RegisterBrokerRecord(**{**_fields(broker), "log_dirs": (TOPIC_ID,)})) == 3


def _fields(record: Any) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__dataclass_fields__}


def test_unknown_tagged_fields_are_skipped() -> None:
    encoded = encode_record(TopicRecord(name="foo", topic_id=TOPIC_ID))
    with_tag = encoded[:-1] + bytes.fromhex("010902abcd")
    assert decode_record(with_tag) == TopicRecord(name="foo", topic_id=TOPIC_ID)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (bytes.fromhex("020200"), "unknown metadata record frame version 2"),
        (bytes.fromhex("016300"), "unknown metadata record type 99"),
        (bytes.fromhex("010201"), "TopicRecord version 1 is newer than strom reads"),
        (bytes.fromhex("01140000ff"), "1 unexpected bytes after the record"),
        (bytes.fromhex("01020000"), "TopicRecord.name: null found where a string"),
        (bytes.fromhex("01020002ff"), "TopicRecord.name: string is not valid UTF-8"),
        (bytes.fromhex("01ffffffffff"), "unsigned varint longer than 5 bytes"),
        (b"", "record truncated"),
    ],
)
def test_bad_bytes_say_what_is_wrong(data: bytes, message: str) -> None:
    with pytest.raises(MetadataRecordError, match=message):
        decode_record(data)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (FeatureLevelRecord(name="x", feature_level=2**15), "feature_level: 32768 is out of range"),
        (TopicRecord(name="x" * 40000, topic_id=TOPIC_ID), "name: string of 40000 bytes"),
        (ConfigRecord(resource_type=2, resource_name="t", name=None, value="1"), "name: null"),  # type: ignore[arg-type]
        (TopicRecord(name="t", topic_id="nope"), "topic_id: expected a UUID"),  # type: ignore[arg-type]
    ],
)
def test_unencodable_records_are_refused(record: MetadataRecord, message: str) -> None:
    with pytest.raises(MetadataRecordError, match=message):
        encode_record(record)


def test_explicit_versions_are_checked() -> None:
    with pytest.raises(MetadataRecordError, match="TopicRecord has no version 1"):
        encode_record(TopicRecord(name="t", topic_id=TOPIC_ID), version=1)
    with pytest.raises(MetadataRecordError, match="not a metadata record"):
        encode_record("TopicRecord")  # type: ignore[arg-type]


def test_no_op_record_is_four_bytes() -> None:
    assert encode_record(NoOpRecord()) == bytes.fromhex("01140000")
    assert decode_record(bytes.fromhex("01140000")) == NoOpRecord()


def test_schemas_match_their_dataclasses() -> None:
    class Odd:
        pass

    with pytest.raises(TypeError):
        StructSchema(Odd, [])
