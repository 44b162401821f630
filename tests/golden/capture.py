"""Capture the first request frame real Kafka clients send, as golden files.

Run from the repository root::

    .venv/bin/python tests/golden/capture.py

It listens on a free local port with a bare TCP socket (no broker at all), points each client at
it, keeps the first length-prefixed frame the client writes and then closes the connection. Each
frame is stored, without its 4-byte length prefix, as one line of hex in
``tests/golden/frames/<client>-<api>-v<version>.hex``. Clients whose frame did not change are left
alone, so re-running the script after upgrading a client only adds or replaces that client's file.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from aiokafka import AIOKafkaClient
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kio.schema.index import api_key_map

FRAMES_DIR = Path(__file__).resolve().parent / "frames"
TIMEOUT_S = 10.0


class FirstFrameListener:
    """A TCP listener that keeps the first frame of the first connection, then hangs up."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(TIMEOUT_S)
        self.port: int = self._sock.getsockname()[1]
        self.frame: bytes | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self._sock.accept()
        except OSError:
            self._done.set()
            return
        with conn:
            conn.settimeout(TIMEOUT_S)
            try:
                (size,) = struct.unpack(">i", _read_exactly(conn, 4))
                self.frame = _read_exactly(conn, size)
            except OSError:
                pass
        self._done.set()

    def wait(self) -> bytes:
        self._done.wait(TIMEOUT_S)
        self._sock.close()
        if self.frame is None:
            raise RuntimeError("the client sent no complete frame")
        return self.frame


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = conn.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("connection closed mid-frame")
        chunks += chunk
    return bytes(chunks)


def _confluent_kafka(address: str) -> None:
    admin = AdminClient({"bootstrap.servers": address, "log_level": 0})
    with contextlib.suppress(Exception):
        admin.list_topics(timeout=2)


def _kafka_python(address: str) -> None:
    with contextlib.suppress(Exception):
        KafkaAdminClient(bootstrap_servers=address, request_timeout_ms=2000).close()


def _aiokafka(address: str) -> None:
    async def bootstrap() -> None:
        client = AIOKafkaClient(bootstrap_servers=address, request_timeout_ms=2000)
        try:
            await asyncio.wait_for(client.bootstrap(), timeout=3)
        except Exception:
            pass
        finally:
            await client.close()

    asyncio.run(bootstrap())


CLIENTS: dict[str, Callable[[str], None]] = {
    "confluent-kafka": _confluent_kafka,
    "kafka-python": _kafka_python,
    "aiokafka": _aiokafka,
}


def capture(client: str) -> tuple[str, bytes]:
    """Run one client against a bare listener; return the golden file name and its frame."""
    listener = FirstFrameListener()
    runner = threading.Thread(
        target=CLIENTS[client], args=(f"127.0.0.1:{listener.port}",), daemon=True
    )
    runner.start()
    frame = listener.wait()
    runner.join(TIMEOUT_S)
    api_key, api_version = struct.unpack_from(">hh", frame)
    api = api_key_map[api_key].replace("_", "-")
    return f"{client}-{api}-v{api_version}.hex", frame


def main() -> int:
    FRAMES_DIR.mkdir(exist_ok=True)
    for client in sys.argv[1:] or CLIENTS:
        name, frame = capture(client)
        for old in FRAMES_DIR.glob(f"{client}-*.hex"):
            if old.name != name:
                old.unlink()
        (FRAMES_DIR / name).write_text(frame.hex() + "\n", encoding="ascii")
        print(f"{name}: {len(frame)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
