"""No broker at the address: one ``Error:`` line and exit status 1, quickly, never a hang.

Nothing listens on 127.0.0.1:1, so librdkafka's connection is refused at once and every
command must give up as soon as librdkafka reports all brokers down.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Invoke, error_lines

UNREACHABLE = "127.0.0.1:1"
EXPECTED = f"Error: cannot reach a broker at {UNREACHABLE}: "
STROM = [sys.executable, "-c", "from strom.cli.main import main; main()"]

CLIENT_COMMANDS = [
    ["topics", "create", "t", "--partitions", "1"],
    ["topics", "list"],
    ["topics", "describe", "t"],
    ["topics", "alter", "t", "--partitions", "2"],
    ["topics", "delete", "t"],
    ["configs", "describe", "--entity-type", "topics", "--entity-name", "t"],
    ["configs", "alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "a=b"],
    ["produce", "t"],
    ["consume", "t"],
    ["consume", "t", "--group", "g"],
]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("args", CLIENT_COMMANDS, ids=" ".join)
def test_unreachable_broker_is_one_line(invoke: Invoke, args: list[str]) -> None:
    result = invoke([*args, "--bootstrap-server", UNREACHABLE], input="a line\n")
    assert result.exit_code == 1, result.output
    lines = error_lines(result)
    assert len(lines) == 1, lines
    assert lines[0].startswith(EXPECTED), lines
    assert "Connection refused" in lines[0]
    assert lines[0].endswith("is the server running?")
    assert result.stdout == ""


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "args",
    [
        ["balance", "plan", "--add-broker", "4"],
        ["balance", "execute", "--add-broker", "4"],
        ["balance", "status"],
        ["balance", "cancel"],
        ["cluster", "remove-broker", "4"],
    ],
    ids=" ".join,
)
def test_balancing_against_an_unreachable_cluster_is_one_line(
    invoke: Invoke, args: list[str]
) -> None:
    result = invoke([*args, "--bootstrap-server", UNREACHABLE])
    assert result.exit_code == 1, result.output
    assert error_lines(result) == [
        f"Error: cannot reach {UNREACHABLE} (Connection refused); is the server running?"
    ]


@pytest.mark.timeout(20)
def test_bootstrap_from_command_config_is_used(invoke: Invoke, tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text(f"bootstrap.servers={UNREACHABLE}\n")
    result = invoke(["topics", "list", "--command-config", str(config)])
    assert result.exit_code == 1
    assert error_lines(result)[0].startswith(EXPECTED)


@pytest.mark.timeout(20)
def test_bootstrap_server_option_wins_over_command_config(invoke: Invoke, tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("bootstrap.servers=127.0.0.1:2\n")
    result = invoke(
        ["topics", "list", "--command-config", str(config), "--bootstrap-server", UNREACHABLE]
    )
    assert error_lines(result)[0].startswith(EXPECTED)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "args", [["topics", "list"], ["consume", "t"], ["produce", "t"]], ids=" ".join
)
def test_real_process_prints_one_line_and_no_traceback(args: list[str]) -> None:
    process = subprocess.run(
        [*STROM, *args, "--bootstrap-server", UNREACHABLE],
        input=b"a line\n",
        capture_output=True,
        timeout=20,
        check=False,
    )
    assert process.returncode == 1
    stderr = process.stderr.decode()
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith(EXPECTED)
    assert process.stdout == b""
