"""``__consumer_offsets`` records: Kafka's bytes, every value version, the partition hash."""

from __future__ import annotations

import pytest

from strom.coordinator.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    java_string_hash,
    partition_for,
)


@pytest.mark.parametrize(
    ("text", "hashed"),
    [("", 0), ("a", 97), ("ab", 3105), ("hello", 99162322), ("polygenelubricants", -(2**31))],
)
def test_java_string_hash(text: str, hashed: int) -> None:
    assert java_string_hash(text) == hashed


def test_partition_for_maps_min_value_to_zero() -> None:
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("a", 50) == 97 % 50


def test_offset_commit_golden_bytes() -> None:
    key = OffsetCommitKey("g", "t", 3)
    assert encode_key(key).hex() == "0001" + "00016700017400000003"
    value = OffsetCommitValue(offset=42, metadata="m", commit_timestamp=1000, leader_epoch=5)
    assert encode_value(value).hex() == (
        "0003" + "000000000000002a" + "00000005" + "00016d" + "00000000000003e8"
    )
    assert decode_key(encode_key(key)) == key
    assert decode_value(key, encode_value(value)) == value


def test_offset_commit_v1_with_expire_timestamp() -> None:
    key = OffsetCommitKey("g", "t", 0)
    value = OffsetCommitValue(offset=1, metadata="", commit_timestamp=2, expire_timestamp=3)
    data = encode_value(value)
    assert data[:2] == b"\x00\x01"
    assert decode_value(key, data) == value


def test_offset_commit_value_v0_and_flexible_v4_read() -> None:
    key = OffsetCommitKey("g", "t", 0)
    v0 = bytes.fromhex("0000" + "0000000000000007" + "0000" + "0000000000000009")
    assert decode_value(key, v0) == OffsetCommitValue(offset=7, commit_timestamp=9)
    v4 = bytes.fromhex("0004" + "0000000000000007" + "00000002" + "01" + "0000000000000009" + "00")
    assert decode_value(key, v4) == OffsetCommitValue(offset=7, commit_timestamp=9, leader_epoch=2)


def test_group_metadata_round_trip_and_golden_prefix() -> None:
    key = GroupMetadataKey("g")
    assert encode_key(key).hex() == "0002" + "000167"
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=3,
        protocol="range",
        leader="m1",
        current_state_timestamp=123,
        members=(MemberMetadata("m1", "c", "/h", 10000, b"ab", b"cd", "i", 300000),),
    )
    data = encode_value(value)
    assert data[:2] == b"\x00\x03"
    assert data[2:12] == b"\x00\x08consumer"
    assert decode_key(encode_key(key)) == key
    assert decode_value(key, data) == value


def test_newer_group_types_are_skipped() -> None:
    assert decode_key(b"\x00\x03\x00\x01g") is None
