"""Real strom brokers for tests: in-process (own event loop thread), in the caller's event loop,
or as a ``strom server`` child process. Each one listens on an ephemeral port and keeps its data
in a directory of its own (a temporary one, removed on stop, unless one is given).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Coroutine, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from strom.config import ServerConfig
from strom.protocol.kafka_releases import release_versions
from strom.server.eventloop import new_event_loop
from strom.server.network.faults import Faults
from strom.server.node import Node as ServerNode
from strom.testing.security import Security, SecurityFiles

__all__ = ["AsyncBroker", "Broker", "BrokerStartError", "unique_topic_name"]

TEST_DEFAULTS: Mapping[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.num.partitions": "5",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "1000",
}
"""Settings that make a test broker quick to use (overridable): groups form at once, the
offsets and transaction state topics are small, and timed-out transactions abort soon."""

_READY = re.compile(r"ready: listening on (?P<address>\S+),")
_names = itertools.count()


class BrokerStartError(RuntimeError):
    """The broker did not start; the message says why."""


def unique_topic_name(prefix: str = "test") -> str:
    """A topic name no other test of this process (or another) has used."""
    return f"{prefix}-{os.getpid()}-{next(_names)}-{uuid.uuid4().hex[:8]}"


class _ClientConfigs:
    """Client settings pointing at a started broker (confluent-kafka's names); a secured
    broker's include how to connect as its first user."""

    bootstrap_servers: str
    security: SecurityFiles | None = None

    @property
    def _base(self) -> dict[str, Any]:
        secured = {} if self.security is None else self.security.client_config()
        return {"bootstrap.servers": self.bootstrap_servers, **secured}

    def producer_config(self, **extra: Any) -> dict[str, Any]:
        return {**self._base, **extra}

    def consumer_config(self, group_id: str | None = None, **extra: Any) -> dict[str, Any]:
        """From the earliest offset, in a group of its own unless ``group_id`` is given."""
        return {
            **self._base,
            "group.id": group_id or unique_topic_name("group"),
            "auto.offset.reset": "earliest",
            **extra,
        }

    def admin_config(self, **extra: Any) -> dict[str, Any]:
        return {**self._base, **extra}

    def create_topic(
        self,
        name: str | None = None,
        *,
        partitions: int = 1,
        config: Mapping[str, str] | None = None,
    ) -> str:
        """Create a topic (a unique name unless given) and wait until it exists."""
        from confluent_kafka.admin import AdminClient  # noqa: PLC0415 - client only
        from confluent_kafka.cimpl import NewTopic  # noqa: PLC0415

        topic = name or unique_topic_name()
        admin = AdminClient(self.admin_config())
        futures = admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, config=dict(config or {}))],
            operation_timeout=10,
        )
        futures[topic].result(timeout=30)
        return topic


def _settings(config: Mapping[str, object] | None) -> dict[str, str]:
    """The test defaults overridden by the caller's settings, as strings."""
    return {**TEST_DEFAULTS, **{name: str(value) for name, value in (config or {}).items()}}


def _listener_settings(host: str, security: SecurityFiles | None) -> dict[str, str]:
    """One listener on an ephemeral port, named after its security protocol."""
    if security is None:
        return {"listeners": f"PLAINTEXT://{host}:0"}
    protocol = security.security.protocol
    return {"listeners": f"{protocol}://{host}:0", **security.server_settings()}


def _server_config(
    data_dir: Path, host: str, config: Mapping[str, object] | None, security: SecurityFiles | None
) -> ServerConfig:
    values = {**_listener_settings(host, security), **_settings(config)}
    values["log.dirs"] = str(data_dir)
    return ServerConfig(values)


class _DataDir:
    """The given directory, or a temporary one removed by ``cleanup``."""

    def __init__(self, given: str | os.PathLike[str] | None) -> None:
        self._temporary = given is None
        self.path = Path(tempfile.mkdtemp(prefix="strom-")) if given is None else Path(given)

    def cleanup(self) -> None:
        if self._temporary:
            shutil.rmtree(self.path, ignore_errors=True)


class AsyncBroker(_ClientConfigs):
    """A broker in the caller's event loop: ``async with AsyncBroker() as broker: ...``.

    ``create_topic`` is synchronous and talks to the broker over the network: from a coroutine,
    call it through ``await asyncio.to_thread(broker.create_topic)``.
    """

    def __init__(
        self,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        config: Mapping[str, object] | None = None,
        kafka_version: str | None = None,
        host: str = "127.0.0.1",
        security: Security | SecurityFiles | None = None,
    ) -> None:
        """``security``: a secured listener (generated certificates and users) instead of
        PLAINTEXT."""
        self._data_dir = _DataDir(data_dir)
        self._security_dir = _DataDir(None) if isinstance(security, Security) else None
        self.security = _security_files(security, self._security_dir, host)
        if self.security is not None:
            self.security.bootstrap(self._data_dir.path)
        self.faults = Faults()
        """Inject errors, delays and connection failures (see docs/testing.md)."""
        self.server = ServerNode(
            _server_config(self._data_dir.path, host, config, self.security),
            emulate_kafka_version=kafka_version,
            faults=self.faults,
        )
        self.bootstrap_servers = ""

    @property
    def data_dir(self) -> Path:
        return self._data_dir.path

    async def start(self) -> None:
        await self.server.start()
        self.bootstrap_servers = str(self.server.bound_address)

    async def stop(self) -> None:
        try:
            await self.server.stop()
        finally:
            self._data_dir.cleanup()
            if self._security_dir is not None:
                self._security_dir.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()


