"""``strom server`` as a process: ready line, meta.properties, settings errors, signals, faults
set through a file."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from kio.schema.api_versions.v0 import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.errors import ErrorCode
from strom_harness import StartServer, StromServer, strom_command, strom_server_args

from strom.config import parse_properties
from strom.server.network.faults_file import FAULTS_FILE_ENV


def run_strom(*args: str, cwd: Path, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*strom_command(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_ready_line_and_meta_properties(start_server: StartServer, tmp_path: Path) -> None:
    server = start_server()
    assert server.host == "127.0.0.1"
    assert server.port > 0
    assert server.data_dir == tmp_path / "data"
    assert len(server.cluster_id) == 22
    ready_lines = [line for line in server.lines if "ready" in line]
    assert ready_lines == [server.ready_line]
    meta = parse_properties((tmp_path / "data" / "meta.properties").read_text())
    assert meta["version"] == "1"
    assert meta["cluster.id"] == server.cluster_id
    assert meta["node.id"] == "1"
    assert len(meta["directory.id"]) == 22
    with server.connect() as wire:
        assert wire.request(ApiVersionsRequestV0()).error_code == ErrorCode.none
    assert server.stop(signal.SIGTERM) == 0


def test_cluster_id_survives_a_restart(start_server: StartServer) -> None:
    first = start_server()
    cluster_id = first.cluster_id
    assert first.stop(signal.SIGTERM) == 0
    second = start_server()
    assert second.cluster_id == cluster_id
    assert second.stop(signal.SIGINT) == 0


def test_sigterm_finishes_cleanly(start_server: StartServer) -> None:
    server = start_server()
    with server.connect() as wire:
        wire.request(ApiVersionsRequestV0())
        assert server.stop(signal.SIGTERM) == 0
        assert wire.is_closed_by_peer(timeout=5)
    assert any("SIGTERM received" in line for line in server.lines)
    assert server.lines[-1].endswith("stopped")
    assert "Traceback" not in server.output


def test_sigint_finishes_cleanly(start_server: StartServer) -> None:
    server = start_server()
    assert server.stop(signal.SIGINT) == 0
    assert "Traceback" not in server.output


def test_node_id_mismatch_refuses_to_start(start_server: StartServer, tmp_path: Path) -> None:
    assert start_server().stop() == 0
    server = StromServer(
        strom_server_args(data_dir=tmp_path / "data", overrides={"node.id": "2"}), cwd=tmp_path
    )
    assert server.wait_exit(timeout=20) == 1
    assert len(server.lines) == 1, server.output
    assert "node.id=1" in server.lines[0]
    assert "node.id=2" in server.lines[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--override", "num.partitions=zero"], "num.partitions: expected an integer"),
        (
            ["--override", "num.partitions=zero", "--override", "message.max.bytes=big"],
            "num.partitions: expected an integer, got 'zero'; message.max.bytes: expected an",
        ),
        (["--override", "socket.request.max.bytes"], "--override: expected name=value"),
        (["--listener", "nohostport"], "--listener: expected HOST:PORT"),
        (
            ["--override", "listeners=SSL://:9093"],
            "ssl.keystore.location: a TLS listener needs a keystore",
        ),
        (
            ["--override", "controller.quorum.voters=1@localhost:9093"],
            "controller.quorum.voters: set process.roles too",
        ),
        (
            [
                "--override",
                "process.roles=controller",
                "--override",
                "controller.listener.names=CONTROLLER",
                "--override",
                "controller.quorum.voters=1@localhost",
            ],
            "controller.quorum.voters: expected HOST:PORT",
        ),
        (
            [
                "--override",
                "process.roles=controller",
                "--override",
                "controller.quorum.voters=2@localhost:1",
                "--override",
                "controller.listener.names=CONTROLLER",
                "--override",
                "listeners=CONTROLLER://localhost:0",
            ],
            "node.id 1 is not one of the voters (2)",
        ),
        (
            [
                "--override",
                "process.roles=controller",
                "--override",
                "controller.quorum.voters=1@localhost:1",
                "--override",
                "controller.listener.names=CONTROLLER",
                "--override",
                "listeners=CONTROLLER://localhost:0",
            ],
            "is not formatted: run strom storage format --cluster-id",
        ),
        (["missing.properties"], "cannot read properties file"),
        (
            [
                "--override",
                "listeners=SASL_PLAINTEXT://localhost:0",
                "--override",
                "sasl.enabled.mechanisms=PLAIN",
                "--override",
                "java.security.auth.login.config=missing_jaas.conf",
            ],
            "java.security.auth.login.config: missing_jaas.conf: No such file or directory",
        ),
    ],
)
def test_bad_settings_give_one_line_and_exit_1(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = run_strom("server", "--data-dir", str(tmp_path / "data"), *args, cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("strom server: ")
    assert message in lines[0]
    assert not (tmp_path / "data").exists()


def test_properties_file_and_overrides(tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text("# test\nnum.partitions=3\nlog.segment.bytes=many\n")
    result = run_strom("server", str(properties), "--override", "num.partitions=x", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "strom server: num.partitions: expected an integer, got 'x'; "
        "log.segment.bytes: expected an integer, got 'many'"
    )


def test_unknown_settings_are_named_in_one_warning_and_the_server_starts(
    start_server: StartServer,
) -> None:
    server = start_server(
        overrides={"confluent.support.metrics.enable": "false", "num.partitons": "3"}
    )
    warnings = [line for line in server.lines if "unknown setting" in line]
    assert len(warnings) == 1, server.lines
    assert "WARNING" in warnings[0]
    assert "confluent.support.metrics.enable" in warnings[0]
    assert "num.partitons (did you mean num.partitions?)" in warnings[0]
    with server.connect() as wire:
        assert wire.request(ApiVersionsRequestV0()).error_code == ErrorCode.none
    assert server.stop(signal.SIGTERM) == 0


def test_port_in_use(start_server: StartServer, tmp_path: Path) -> None:
    server = start_server()
    result = run_strom(
        "server",
        "--data-dir",
        str(tmp_path / "other"),
        "--listener",
        f"127.0.0.1:{server.port}",
        cwd=tmp_path,
    )
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert f"cannot listen on 127.0.0.1:{server.port}" in lines[0]


def test_help_lists_the_server_command(tmp_path: Path) -> None:
    result = run_strom("--help", cwd=tmp_path)
    assert result.returncode == 0
    assert "server" in result.stdout
    result = run_strom("server", "--help", cwd=tmp_path)
    assert "--data-dir" in result.stdout
    assert "--override" in result.stdout


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole at once: written in place, the watcher may read it empty between
    the truncation and the write, and an empty file means no faults."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def test_faults_from_the_file_the_environment_names(
    start_server: StartServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    faults = tmp_path / "faults.json"
    monkeypatch.setenv(FAULTS_FILE_ENV, str(faults))
    server = start_server()
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    assert admin.list_topics(timeout=10).brokers  # connected, metadata at full speed

    def metadata_seconds() -> float:
        started = time.monotonic()
        admin.list_topics(timeout=10)
        return time.monotonic() - started

    _replace(faults, '{"delays": {"Metadata": 0.4}}')
    deadline = time.monotonic() + 10
    while metadata_seconds() < 0.4:
        assert time.monotonic() < deadline, "the faults file was never applied"
    _replace(faults, "{")  # refused with a log line; the delay stays
    time.sleep(0.3)
    assert metadata_seconds() >= 0.4
    faults.unlink()
    deadline = time.monotonic() + 10
    while metadata_seconds() >= 0.4:
        assert time.monotonic() < deadline, "the faults were never cleared"
    assert any("ignoring the faults file" in line for line in server.lines)
