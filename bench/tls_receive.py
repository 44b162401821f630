"""What receiving over TLS costs a server process, by the way it reads (issue 26, TLS produce).

A child process sends ``--megabytes`` MB in 1 MB ``sendall`` calls over one connection (TLS
1.3 with Python's ``ssl`` client, or plain TCP); the server process counts its own CPU time
(``time.process_time``) from the accept to the last byte, so the sender's encryption is not
in it. Ways of reading, each a fresh server process:

- ``uvloop-plain``: uvloop, a ``BufferedProtocol`` receiving into a 64 KB buffer, no TLS;
- ``uvloop-tls``: the same with ``ssl=`` (the broker's way: uvloop's SSL protocol feeds a
  memory BIO and calls ``SSLObject.read(n, buffer)`` into the protocol's buffer);
- ``asyncio-tls``: asyncio's own loop and SSL protocol, the same protocol;
- ``thread-tls``: a blocking ``SSLSocket.recv_into`` loop (OpenSSL's socket BIO, no event loop),
  the cheapest a threaded TLS reader could be.

Prints the server's CPU seconds per GB for each, per round, and the medians.

Run: ``.venv/bin/python -m bench.tls_receive [--megabytes 256] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from strom.testing.certificates import CertificateAuthority

MODES = ("uvloop-plain", "uvloop-tls", "asyncio-tls", "thread-tls")

_SENDER = """
import socket, ssl, sys
port, megabytes, tls = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "tls"
sock = socket.create_connection(("127.0.0.1", port))
if tls:
    context = ssl.create_default_context(cafile=sys.argv[4])
    sock = context.wrap_socket(sock, server_hostname="localhost")
chunk = b"x" * (1 << 20)
for _ in range(megabytes):
    sock.sendall(chunk)
sock.close()
"""


class _Sink(asyncio.BufferedProtocol):
    """Receives into one 64 KB buffer (as the broker's frame decoder does) and counts."""

    def __init__(self, total: int, done: asyncio.Future[None]) -> None:
        self._buffer = memoryview(bytearray(1 << 16))
        self._left = total
        self._done = done

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._buffer

    def buffer_updated(self, nbytes: int) -> None:
        self._left -= nbytes
        if self._left <= 0 and not self._done.done():
            self._done.set_result(None)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._done.done():
            self._done.set_result(None)


def _sender(port: int, megabytes: int, tls: bool, ca_file: Path) -> subprocess.Popen[bytes]:
    arguments = [str(port), str(megabytes), "tls" if tls else "plain", str(ca_file)]
    return subprocess.Popen([sys.executable, "-c", _SENDER, *arguments])


async def _loop_receive(megabytes: int, context: ssl.SSLContext | None, ca_file: Path) -> float:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    server = await loop.create_server(
        lambda: _Sink(megabytes << 20, done), "127.0.0.1", 0, ssl=context
    )
    sender = _sender(server.sockets[0].getsockname()[1], megabytes, context is not None, ca_file)
    started = time.process_time()
    await done
    used = time.process_time() - started
    sender.wait()
    server.close()
    return used


def _thread_receive(megabytes: int, context: ssl.SSLContext, ca_file: Path) -> float:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        sender = _sender(listener.getsockname()[1], megabytes, True, ca_file)
        accepted, _ = listener.accept()
        started = time.process_time()
        with context.wrap_socket(accepted, server_side=True) as tls:
            buffer = memoryview(bytearray(1 << 16))
            left = megabytes << 20
            while left > 0:
                received = tls.recv_into(buffer)
                if not received:
                    break
                left -= received
        used = time.process_time() - started
    sender.wait()
    return used


def receive(mode: str, megabytes: int, directory: Path) -> float:
    """The server's CPU seconds for ``megabytes`` MB received the ``mode`` way."""
    ca_file, keystore = directory / "ca.crt", directory / "server.pem"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(keystore)
    if mode == "thread-tls":
        return _thread_receive(megabytes, context, ca_file)
    if mode.startswith("uvloop"):
        import uvloop  # noqa: PLC0415 - the bench's only uvloop use

        runner: asyncio.Runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    else:
        runner = asyncio.Runner()
    with runner:
        tls = None if mode.endswith("plain") else context
        return runner.run(_loop_receive(megabytes, tls, ca_file))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=256, help="MB per connection")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, modes interleaved")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # one child's run
    parser.add_argument("--certificates", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.mode:
        print(receive(options.mode, options.megabytes, options.certificates))
        return
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        authority = CertificateAuthority()
        authority.write_pem(directory / "ca.crt")
        issued = authority.issue("localhost", hosts=("localhost", "127.0.0.1"))
        issued.write_keystore_pem(directory / "server.pem")
        per_gb: dict[str, list[float]] = {mode: [] for mode in MODES}
        for round_ in range(options.rounds):
            for mode in MODES:
                child = [sys.executable, "-m", "bench.tls_receive", "--mode", mode]
                child += ["--megabytes", str(options.megabytes), "--certificates", scratch]
                used = float(subprocess.run(child, check=True, capture_output=True).stdout)
                per_gb[mode].append(used * 1024 / options.megabytes)
                print(f"round {round_ + 1} {mode:<13} server CPU {per_gb[mode][-1]:.2f} s/GB")
        for mode, figures in per_gb.items():
            print(f"median {mode:<13} server CPU {statistics.median(figures):.2f} s/GB")


if __name__ == "__main__":
    main()
