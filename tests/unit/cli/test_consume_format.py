"""``strom consume``: the output line (Kafka's DefaultMessageFormatter), --offset, and where
reading starts."""

from __future__ import annotations

import click
import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_STORED,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Message,
)

from strom.cli.consume import PrintOptions, StartPlan, format_message, parse_offset, plan_start

ALL = PrintOptions(key=True, headers=True, timestamp=True, partition=True, offset=True)


def message(
    *,
    key: bytes | None = b"k1",
    value: bytes | None = b"hello",
    headers: list[tuple[str, str | bytes | None]] | None = None,
    timestamp: tuple[int, int] = (TIMESTAMP_CREATE_TIME, 1700000000123),
) -> Message:
    return Message(
        topic="orders",
        partition=2,
        offset=41,
        key=key,
        value=value,
        headers=headers,
        timestamp=timestamp,
    )


def test_value_only_by_default() -> None:
    assert format_message(message(), PrintOptions()) == "hello"


def test_every_field_in_kafkas_order() -> None:
    line = format_message(message(headers=[("source", b"cli"), ("v", b"2")]), ALL)
    assert line == "CreateTime:1700000000123\tPartition:2\tOffset:41\tsource:cli,v:2\tk1\thello"


def test_separator_goes_between_every_field() -> None:
    options = PrintOptions(key=True, offset=True, separator=" | ")
    assert format_message(message(), options) == "Offset:41 | k1 | hello"


def test_missing_parts_print_as_kafka_prints_them() -> None:
    line = format_message(
        message(key=None, value=None, timestamp=(TIMESTAMP_NOT_AVAILABLE, 0)),
        PrintOptions(key=True, headers=True, timestamp=True),
    )
    assert line == "NO_TIMESTAMP\tNO_HEADERS\tnull\tnull"


def test_log_append_time_and_null_header_value() -> None:
    line = format_message(
        message(headers=[("h", None)], timestamp=(TIMESTAMP_LOG_APPEND_TIME, 5)),
        PrintOptions(headers=True, timestamp=True),
    )
    assert line == "LogAppendTime:5\th:null\thello"


def test_binary_is_decoded_with_replacement() -> None:
    line = format_message(message(key=b"\xffk", value=b"a\x80b"), PrintOptions(key=True))
    assert line == "\ufffdk\ta\ufffdb"


def test_empty_value_is_an_empty_line() -> None:
    assert format_message(message(value=b""), PrintOptions()) == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), ("1500", 1500), ("earliest", OFFSET_BEGINNING), ("latest", OFFSET_END)],
)
def test_parse_offset(text: str, expected: int) -> None:
    assert parse_offset(text) == expected


@pytest.mark.parametrize("text", ["-1", "x", "", "1.5"])
def test_parse_offset_refuses(text: str) -> None:
    with pytest.raises(click.BadParameter):
        parse_offset(text)


def plan(
    *,
    group: str | None = None,
    partition: int | None = None,
    offset: int | None = None,
    from_beginning: bool = False,
) -> StartPlan:
    return plan_start(
        group=group,
        partition=partition,
        offset=offset,
        from_beginning=from_beginning,
        partitions=[0, 1, 2],
    )


def test_group_alone_subscribes() -> None:
    assert plan(group="g").subscribe
    assert plan(group="g", from_beginning=True).subscribe


def test_without_group_every_partition_from_the_end() -> None:
    assert plan() == StartPlan(subscribe=False, partitions=[0, 1, 2], offset=OFFSET_END)


def test_from_beginning_without_group() -> None:
    assert plan(from_beginning=True).offset == OFFSET_BEGINNING


def test_offset_applies_to_every_partition_without_group() -> None:
    assert plan(offset=7) == StartPlan(subscribe=False, partitions=[0, 1, 2], offset=7)


def test_partition_with_offset() -> None:
    assert plan(partition=1, offset=3) == StartPlan(subscribe=False, partitions=[1], offset=3)


def test_partition_with_group_starts_at_the_committed_offset() -> None:
    assert plan(group="g", partition=2) == StartPlan(
        subscribe=False, partitions=[2], offset=OFFSET_STORED
    )
    assert plan(group="g", partition=2, offset=OFFSET_BEGINNING).offset == OFFSET_BEGINNING
