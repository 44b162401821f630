"""Offset specs, Spark's offset JSON, rate limiting and range splitting (no Spark, no broker)."""

from __future__ import annotations

import itertools

import pytest

from strom.common import TopicPartition
from strom.spark.offsets import (
    OffsetRange,
    SpecKind,
    from_json_dict,
    parse_offsets_json,
    parse_partitions_json,
    prorate,
    split_ranges,
    to_json_dict,
)

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)
A10 = TopicPartition("a", 10)
B0 = TopicPartition("b", 0)


def test_offsets_json_round_trips_in_spark_order() -> None:
    offsets = {B0: 7, A10: 3, A1: 2}
    value = to_json_dict(offsets)
    assert list(value) == ["a", "b"]
    assert list(value["a"]) == ["1", "10"]  # partitions by number, not text
    assert from_json_dict(value) == offsets


def test_offset_specs() -> None:
    assert parse_offsets_json("o", " Earliest ").kind is SpecKind.EARLIEST
    assert parse_offsets_json("o", "latest").kind is SpecKind.LATEST
    spec = parse_offsets_json("o", '{"a":{"0":23,"1":-2},"b":{"0":-1}}')
    assert spec.offsets == {A0: 23, A1: -2, B0: -1}
    for bad in ('{"a":{"0":-3}}', '{"a":[0]}', '{"a":{"x":1}}', '{"a":{"0":"1"}}', "[", "12"):
        with pytest.raises(ValueError, match="'o'"):
            parse_offsets_json("o", bad)


def test_assign_json() -> None:
    assert parse_partitions_json("assign", '{"b":[0],"a":[1,0]}') == (A0, A1, B0)
    with pytest.raises(ValueError, match="must look like"):
        parse_partitions_json("assign", '{"a":[-1]}')


def test_prorate_shares_the_budget_by_lag() -> None:
    start = {A0: 0, A1: 0, B0: 5}
    latest = {A0: 20, A1: 10, B0: 5}
    assert prorate(start, latest, 10) == {A0: 6, A1: 3, B0: 5}
    assert prorate(start, latest, 100) == latest
    # A share under one offset is rounded up, so a small partition still moves.
    assert prorate({A0: 0, A1: 0}, {A0: 1000, A1: 1}, 10) == {A0: 9, A1: 1}


def test_split_ranges_for_min_partitions() -> None:
    ranges = [OffsetRange("a", 0, 0, 90), OffsetRange("a", 1, 5, 15), OffsetRange("b", 0, 3, 3)]
    assert split_ranges(ranges, None) == ranges[:2]  # empty ranges are dropped
    pieces = split_ranges(ranges, 10)
    assert [(r.partition, r.start, r.end) for r in pieces if r.topic == "a"][-1] == (1, 5, 15)
    assert len([r for r in pieces if r.partition == 0]) == 9
    assert sum(r.size for r in pieces) == 100
    starts = sorted((r.partition, r.start, r.end) for r in pieces)
    assert all(a[2] == b[1] for a, b in itertools.pairwise(starts) if a[0] == b[0])
