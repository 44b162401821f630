"""Run a real ``strom server`` process, and talk raw Kafka protocol to it.

Shared by the integration tests (``integration/conftest.py``'s fixtures) and the end-to-end
tests (``e2e/conftest.py``); ``tests/`` is on pytest's ``pythonpath``, so every test imports it
as ``from strom_harness import StromServer``.
"""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strom.protocol.api import (
    ApiKey,
    decode_response,
    encode_request,
    make_request_header,
)
from strom.protocol.framing import frame_prefix

STROM = Path(sys.executable).with_name("strom")
READY = re.compile(
    r"ready: listening on (?P<host>\S+):(?P<port>\d+), data dir (?P<data_dir>.+?), "
    r"cluster id (?P<cluster_id>\S+), node id (?P<node_id>\d+)"
)


class ServerFailed(RuntimeError):
    pass


class StromServer:
    """A ``strom server`` child process; its stderr is collected line by line."""

    def __init__(self, args: list[str], *, cwd: Path) -> None:
        self.args = args
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.process = subprocess.Popen(
            args,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._readers = [
            threading.Thread(target=self._collect, args=(stream,), daemon=True)
            for stream in (self.process.stderr, self.process.stdout)
        ]
        for reader in self._readers:
            reader.start()
        self.host = ""
        self.port = 0
        self.ready_line = ""
        self.cluster_id = ""
        self.node_id = -1
        self.data_dir = Path()

    def _collect(self, stream: Any) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for_line(self, pattern: str | re.Pattern[str], *, timeout: float = 10.0) -> str:
        """The first stderr/stdout line matching ``pattern``, waiting for it if need be."""
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        seen = 0
        with self._changed:
            while True:
                for line in self.lines[seen:]:
                    if regex.search(line):
                        return line
                seen = len(self.lines)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ServerFailed(f"no line matching {regex.pattern!r}; output: {self.output}")
                if self.process.poll() is not None and not any(r.is_alive() for r in self._readers):
                    raise ServerFailed(
                        f"server exited ({self.process.returncode}) without a line matching "
                        f"{regex.pattern!r}; output: {self.output}"
                    )
                self._changed.wait(min(remaining, 0.2))

    def wait_ready(self, *, timeout: float = 10.0) -> None:
        line = self.wait_for_line(READY, timeout=timeout)
        match = READY.search(line)
        assert match is not None
        self.ready_line = line
        self.host = match["host"]
        self.port = int(match["port"])
        self.cluster_id = match["cluster_id"]
        self.node_id = int(match["node_id"])
        self.data_dir = Path(match["data_dir"])

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def output(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def connect(self, *, timeout: float = 5.0) -> KafkaWire:
        return KafkaWire(self.host, self.port, timeout=timeout)

    def stop(self, sig: int = signal.SIGTERM, *, timeout: float = 10.0) -> int:
        """Send ``sig`` and wait for the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
            raise ServerFailed(
                f"server did not stop within {timeout}s; output: {self.output}"
            ) from None
        finally:
            for reader in self._readers:
                reader.join(5)

    def wait_exit(self, *, timeout: float = 10.0) -> int:
        code = self.process.wait(timeout)
        for reader in self._readers:
            reader.join(5)
        return code


StartServer = Callable[..., StromServer]
"""The ``start_server`` fixture: ``start_server(overrides={...}, data_dir=...)``."""


def strom_command() -> list[str]:
    """How to run the ``strom`` command of this environment."""
    if STROM.exists():
        return [str(STROM)]
    return [sys.executable, "-c", "from strom.cli.main import main; main()"]


def strom_server_args(
    *,
    data_dir: Path,
    listener: str = "127.0.0.1:0",
    overrides: Mapping[str, str] | None = None,
    extra: Iterable[str] = (),
) -> list[str]:
    args = [*strom_command(), "server", "--data-dir", str(data_dir), "--listener", listener]
    for name, value in (overrides or {}).items():
        args += ["--override", f"{name}={value}"]
    return [*args, *extra]


def start_strom_server(
    *,
    data_dir: Path,
    cwd: Path,
    overrides: Mapping[str, str] | None = None,
    extra: Iterable[str] = (),
    timeout: float = 15.0,
) -> StromServer:
    """Start ``strom server`` on a free port of 127.0.0.1 and wait for its ready line."""
    server = StromServer(
        strom_server_args(data_dir=data_dir, overrides=overrides, extra=extra), cwd=cwd
    )
    try:
        server.wait_ready(timeout=timeout)
    except BaseException:
        server.stop(signal.SIGKILL)
        raise
    return server


class ConnectionClosed(Exception):
    pass


@dataclass
class KafkaWire:
    """A blocking raw-socket Kafka client: frames in and out, kio bodies when wanted."""

    host: str
    port: int
    timeout: float = 5.0

    def __post_init__(self) -> None:
        self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        self._next_correlation_id = 1

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> KafkaWire:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(frame_prefix(len(payload)) + payload)

    def encode(
        self, body: Any, *, correlation_id: int | None = None, client_id: str | None = "strom-test"
    ) -> tuple[int, bytes]:
        """A request frame payload for ``body``; returns its correlation id and the bytes."""
        if correlation_id is None:
            correlation_id = self._next_correlation_id
            self._next_correlation_id += 1
        header = make_request_header(body, correlation_id=correlation_id, client_id=client_id)
        return correlation_id, encode_request(header=header, body=body)

    def send(self, body: Any, *, client_id: str | None = "strom-test") -> int:
        correlation_id, payload = self.encode(body, client_id=client_id)
        self.send_frame(payload)
        return correlation_id

    def read_exactly(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionClosed(f"connection closed after {len(data)} of {size} bytes")
            data += chunk
        return bytes(data)

    def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self.read_exactly(4))
        return self.read_exactly(size)

    def read_response(self, *, api_key: int, api_version: int) -> tuple[int, Any]:
        return decode_response(self.read_frame(), api_key=api_key, api_version=api_version)

    def request(self, body: Any) -> Any:
        """Send ``body``, read its response, check the correlation id, return the kio body."""
        correlation_id = self.send(body)
        answered, response = self.read_response(
            api_key=ApiKey(body.__api_key__), api_version=body.__version__
        )
        assert answered == correlation_id
        return response

    def is_closed_by_peer(self, *, timeout: float = 5.0) -> bool:
        """True once the server closes the connection (EOF or reset) within ``timeout``."""
        self.sock.settimeout(timeout)
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
        finally:
            self.sock.settimeout(self.timeout)


def free_ports_in_a_row(count: int) -> int:
    """The first of ``count`` free ports in a row, below the range the kernel hands outgoing
    connections from (a port there can be taken by any client between the probe and the bind)."""
    rng = random.Random()
    for _ in range(100):
        base = rng.randrange(20_000, 30_000)
        try:
            for port in range(base, base + count):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise AssertionError("no free ports in a row between 20000 and 30000")
