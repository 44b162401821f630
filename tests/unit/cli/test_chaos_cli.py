"""``strom chaos``: its options and its list, without a cluster (the runs are integration
tests: tests/integration/test_chaos.py)."""

from __future__ import annotations

import pytest

from strom.cli.chaos import parse_duration
from strom.cli.client_common import PIPED_WIDTH, CliError
from strom.testing.chaos.scenarios import SCENARIOS

from .conftest import Invoke


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("1.5m", 90.0), ("500ms", 0.5)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-3s", "5h"])
def test_a_bad_duration_is_one_clear_line(text: str) -> None:
    with pytest.raises(CliError, match="is not a duration such as 60s"):
        parse_duration(text)


def test_list_shows_every_scenario(invoke: Invoke) -> None:
    result = invoke(["chaos", "list"])
    assert result.exit_code == 0
    for scenario in SCENARIOS:
        assert scenario.name in result.stdout


@pytest.mark.parametrize(("columns", "width"), [("", PIPED_WIDTH), ("120", 120)])
def test_list_to_a_pipe_wraps_at_a_readable_width(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, columns: str, width: int
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    lines = invoke(["chaos", "list"]).stdout.splitlines()
    assert max(len(line) for line in lines) <= width
    assert "leader-kill" in lines[1]


def test_the_issue_s_scenarios_are_all_there() -> None:
    assert {s.number for s in SCENARIOS} >= set(range(1, 15))
    assert len({s.name for s in SCENARIOS}) == len(SCENARIOS)


def test_run_has_help_with_examples(invoke: Invoke) -> None:
    result = invoke(["chaos", "run", "--help"])
    assert result.exit_code == 0
    assert "strom chaos run --scenario leader-kill" in result.stdout
