"""Broker address lists as ``bootstrap.servers`` spells them."""

from __future__ import annotations

import pytest

from strom.client.blocking import parse_servers


def test_servers_are_host_port_pairs() -> None:
    assert parse_servers("a:9092, PLAINTEXT://b:9093,[::1]:9094,") == [
        ("a", 9092),
        ("b", 9093),
        ("::1", 9094),
    ]


@pytest.mark.parametrize("servers", ["", " , ", "a", "a:port"])
def test_bad_server_lists_are_refused(servers: str) -> None:
    with pytest.raises(ValueError, match="broker address"):
        parse_servers(servers)
