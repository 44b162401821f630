"""probe_listeners on real sockets: a listener accepts, a closed port refuses, a listener that
never completes a handshake (here: none to resolve) proves nothing."""

from __future__ import annotations

import asyncio
import socket

from strom.metadata import BrokerEndpoint
from strom.server.controller.listener_probe import ListenerProbe, probe_listeners


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_listening_socket_accepts_even_if_nobody_calls_accept() -> None:
    """The kernel completes the connection: a busy or stopped process still answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        endpoint = BrokerEndpoint("PLAINTEXT", "127.0.0.1", sock.getsockname()[1])
        result = asyncio.run(probe_listeners([endpoint], 5))
    assert result is ListenerProbe.ACCEPTED


def test_a_port_nobody_listens_on_refuses() -> None:
    endpoint = BrokerEndpoint("PLAINTEXT", "127.0.0.1", _closed_port())
    assert asyncio.run(probe_listeners([endpoint], 5)) is ListenerProbe.REFUSED


def test_one_answering_listener_of_several_means_alive() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        endpoints = [
            BrokerEndpoint("A", "127.0.0.1", _closed_port()),
            BrokerEndpoint("B", "127.0.0.1", sock.getsockname()[1]),
        ]
        assert asyncio.run(probe_listeners(endpoints, 5)) is ListenerProbe.ACCEPTED


def test_a_name_that_does_not_resolve_proves_nothing() -> None:
    endpoint = BrokerEndpoint("PLAINTEXT", "no-such-host.invalid", 9092)
    assert asyncio.run(probe_listeners([endpoint], 5)) is ListenerProbe.UNKNOWN
    assert asyncio.run(probe_listeners([], 5)) is ListenerProbe.UNKNOWN
