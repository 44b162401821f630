"""A real ``strom server`` for the end-to-end tests, and a way to run ``strom`` commands.

The server runs as a child process on a free port of 127.0.0.1 (``--listener 127.0.0.1:0``);
its log goes to a file, where the fixture waits for the ready line. Commands run as
subprocesses, exactly as a user runs them.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

_STROM_SCRIPT = Path(sys.executable).with_name("strom")
STROM = (
    [str(_STROM_SCRIPT)]
    if _STROM_SCRIPT.exists()
    else [sys.executable, "-c", "from strom.cli.main import main; main()"]
)
READY = re.compile(r"ready: listening on (?P<address>\S+), data dir .*, node id (?P<node_id>\d+)")
SERVER_OVERRIDES = {"num.partitions": "2"}
"""Settings the tests check come back (a non-default broker default, a static config)."""


@dataclass(frozen=True)
class Result:
    """What a ``strom`` command did: exit status, stdout and stderr as text."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


@dataclass(frozen=True)
class Server:
    bootstrap: str
    node_id: int
    log: Path

    def run(
        self, *args: str, input: bytes | str = b"", ok: bool = True, timeout: float = 90
    ) -> Result:
        """Run ``strom ARGS --bootstrap-server <this server>``; with ``ok``, require success."""
        data = input.encode() if isinstance(input, str) else input
        completed = subprocess.run(
            [*STROM, *args, "--bootstrap-server", self.bootstrap],
            input=data,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        result = Result(
            completed.returncode,
            completed.stdout.decode("utf-8"),
            completed.stderr.decode("utf-8"),
        )
        if ok:
            assert result.returncode == 0, f"strom {' '.join(args)}: {result}"
            assert "Traceback" not in result.stderr
        return result


def _wait_ready(process: subprocess.Popen[bytes], log: Path, timeout: float) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text(encoding="utf-8", errors="replace")
        match = READY.search(text)
        if match:
            return match
        if process.poll() is not None:
            pytest.fail(f"strom server exited ({process.returncode}) before ready:\n{text}")
        if time.monotonic() > deadline:
            pytest.fail(f"strom server not ready within {timeout} s:\n{text}")
        time.sleep(0.05)


def _skip_unless_metadata_is_served(server: Server) -> None:
    """Skip while the handler module exists but the broker does not serve Metadata yet (the
    broker is assembled API by API); librdkafka then refuses to send any request."""
    probe = server.run("topics", "list", ok=False)
    if "Required feature not supported by broker" in probe.stderr:
        pytest.skip(f"the running server does not serve Metadata yet: {probe.stderr.strip()}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for a test module; tests use topic names of their own."""
    base = tmp_path_factory.mktemp("strom-e2e")
    log = base / "server.log"
    args = [*STROM, "server", "--listener", "127.0.0.1:0", "--data-dir", str(base / "data")]
    for name, value in SERVER_OVERRIDES.items():
        args += ["--override", f"{name}={value}"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, cwd=base, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        ready = _wait_ready(process, log, timeout=15)
        server = Server(ready["address"], int(ready["node_id"]), log)
        _skip_unless_metadata_is_served(server)
        yield server
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
