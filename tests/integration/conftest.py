"""Fixtures that run real ``strom server`` processes (see ``tests/strom_harness.py``)."""

from __future__ import annotations

import signal
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from strom_harness import StartServer, StromServer, start_strom_server


@pytest.fixture(scope="module")
def strom_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StromServer]:
    """One server shared by a test module; tests must leave it serving."""
    base = tmp_path_factory.mktemp("strom")
    server = start_strom_server(data_dir=base / "data", cwd=base)
    yield server
    server.stop(signal.SIGTERM)


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[StartServer]:
    """Start servers of one's own (``start_server(overrides={...})``); all stopped at the end."""
    servers: list[StromServer] = []

    def start(
        *, overrides: Mapping[str, str] | None = None, data_dir: Path | None = None
    ) -> StromServer:
        server = start_strom_server(
            data_dir=data_dir or tmp_path / "data", cwd=tmp_path, overrides=overrides
        )
        servers.append(server)
        return server

    yield start
    for server in servers:
        if server.process.poll() is None:
            server.stop(signal.SIGKILL)
