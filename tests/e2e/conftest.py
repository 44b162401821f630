"""A real ``strom server`` for the end-to-end tests, and a way to run ``strom`` commands.

The server is the integration tests' (``tests/strom_harness.py``): a child process on a free port
of 127.0.0.1, waited for until its ready line. Commands run as subprocesses, exactly as a user
runs them.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from strom_harness import StromServer, start_strom_server, strom_command

from strom.testing.postgres import Postgres, PostgresUnavailable


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """The run's one PostgreSQL (``wal_level=logical``, for the JDBC and CDC connectors), in a
    temporary directory as the ``postgres`` user; skipped, saying why, where it cannot run."""
    try:
        server = Postgres.start()
    except PostgresUnavailable as error:
        pytest.skip(f"no PostgreSQL: {error}")
    yield server
    server.stop()


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
    """The running server, and ``strom`` commands pointed at it."""

    process: StromServer

    @property
    def bootstrap(self) -> str:
        return self.process.bootstrap

    @property
    def node_id(self) -> int:
        return self.process.node_id

    def run(
        self, *args: str, input: bytes | str = b"", ok: bool = True, timeout: float = 90
    ) -> Result:
        """Run ``strom ARGS --bootstrap-server <this server>``; with ``ok``, require success."""
        data = input.encode() if isinstance(input, str) else input
        completed = subprocess.run(
            [*strom_command(), *args, "--bootstrap-server", self.bootstrap],
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


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for a test module; tests use topic names of their own."""
    base = tmp_path_factory.mktemp("strom-e2e")
    process = start_strom_server(data_dir=base / "data", cwd=base, overrides=SERVER_OVERRIDES)
    yield Server(process)
    process.stop(signal.SIGTERM)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """The run's one headless Chromium (see ``browser.py``)."""
    from e2e.browser import headless_chromium  # noqa: PLC0415

    yield from headless_chromium()
