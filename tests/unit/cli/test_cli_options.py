"""Bad options and arguments: one ``Error:`` line, exit status 2, before any connection.

Every case points at 127.0.0.1:1 (nothing listens there): a command that wrongly tried to
connect before checking its options would fail with exit status 1 instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Invoke, error_lines

UNREACHABLE = ["--bootstrap-server", "127.0.0.1:1"]

USAGE_ERRORS = [
    (["topics", "create", "t", "--config", "retention.ms"], "'--config'"),
    (["topics", "create", "t", "--config", "=5"], "'--config'"),
    (["topics", "create", "t", "--partitions", "0"], "'--partitions'"),
    (["topics", "create", "t", "--partitions", "many"], "'--partitions'"),
    (["topics", "create", "t", "--replication-factor", "0"], "'--replication-factor'"),
    (["topics", "create"], "Missing argument 'TOPIC'"),
    (["topics", "alter", "t"], "nothing to change"),
    (["topics", "alter", "t", "--config", "oops"], "'--config'"),
    (
        ["topics", "alter", "t", "--config", "retention.ms=1", "--delete-config", "retention.ms"],
        "both added and deleted: retention.ms",
    ),
    (["topics", "alter", "t", "--partitions", "-1"], "'--partitions'"),
    (["topics", "delete"], "Missing argument"),
    (["topics", "frobnicate"], "No such command 'frobnicate'"),
    (["configs", "describe", "--entity-name", "t"], "'--entity-type'"),
    (
        ["configs", "describe", "--entity-type", "broker-loggers", "--entity-name", "1"],
        "'--entity-type'",
    ),
    (["configs", "describe", "--entity-type", "topics"], "'--entity-name'"),
    (["configs", "describe", "--entity-type", "brokers", "--entity-name", "one"], "broker"),
    (["configs", "alter", "--entity-type", "topics", "--entity-name", "t"], "nothing to change"),
    (
        ["configs", "alter", "--entity-type", "topics", "--entity-name", "t", "--add-config", "a"],
        "'--add-config'",
    ),
    (
        [
            "configs",
            "alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "t",
            "--add-config",
            "cleanup.policy=[compact,delete",
        ],
        "unbalanced",
    ),
    (
        [
            "configs",
            "alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "t",
            "--add-config",
            "a=1",
            "--delete-config",
            "b,a",
        ],
        "both added and deleted: a",
    ),
    (["produce", "t", "--acks", "2"], "'--acks'"),
    (["produce", "t", "--acks", "most"], "'--acks'"),
    (["produce", "t", "--compression", "brotli"], "'--compression'"),
    (["produce", "t", "--partition", "-1"], "'--partition'"),
    (["produce", "t", "--header", "no-equals-sign"], "'--header'"),
    (["produce", "t", "--property", "linger.ms"], "'--property'"),
    (["produce", "t", "--key-separator", ""], "'--key-separator'"),
    (["produce"], "Missing argument 'TOPIC'"),
    (["consume", "t", "--offset", "-5"], "'--offset'"),
    (["consume", "t", "--offset", "first"], "'--offset'"),
    (["consume", "t", "--from-beginning", "--offset", "3"], "--from-beginning or --offset"),
    (["consume", "t", "--group", "g", "--offset", "3"], "needs --partition"),
    (["consume", "t", "--max-messages", "0"], "'--max-messages'"),
    (["consume", "t", "--timeout-ms", "0"], "'--timeout-ms'"),
    (["consume", "t", "--isolation-level", "serializable"], "'--isolation-level'"),
    (["consume", "t", "--property", "fetch.min.bytes"], "'--property'"),
    (["consume", "t", "--command-config", "/nonexistent/client.properties"], "--command-config"),
    (
        ["metadata-quorum", "--command-config", __file__, "describe", "--status"],
        "metadata-quorum describe does not take --command-config",
    ),
    (["transactions", "--bootstrap-server", "127.0.0.1:1", "nope"], "No such command 'nope'"),
]


@pytest.mark.parametrize(("args", "expected"), USAGE_ERRORS, ids=str)
def test_usage_error_is_one_line_with_exit_status_2(
    invoke: Invoke, args: list[str], expected: str
) -> None:
    result = invoke([*args, *UNREACHABLE])
    assert result.exit_code == 2, result.output
    lines = error_lines(result)
    assert len(lines) == 1, lines
    assert lines[0].startswith("Error: ")
    assert expected in lines[0]
    assert result.stdout == ""
    assert "Traceback" not in result.output


def test_bad_line_in_command_config_names_the_file(invoke: Invoke, tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("# a comment\nclient.id=x\nthis line has no separator\n")
    result = invoke(["topics", "list", "--command-config", str(config), *UNREACHABLE])
    assert result.exit_code == 1
    assert error_lines(result) == [
        f"Error: {config}: line 3: expected name=value, got 'this line has no separator'"
    ]


def test_unknown_client_setting_is_one_line(invoke: Invoke, tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("no.such.setting=1\n")
    result = invoke(["topics", "list", "--command-config", str(config), *UNREACHABLE])
    assert result.exit_code == 1
    lines = error_lines(result)
    assert len(lines) == 1
    assert lines[0].startswith("Error: ")
    assert "no.such.setting" in lines[0]


def test_unknown_producer_property_is_one_line(invoke: Invoke) -> None:
    result = invoke(["produce", "t", "--property", "no.such.setting=1", *UNREACHABLE], input="")
    assert result.exit_code == 1
    lines = error_lines(result)
    assert len(lines) == 1
    assert "no.such.setting" in lines[0]


def test_invalid_value_of_a_client_setting_is_one_line(invoke: Invoke) -> None:
    result = invoke(["consume", "t", "--property", "fetch.wait.max.ms=soon", *UNREACHABLE])
    assert result.exit_code == 1
    lines = error_lines(result)
    assert len(lines) == 1
    assert "fetch.wait.max.ms" in lines[0]


@pytest.mark.parametrize(
    ("command", "setting", "message"),
    [
        (["produce", "t"], "linger.ms=soon", "Error: invalid value 'soon' for linger.ms"),
        (["produce", "t"], "acks=some", "Error: invalid value 'some' for acks"),
        (["consume", "t"], "fetch.wait.max.ms=x", "Error: invalid value 'x' for fetch.wait.max.ms"),
        (["consume", "t"], "no.such.setting=1", "Error: unknown setting no.such.setting"),
    ],
)
def test_a_refused_client_setting_is_named_as_typed(
    invoke: Invoke, command: list[str], setting: str, message: str
) -> None:
    """librdkafka reports an alias under its own name (linger.ms as queue.buffering.max.ms)."""
    result = invoke([*command, "--property", setting, *UNREACHABLE], input="")
    assert result.exit_code == 1
    assert error_lines(result) == [message]


def test_a_refused_command_config_setting_is_named_as_typed(invoke: Invoke, tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("compression.type=zip\n")
    result = invoke(["topics", "list", "--command-config", str(config), *UNREACHABLE])
    assert result.exit_code == 1
    assert error_lines(result) == ["Error: invalid value 'zip' for compression.type"]


@pytest.mark.parametrize("option", ["--bootstrap-server", "--bootstrap-controller"])
def test_metadata_quorum_takes_its_connection_before_the_verb(invoke: Invoke, option: str) -> None:
    result = invoke(["metadata-quorum", option, "127.0.0.1:1", "describe", "--status"])
    assert result.exit_code == 1, result.output
    assert error_lines(result) == [
        "Error: cannot reach 127.0.0.1:1 (Connection refused); is the server running?"
    ]
