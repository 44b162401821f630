"""Fixtures that run real ``strom server`` processes (see ``tests/strom_harness.py``)."""

from __future__ import annotations

import signal
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from strom_harness import StartServer, StromServer, start_strom_server

if TYPE_CHECKING:  # the registry's libraries load only for the tests that use one
    from strom.testing.registry import Registry


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


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ``strom server`` process per module, for clients that only need its address."""
    base = tmp_path_factory.mktemp("strom")
    server = start_strom_server(
        data_dir=base / "data",
        cwd=base,
        overrides={"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3"},
    )
    yield server.bootstrap
    server.stop(signal.SIGTERM)


@pytest.fixture
def registry(bootstrap: str) -> Iterator[Registry]:
    """A schema registry with a ``_schemas`` topic of its own on the module's server."""
    from strom.testing.registry import Registry  # noqa: PLC0415 - see the imports above

    with Registry(bootstrap) as started:
        yield started


@pytest.fixture(scope="module")
def rest_url(bootstrap: str) -> Iterator[str]:
    """A REST proxy (``strom.rest``) in front of the module's server."""
    from strom.rest.app import RestProxy  # noqa: PLC0415 - see the imports above
    from strom.rest.settings import RestSettings  # noqa: PLC0415

    settings = RestSettings.from_properties(
        {"bootstrap.servers": bootstrap, "listeners": "http://127.0.0.1:0"}
    )
    proxy = RestProxy(settings)
    proxy.start()
    yield proxy.url
    proxy.stop()
