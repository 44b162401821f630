"""``strom mirror``: its help, and the one-line errors of a bad ``mm2.properties``, an
unknown alias in ``--clusters``, an unreachable cluster and a translate-offsets call without a
target (no broker needed)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from .conftest import Invoke, error_lines


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_help_names_the_file_form_and_the_subcommands(invoke: Invoke) -> None:
    result = invoke(["mirror", "--help"])
    assert result.exit_code == 0
    assert "strom mirror mm2.properties" in result.stdout
    for name in ("run", "translate-offsets"):
        assert f"  {name} " in result.stdout
    for path in (["run"], ["translate-offsets"]):
        assert invoke(["mirror", *path, "--help"]).exit_code == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("A.bootstrap.servers = a:1\n", "clusters: required"),
        (
            "clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\n"
            "A->C.enabled = true\n",
            "A->C.enabled: unknown cluster alias 'C'; clusters are A, B",
        ),
        (
            "clusters = A, B\nA.bootstrap.servers = a:1\nA->B.enabled = true\n",
            "B.bootstrap.servers: required for cluster B",
        ),
    ],
)
def test_a_bad_file_is_one_line_naming_the_setting(
    invoke: Invoke, tmp_path: Path, text: str, message: str
) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text(text)
    result = invoke(["mirror", str(config)])
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line.startswith(f"Error: {config}: {message}")


def test_an_unreachable_cluster_is_named(invoke: Invoke, tmp_path: Path) -> None:
    port = _closed_port()
    config = tmp_path / "mm2.properties"
    config.write_text(
        f"clusters = A, B\nA.bootstrap.servers = 127.0.0.1:{port}\n"
        f"B.bootstrap.servers = 127.0.0.1:{port}\nA->B.enabled = true\n"
        "emit.heartbeats.enabled = false\n"
    )
    result = invoke(["mirror", str(config)])
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert f"cluster A (127.0.0.1:{port}) is unreachable" in line
    assert line.endswith("check A.bootstrap.servers")


def test_an_unknown_alias_in_clusters_is_named(invoke: Invoke, tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text(
        "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\n"
        "A->B.enabled = true\n"
    )
    result = invoke(["mirror", str(config), "--clusters", "C"])
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line == f"Error: {config}: --clusters: unknown cluster alias 'C'; clusters are A, B"


def test_translate_offsets_needs_a_target(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke(["mirror", "translate-offsets", "--group", "g", "--source", "A"])
    assert result.exit_code == 2
    assert "--bootstrap-server, or --config and --target" in result.stderr
    config = tmp_path / "mm2.properties"
    config.write_text("clusters = A, B\nB.bootstrap.servers = b:1\n")
    args = ["mirror", "translate-offsets", "--group", "g", "--source", "C"]
    result = invoke([*args, "--config", str(config), "--target", "B"])
    assert result.exit_code == 2
    assert "'C' is not a cluster of" in result.stderr
