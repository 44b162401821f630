"""``__consumer_offsets`` records: Kafka's bytes, every version, the partition hash."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strom.coordinator.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownRecordTypeError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from strom.coordinator.partitions import java_string_hash, partition_for
from strom.protocol.schema import SchemaError


def _string(size: int, text: str) -> str:
    """A classic (int16 length) string in hex."""
    return f"{size:04x}" + text.encode().hex()


@pytest.mark.parametrize(
    ("text", "hashed"),
    [
        ("", 0),
        ("a", 97),
        ("ab", 97 * 31 + 98),
        ("Aa", 2112),
        ("BB", 2112),
        ("hello", 99162322),
        ("polygenelubricants", -(2**31)),
        ("\u00e9", 0xE9),
        ("\U0001f600", 0xD83D * 31 + 0xDE00),  # a surrogate pair: two UTF-16 code units
        ("console-consumer-12345", 158455506),
        ("strom-groups-Ωμέγα-日本語-consumer-group-with-a-long-name", -927655352),
    ],
)
def test_java_string_hash(text: str, hashed: int) -> None:
    assert java_string_hash(text) == hashed


@pytest.mark.parametrize(
    ("group", "partition"),
    [
        ("", 0),
        ("a", 47),
        ("hello", 22),
        ("polygenelubricants", 0),  # Utils.abs(Integer.MIN_VALUE) is 0
        ("console-consumer-12345", 6),
        ("strom-groups-Ωμέγα-日本語-consumer-group-with-a-long-name", 2),
    ],
)
def test_partition_for(group: str, partition: int) -> None:
    assert partition_for(group, 50) == partition


def test_partition_for_one_partition() -> None:
    assert partition_for("anything", 1) == 0


# --- golden bytes, written out from the message specs -------------------------------------


def test_offset_commit_key_golden() -> None:
    key = OffsetCommitKey("g", "t", 3)
    golden = bytes.fromhex("0001" + _string(1, "g") + _string(1, "t") + "00000003")
    assert encode_key(key) == golden
    assert decode_key(golden) == key
    assert decode_key(bytes.fromhex("0000") + golden[2:]) == key  # version 0, same fields


def test_offset_commit_value_v3_golden() -> None:
    value = OffsetCommitValue(offset=42, leader_epoch=5, metadata="m", commit_timestamp=1000)
    golden = bytes.fromhex(
        "0003" + "000000000000002a" + "00000005" + _string(1, "m") + "00000000000003e8"
    )
    assert encode_value(value) == golden
    assert decode_value(OffsetCommitKey("g", "t", 0), golden) == value


def test_offset_commit_value_v1_golden_when_it_expires() -> None:
    value = OffsetCommitValue(
        offset=1, leader_epoch=-1, metadata="", commit_timestamp=2, expire_timestamp=3
    )
    golden = bytes.fromhex("0001" + f"{1:016x}" + "0000" + f"{2:016x}" + f"{3:016x}")
    assert encode_value(value) == golden
    assert decode_value(OffsetCommitKey("g", "t", 0), golden) == value


def test_offset_commit_value_v1_drops_the_leader_epoch_as_kafka_does() -> None:
    value = OffsetCommitValue(
        offset=1, leader_epoch=7, metadata="", commit_timestamp=2, expire_timestamp=3
    )
    decoded = decode_value(OffsetCommitKey("g", "t", 0), encode_value(value))
    assert decoded == OffsetCommitValue(
        offset=1, leader_epoch=-1, metadata="", commit_timestamp=2, expire_timestamp=3
    )


def test_offset_commit_value_old_and_flexible_versions_golden() -> None:
    key = OffsetCommitKey("g", "t", 0)
    v0 = bytes.fromhex("0000" + f"{7:016x}" + _string(2, "md") + f"{9:016x}")
    assert decode_value(key, v0) == OffsetCommitValue(7, -1, "md", 9)
    # v4: compact string (length + 1) and an empty tagged-field section
    v4 = bytes.fromhex("0004" + f"{7:016x}" + "00000002" + "03" + b"md".hex() + f"{9:016x}" + "00")
    assert decode_value(key, v4) == OffsetCommitValue(7, 2, "md", 9)
    assert encode_value(OffsetCommitValue(7, 2, "md", 9), version=4) == v4
    # an unknown tag from a newer writer is skipped
    tagged = v4[:-1] + bytes.fromhex("01" + "05" + "02" + "abcd")
    assert decode_value(key, tagged) == OffsetCommitValue(7, 2, "md", 9)


def test_group_metadata_key_golden() -> None:
    golden = bytes.fromhex("0002" + _string(1, "g"))
    assert encode_key(GroupMetadataKey("g")) == golden
    assert decode_key(golden) == GroupMetadataKey("g")


MEMBER = MemberMetadata(
    member_id="m1",
    group_instance_id=None,
    client_id="c",
    client_host="/h",
    rebalance_timeout=300000,
    session_timeout=10000,
    subscription=b"ab",
    assignment=b"cd",
)
GROUP = GroupMetadataValue(
    protocol_type="consumer",
    generation=1,
    protocol="range",
    leader="m1",
    current_state_timestamp=1234,
    members=(MEMBER,),
)


def test_group_metadata_value_v3_golden() -> None:
    golden = bytes.fromhex(
        "0003"
        + _string(8, "consumer")
        + "00000001"
        + _string(5, "range")
        + _string(2, "m1")
        + f"{1234:016x}"
        + "00000001"  # one member
        + _string(2, "m1")
        + "ffff"  # no group instance id
        + _string(1, "c")
        + _string(2, "/h")
        + f"{300000:08x}"
        + f"{10000:08x}"
        + "00000002"
        + b"ab".hex()
        + "00000002"
        + b"cd".hex()
    )
    assert encode_value(GROUP) == golden
    assert decode_value(GroupMetadataKey("g"), golden) == GROUP


def test_group_metadata_value_v0_and_v4_golden() -> None:
    key = GroupMetadataKey("g")
    v0 = bytes.fromhex(
        "0000"
        + _string(8, "consumer")
        + "00000002"
        + "ffff"  # no protocol
        + "ffff"  # no leader
        + "00000001"
        + _string(2, "m1")
        + _string(1, "c")
        + _string(2, "/h")
        + f"{10000:08x}"
        + "00000000"
        + "00000000"
    )
    member = MemberMetadata("m1", None, "c", "/h", 0, 10000, b"", b"")
    assert decode_value(key, v0) == GroupMetadataValue("consumer", 2, None, None, -1, (member,))
    v4 = bytes.fromhex(
        "0004"
        + "09"
        + b"consumer".hex()
        + "00000002"
        + "00"  # null protocol
        + "00"  # null leader
        + f"{5:016x}"
        + "02"  # one member
        + "03"
        + b"m1".hex()
        + "02"
        + b"i".hex()
        + "02"
        + b"c".hex()
        + "03"
        + b"/h".hex()
        + f"{300:08x}"
        + f"{10000:08x}"
        + "01"  # empty subscription
        + "02"
        + b"z".hex()
        + "00"  # member's tagged fields
        + "00"  # value's tagged fields
    )
    static = MemberMetadata("m1", "i", "c", "/h", 300, 10000, b"", b"z")
    value = GroupMetadataValue("consumer", 2, None, None, 5, (static,))
    assert decode_value(key, v4) == value
    assert encode_value(value, version=4) == v4


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 7, 100])
def test_unknown_key_versions_are_a_clear_error(version: int) -> None:
    with pytest.raises(UnknownRecordTypeError, match=f"key version {version} is not"):
        decode_key(version.to_bytes(2, "big") + b"\x00\x01g")


def test_a_tombstone_decodes_to_none() -> None:
    assert decode_value(GroupMetadataKey("g"), None) is None
    assert decode_value(OffsetCommitKey("g", "t", 0), None) is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00\x05" + bytes(20), "unknown OffsetCommitValue version 5"),
        (b"\x00\x03\x00", "truncated"),
        (bytes.fromhex("0003" + "00" * 12 + "ffff" + "00" * 8), "null found"),
    ],
)
def test_bad_values_are_clear_errors(data: bytes, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        decode_value(OffsetCommitKey("g", "t", 0), data)


def test_a_version_that_cannot_carry_the_value_is_refused() -> None:
    with pytest.raises(SchemaError, match="version 2 cannot carry"):
        encode_value(OffsetCommitValue(1, 5, "", 2), version=2)
    with pytest.raises(SchemaError, match="version 5 cannot carry"):
        encode_value(GROUP, version=5)


# --- round trips of every version ---------------------------------------------------------

_TEXT = st.text(max_size=20)
_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT64 = st.integers(-(2**63), 2**63 - 1)


@given(st.builds(OffsetCommitKey, _TEXT, _TEXT, _INT32) | st.builds(GroupMetadataKey, _TEXT))
def test_keys_round_trip(key: OffsetCommitKey | GroupMetadataKey) -> None:
    assert decode_key(encode_key(key)) == key


@st.composite
def offset_commit_values(draw: st.DrawFn, version: int) -> OffsetCommitValue:
    """A value whose fields ``version`` lacks hold their defaults."""
    return OffsetCommitValue(
        offset=draw(_INT64),
        leader_epoch=draw(_INT32) if version >= 3 else -1,
        metadata=draw(_TEXT),
        commit_timestamp=draw(_INT64),
        expire_timestamp=draw(_INT64) if version == 1 else -1,
    )


@st.composite
def group_metadata_values(draw: st.DrawFn, version: int) -> GroupMetadataValue:
    member = st.builds(
        MemberMetadata,
        member_id=_TEXT,
        group_instance_id=st.none() | _TEXT if version >= 3 else st.none(),
        client_id=_TEXT,
        client_host=_TEXT,
        rebalance_timeout=_INT32 if version >= 1 else st.just(0),
        session_timeout=_INT32,
        subscription=st.binary(max_size=30),
        assignment=st.binary(max_size=30),
    )
    return GroupMetadataValue(
        protocol_type=draw(_TEXT),
        generation=draw(_INT32),
        protocol=draw(st.none() | _TEXT),
        leader=draw(st.none() | _TEXT),
        current_state_timestamp=draw(_INT64) if version >= 2 else -1,
        members=tuple(draw(st.lists(member, max_size=4))),
    )


@given(st.data(), st.integers(0, 4))
def test_offset_commit_values_round_trip_in_every_version(
    data: st.DataObject, version: int
) -> None:
    value = data.draw(offset_commit_values(version))
    encoded = encode_value(value, version=version)
    assert encoded[:2] == version.to_bytes(2, "big")
    assert decode_value(OffsetCommitKey("g", "t", 0), encoded) == value


@given(st.data(), st.integers(0, 4))
def test_group_metadata_values_round_trip_in_every_version(
    data: st.DataObject, version: int
) -> None:
    value = data.draw(group_metadata_values(version))
    encoded = encode_value(value, version=version)
    assert encoded[:2] == version.to_bytes(2, "big")
    assert decode_value(GroupMetadataKey("g"), encoded) == value


@given(offset_commit_values(3) | offset_commit_values(1) | group_metadata_values(3))
def test_values_round_trip_in_the_version_kafka_writes(
    value: OffsetCommitValue | GroupMetadataValue,
) -> None:
    encoded = encode_value(value)
    expected = 1 if isinstance(value, OffsetCommitValue) and value.expire_timestamp != -1 else 3
    assert encoded[:2] == expected.to_bytes(2, "big")
    key = (
        GroupMetadataKey("g")
        if isinstance(value, GroupMetadataValue)
        else OffsetCommitKey("g", "t", 0)
    )
    assert decode_value(key, encoded) == value
