"""PRINT's lines and format guesses (`strom.sql.printer`), as ksqlDB's PRINT shows records."""

from __future__ import annotations

import struct

import pytest

from strom.sql.printer import formats, line, topic_named


def test_a_record_is_one_line_with_its_time_key_value_and_partition() -> None:
    assert line(1_700_000_000_123, b"o1", b'{"ITEM":"apple"}', 1) == (
        'rowtime: 2023/11/14 22:13:20.123 Z, key: o1, value: {"ITEM":"apple"}, partition: 1'
    )
    assert line(0, None, None, 0) == (
        "rowtime: 1970/01/01 00:00:00.000 Z, key: <null>, value: <null>, partition: 0"
    )
    assert line(0, struct.pack(">i", -7), b"\xff\x00\x01", 0).split(", ")[1:3] == [
        "key: -7",
        "value: 0xFF0001",
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"a": 1}', "JSON"),
        (b"[1, 2]", "JSON"),
        (b"apple", "KAFKA_STRING"),
        (b"12", "KAFKA_STRING"),
        (b"\xff\x00\x00\x01", "KAFKA_INT"),
        (b"\xff" * 8, "KAFKA_BIGINT"),
        (b"\xff\xfe\xfd", "unknown"),
    ],
)
def test_formats_are_guessed_from_the_bytes(data: bytes, expected: str) -> None:
    assert formats(data, None)[0] == expected


def test_a_topic_is_found_by_its_name_then_in_any_case() -> None:
    topics = {"orders", "Mixed", "TOTALS", "dup", "DUP"}
    assert topic_named("ORDERS", topics) == "orders"
    assert topic_named("TOTALS", topics) == "TOTALS"
    assert topic_named("MIXED", topics) == "Mixed"
    assert topic_named("Dup", topics) is None  # two in other cases: neither is meant
    assert topic_named("nope", topics) is None