class Broker(_ClientConfigs):
    """A real broker for a test: ``with Broker() as broker: broker.bootstrap_servers``.

    By default it runs in this process, on an event loop thread of its own (starting takes a
    fraction of a second); ``process=True`` runs ``strom server`` as a child process instead
    (fault injection then is not available).
    """

    def __init__(
        self,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        config: Mapping[str, object] | None = None,
        kafka_version: str | None = None,
        host: str = "127.0.0.1",
        process: bool = False,
        security: Security | None = None,
    ) -> None:
        """``security``: a secured listener (generated certificates and users, see
        ``strom.testing.security``) instead of PLAINTEXT."""
        if kafka_version is not None:
            release_versions(kafka_version)  # an unknown release fails here, not in start
        self._data_dir = _DataDir(data_dir)
        self._security_dir = None if security is None else _DataDir(None)
        self.security = _security_files(security, self._security_dir, host)
        self._config = dict(config or {})
        self._kafka_version = kafka_version
        self._host = host
        self._process = process
        self._inner: AsyncBroker | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._child: subprocess.Popen[str] | None = None
        self.bootstrap_servers = ""

    @property
    def data_dir(self) -> Path:
        return self._data_dir.path

    @property
    def pid(self) -> int | None:
        """The ``strom server`` child's process id (``process=True``, once started)."""
        return None if self._child is None else self._child.pid

    @property
    def faults(self) -> Faults:
        """Inject errors, delays and connection failures (in-process brokers only)."""
        if self._inner is None:
            raise RuntimeError("faults need a started in-process broker (process=False)")
        return self._inner.faults

    def start(self) -> None:
        if self._process:
            self._start_process()
        else:
            self._start_thread()

    def stop(self) -> None:
        try:
            if self._child is not None:
                self._stop_process()
            elif self._loop is not None:
                self._stop_thread()
        finally:
            self._data_dir.cleanup()
            if self._security_dir is not None:
                self._security_dir.cleanup()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # --- in-process --------------------------------------------------------------------------

    def _start_thread(self) -> None:
        self._inner = AsyncBroker(
            data_dir=self._data_dir.path,
            config=self._config,
            kafka_version=self._kafka_version,
            host=self._host,
            security=self.security,
        )
        loop = self._loop = new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, name="strom-broker", daemon=True)
        self._thread.start()
        try:
            _run_on(loop, self._inner.server.start())
        except BaseException:
            self._stop_thread()
            raise
        self.bootstrap_servers = str(self._inner.server.bound_address)

    def _stop_thread(self) -> None:
        loop, thread, inner = self._loop, self._thread, self._inner
        self._loop = None
        assert loop is not None and thread is not None and inner is not None
        try:
            _run_on(loop, inner.server.stop())
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()

    # --- child process -----------------------------------------------------------------------

    def _start_process(self) -> None:
        if self.security is not None:
            self.security.bootstrap(self._data_dir.path)
        args = [
            sys.executable,
            "-m",
            "strom",
            "server",
            "--data-dir",
            str(self._data_dir.path),
        ]
        settings = {**_listener_settings(self._host, self.security), **_settings(self._config)}
        for name, value in settings.items():
            args += ["--override", f"{name}={value}"]
        if self._kafka_version is not None:
            args += ["--emulate-kafka-version", self._kafka_version]
        child = self._child = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stderr is not None
        lines: list[str] = []
        for line in child.stderr:
            lines.append(line)
            ready = _READY.search(line)
            if ready:
                self.bootstrap_servers = ready["address"]
                threading.Thread(target=_drain, args=(child.stderr,), daemon=True).start()
                return
        child.wait()
        self._child = None
        raise BrokerStartError(
            f"strom server exited with code {child.returncode}: {''.join(lines[-5:]).strip()}"
        )

    def _stop_process(self) -> None:
        child, self._child = self._child, None
        assert child is not None
        child.terminate()
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _security_files(
    security: Security | SecurityFiles | None, directory: _DataDir | None, host: str
) -> SecurityFiles | None:
    if isinstance(security, Security):
        assert directory is not None
        return SecurityFiles(security, directory.path, host)
    return security


def _run_on(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, None]) -> None:
    """Run ``coroutine`` on the broker's loop thread and wait for it (its exception raises)."""
    asyncio.run_coroutine_threadsafe(coroutine, loop).result()


def _drain(stream: Any) -> None:
    """Keep reading a child's stderr so it never blocks on a full pipe."""
    for _ in stream:
        pass
