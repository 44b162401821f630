"""Connection limits as Kafka's ConnectionQuotas: a listener waits for a slot under
max.connections (its own, or the broker's), the inter-broker listener of a broker with several
is never held to the broker's limit (the others then close connections), and
max.connections.per.ip (or an override) refuses the connection."""

from __future__ import annotations

import pytest

from strom.config import ConfigError, ServerConfig
from strom.server.network.connection_quotas import (
    ConnectionLimits,
    ConnectionQuotas,
    connection_limits,
    parse_ip_overrides,
)


def test_a_listener_has_a_slot_until_the_broker_or_the_listener_is_full() -> None:
    quotas = ConnectionQuotas(
        ConnectionLimits(max_connections=2, listener_max_connections={"ADMIN": 1})
    )
    assert quotas.slot_available("CLIENTS") and quotas.slot_available("ADMIN")
    assert quotas.admit("ADMIN", "10.0.0.1") is None
    assert not quotas.slot_available("ADMIN")  # its own limit
    assert quotas.admit("CLIENTS", "10.0.0.2") is None
    assert not quotas.slot_available("CLIENTS")  # the broker's
    quotas.release("ADMIN", "10.0.0.1")
    assert quotas.slot_available("CLIENTS") and quotas.slot_available("ADMIN")


def test_the_inter_broker_listener_is_never_held_to_the_broker_limit() -> None:
    quotas = ConnectionQuotas(
        ConnectionLimits(
            max_connections=1,
            listener_max_connections={"INTERNAL": 2},
            protected_listener="INTERNAL",
        )
    )
    changes: list[bool] = []
    quotas.watch(lambda: changes.append(quotas.over_limit("CLIENTS")))
    assert quotas.admit("CLIENTS", "10.0.0.1") is None
    assert not quotas.slot_available("CLIENTS") and quotas.slot_available("INTERNAL")
    assert quotas.admit("INTERNAL", "10.0.0.2") is None
    assert changes == [False, True]  # the client listener must close one
    assert not quotas.over_limit("INTERNAL")
    quotas.release("CLIENTS", "10.0.0.1")
    assert not quotas.over_limit("CLIENTS")
    assert quotas.admit("INTERNAL", "10.0.0.3") is None
    assert not quotas.slot_available("INTERNAL")  # its own limit still holds


def test_max_connections_per_ip_and_its_overrides_refuse() -> None:
    quotas = ConnectionQuotas(
        ConnectionLimits(max_connections_per_ip=1, per_ip_overrides={"10.0.0.9": 2})
    )
    assert quotas.admit("CLIENTS", "10.0.0.1") is None
    refusal = quotas.admit("CLIENTS", "10.0.0.1")
    assert refusal == "10.0.0.1 already has the configured maximum of 1 connections"
    assert quotas.admit("CLIENTS", "10.0.0.9") is None
    assert quotas.admit("CLIENTS", "10.0.0.9") is None
    assert quotas.admit("CLIENTS", "10.0.0.9") is not None
    assert quotas.slot_available("CLIENTS")  # a refused connection is not counted


def test_limits_from_the_settings() -> None:
    config = ServerConfig(
        {
            "max.connections": "10",
            "listener.name.clients.max.connections": "3",
            "max.connections.per.ip": "0",
            "max.connections.per.ip.overrides": "::1:7,10.0.0.1 : 2",
        }
    )
    limits = connection_limits(config, ["CLIENTS", "INTERNAL"], "INTERNAL")
    assert limits.max_connections == 10
    assert limits.max_connections_per_ip == 0
    assert limits.per_ip_overrides == {"::1": 7, "10.0.0.1": 2}
    assert limits.listener_max_connections == {"CLIENTS": 3}
    assert limits.protected_listener == "INTERNAL"
    alone = connection_limits(ServerConfig({}), ["PLAINTEXT"], "PLAINTEXT")
    assert alone.protected_listener is None  # Kafka protects it only beside other listeners
    named = ServerConfig({"max.connections.per.ip.overrides": "localhost:5"})
    resolved = connection_limits(named, ["PLAINTEXT"], None).per_ip_overrides
    assert list(resolved.values()) == [5] and set(resolved) <= {"127.0.0.1", "::1"}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max.connections.per.ip.overrides": "10.0.0.1"}, "expected host:count entries"),
        ({"max.connections.per.ip.overrides": "10.0.0.1:many"}, "expected host:count entries"),
        ({"max.connections.per.ip.overrides": "a b:1"}, "expected host:count entries"),
        ({"max.connections.per.ip.overrides": "no-such-host.invalid:1"}, "cannot resolve"),
        ({"max.connections.per.ip": "0"}, "can be 0 only when max.connections.per.ip.overrides"),
    ],
)
def test_bad_limits_are_one_line(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        connection_limits(ServerConfig(settings), ["PLAINTEXT"], "PLAINTEXT")


def test_overrides_take_the_count_after_the_last_colon() -> None:
    assert parse_ip_overrides(" fe80::1:3 , host-a:0,") == {"fe80::1": 3, "host-a": 0}
