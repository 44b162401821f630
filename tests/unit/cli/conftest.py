"""Helpers for running ``strom`` commands in-process with click's CliRunner."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from click.testing import CliRunner, Result

from strom.cli.main import cli

Invoke = Callable[..., Result]


@pytest.fixture
def invoke() -> Invoke:
    """``invoke(["topics", "list"], input="...")``: run a command, return click's Result."""
    runner = CliRunner()

    def run(args: Sequence[str], input: str | bytes | None = None) -> Result:
        return runner.invoke(cli, list(args), input=input)

    return run


def error_lines(result: Result) -> list[str]:
    """The non-empty lines the command wrote to stderr."""
    return [line for line in result.stderr.splitlines() if line.strip()]
