"""A group's offset reset as the console plans it (``strom.console.resets``): the targets
kafka-consumer-groups.sh offers, an offset kept within the partition's range, a timestamp past
every record going to the latest, and no reset while the group has members."""

from __future__ import annotations

import pytest

from strom.console.resets import ResetTarget, check_inactive, new_offset, parse_target


def test_each_target_gives_the_offset_kafkas_tool_would() -> None:
    assert new_offset(ResetTarget("earliest"), 10, 50, None) == 10
    assert new_offset(ResetTarget("latest"), 10, 50, None) == 50
    assert new_offset(ResetTarget("timestamp", 1_700_000_000_000), 10, 50, 23) == 23
    assert new_offset(ResetTarget("offset", 30), 10, 50, None) == 30


def test_an_offset_outside_the_partition_is_kept_within_it() -> None:
    assert new_offset(ResetTarget("offset", 3), 10, 50, None) == 10
    assert new_offset(ResetTarget("offset", 99), 10, 50, None) == 50


def test_a_timestamp_no_record_reaches_resets_to_the_latest() -> None:
    assert new_offset(ResetTarget("timestamp", 1), 10, 50, None) == 50
    assert new_offset(ResetTarget("timestamp", 1), 10, 50, -1) == 50


def test_targets_are_read_from_the_pages_request() -> None:
    assert parse_target({"to": "earliest", "value": "ignored"}) == ResetTarget("earliest")
    assert parse_target({"to": "offset", "value": "12"}) == ResetTarget("offset", 12)
    assert parse_target({"to": "timestamp", "value": 5}) == ResetTarget("timestamp", 5)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"to": "start"}, "to: one of earliest, latest, timestamp, offset"),
        ({"to": "offset"}, "value: an offset, a whole number >= 0"),
        ({"to": "offset", "value": "-3"}, "value: an offset, a whole number >= 0"),
        ({"to": "timestamp", "value": "noon"}, "value: milliseconds since the epoch"),
        ({"to": "offset", "value": True}, "value: an offset"),
    ],
)
def test_a_bad_target_is_refused_saying_what_is_wrong(
    body: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        parse_target(body)


def test_a_group_with_members_is_not_reset() -> None:
    check_inactive("g", "EMPTY")
    check_inactive("g", "DEAD")
    with pytest.raises(ValueError, match="group 'g' is inactive, but the current state is Stable"):
        check_inactive("g", "STABLE")
    with pytest.raises(ValueError, match="current state is PreparingRebalance"):
        check_inactive("g", "PREPARING_REBALANCE")
