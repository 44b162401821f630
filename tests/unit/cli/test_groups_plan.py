"""``strom groups reset-offsets``' plan: each scenario, clamped to [log start, log end]."""

from __future__ import annotations

import pytest

from strom.cli.client_common import CliError
from strom.cli.groups import ResetSpec, plan_reset

EARLIEST = {("t", 0): 5, ("t", 1): 0}
LATEST = {("t", 0): 20, ("t", 1): 8}
COMMITTED = {("t", 0): 10, ("t", 1): 3}
PARTITIONS = sorted(EARLIEST)


def _plan(spec: ResetSpec, for_timestamp: dict[tuple[str, int], int] | None = None) -> list[int]:
    plan = plan_reset(
        spec,
        PARTITIONS,
        earliest=EARLIEST,
        latest=LATEST,
        committed=COMMITTED,
        for_timestamp=for_timestamp or {},
    )
    return [plan[tp] for tp in PARTITIONS]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (ResetSpec("to-earliest"), [5, 0]),
        (ResetSpec("to-latest"), [20, 8]),
        (ResetSpec("to-offset", 7), [7, 7]),
        (ResetSpec("to-offset", 0), [5, 0]),  # below the log start: the log start
        (ResetSpec("to-offset", 100), [20, 8]),  # past the end: the log end
        (ResetSpec("shift-by", 3), [13, 6]),
        (ResetSpec("shift-by", -7), [5, 0]),
        (ResetSpec("shift-by", 9), [19, 8]),
    ],
)
def test_plans(spec: ResetSpec, expected: list[int]) -> None:
    assert _plan(spec) == expected


def test_to_datetime_without_a_later_message_is_the_log_end() -> None:
    assert _plan(ResetSpec("to-datetime", 1), {("t", 0): 12, ("t", 1): -1}) == [12, 8]


def test_shift_by_needs_a_committed_offset() -> None:
    with pytest.raises(CliError, match="t-2: the group has no committed offset"):
        plan_reset(
            ResetSpec("shift-by", 1),
            [("t", 2)],
            earliest={("t", 2): 0},
            latest={("t", 2): 1},
            committed={},
            for_timestamp={},
        )
