"""``--help`` works for every client command and shows examples."""

from __future__ import annotations

import pytest

from .conftest import Invoke

LEAF_COMMANDS = [
    ["topics", "create"],
    ["topics", "list"],
    ["topics", "describe"],
    ["topics", "alter"],
    ["topics", "delete"],
    ["configs", "describe"],
    ["configs", "alter"],
    ["groups", "list"],
    ["groups", "describe"],
    ["groups", "delete"],
    ["groups", "reset-offsets"],
    ["produce"],
    ["consume"],
]


def test_top_level_help_lists_the_client_commands(invoke: Invoke) -> None:
    result = invoke(["--help"])
    assert result.exit_code == 0
    for name in ("topics", "configs", "groups", "produce", "consume"):
        assert f"  {name} " in result.stdout


@pytest.mark.parametrize("group", ["topics", "configs", "groups"])
def test_group_help_lists_its_subcommands(invoke: Invoke, group: str) -> None:
    result = invoke([group, "--help"])
    assert result.exit_code == 0
    for path in LEAF_COMMANDS:
        if path[0] == group:
            assert f"  {path[1]} " in result.stdout


@pytest.mark.parametrize("path", LEAF_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_every_command_has_help_with_examples(invoke: Invoke, path: list[str], flag: str) -> None:
    result = invoke([*path, flag])
    assert result.exit_code == 0, result.output
    assert "Examples:" in result.stdout
    assert f"strom {' '.join(path)}" in result.stdout
    assert "--bootstrap-server" in result.stdout
    assert "--command-config" in result.stdout
    assert "localhost:9092" in result.stdout


def test_consume_help_documents_every_print_option(invoke: Invoke) -> None:
    text = invoke(["consume", "--help"]).stdout
    for option in (
        "--from-beginning",
        "--offset",
        "--partition",
        "--group",
        "--max-messages",
        "--timeout-ms",
        "--isolation-level",
        "--print-key",
        "--print-headers",
        "--print-timestamp",
        "--print-partition",
        "--print-offset",
        "--key-separator",
    ):
        assert option in text


def test_produce_help_documents_its_options(invoke: Invoke) -> None:
    text = invoke(["produce", "--help"]).stdout
    for option in (
        "--key-separator",
        "--header",
        "--partition",
        "--compression",
        "--acks",
        "--property",
    ):
        assert option in text


@pytest.mark.parametrize(("typed", "hint"), [("topic", "topics"), ("group", "groups")])
def test_a_mistyped_command_gets_a_suggestion(invoke: Invoke, typed: str, hint: str) -> None:
    result = invoke([typed, "list"])
    assert result.exit_code == 2
    assert f"Error: No such command {typed!r}. Did you mean {hint!r}?" in result.stderr


def test_an_unknown_command_is_named(invoke: Invoke) -> None:
    result = invoke(["frobnicate"])
    assert result.exit_code == 2
    assert "Error: No such command 'frobnicate'." in result.stderr
