"""Kafka's argument order: the tools with verbs take ``--bootstrap-server`` before the verb,
as ``kafka-metadata-quorum.sh --bootstrap-server X describe --status`` does, or after it.
Subprocesses against a real ``strom server``."""

from __future__ import annotations

import subprocess

import pytest
from strom_harness import strom_command

from .conftest import Server

TIMEOUT = 60.0
UNREACHABLE = "127.0.0.1:1"


def strom(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*strom_command(), *args], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


@pytest.mark.parametrize(
    ("tool", "verb"),
    [
        ("metadata-quorum", ["describe", "--status"]),
        ("transactions", ["list"]),
        ("features", ["describe"]),
        ("topics", ["list"]),
        ("groups", ["list"]),
        ("configs", ["describe", "--entity-type", "brokers", "--entity-name", "1"]),
        ("users", ["scram", "describe"]),
    ],
)
def test_connection_options_before_the_verb(server: Server, tool: str, verb: list[str]) -> None:
    result = strom(tool, "--bootstrap-server", server.bootstrap, *verb)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def test_metadata_quorum_in_kafkas_order_prints_the_status(server: Server) -> None:
    result = strom(
        "metadata-quorum", "--bootstrap-server", server.bootstrap, "describe", "--status"
    )
    assert result.returncode == 0, result.stderr
    assert "LeaderId:" in result.stdout


def test_the_option_after_the_verb_wins(server: Server) -> None:
    result = strom(
        "topics", "--bootstrap-server", UNREACHABLE, "list", "--bootstrap-server", server.bootstrap
    )
    assert result.returncode == 0, result.stderr


def test_the_option_before_the_verb_is_used(server: Server) -> None:
    result = strom("topics", "--bootstrap-server", UNREACHABLE, "list")
    assert result.returncode == 1
    assert UNREACHABLE in result.stderr
