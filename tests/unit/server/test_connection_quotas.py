"""Connection limits as Kafka's ConnectionQuotas: per IP, per listener, broker-wide with the
inter-broker listener exempt from the broker-wide limit (not from its own)."""

from __future__ import annotations

from strom.config import ServerConfig
from strom.server.network.connection_quotas import (
    ConnectionLimits,
    ConnectionQuotas,
    connection_limits,
)


def test_the_limits_refuse_the_extra_connections_and_free_slots_on_release() -> None:
    quotas = ConnectionQuotas(
        ConnectionLimits(
            max_connections=2,
            max_connections_per_ip=2,
            listener_max_connections={"INTERNAL": 1},
            exempt_listener="INTERNAL",
        )
    )
    assert quotas.admit("CLIENTS", "10.0.0.1") is None
    assert quotas.admit("CLIENTS", "10.0.0.1") is None
    assert (
        quotas.admit("CLIENTS", "10.0.0.1") == "10.0.0.1 has max.connections.per.ip=2 connections"
    )
    assert quotas.admit("CLIENTS", "10.0.0.2") == "the broker has max.connections=2 connections"
    assert quotas.admit("INTERNAL", "10.0.0.3") is None  # exempt from the broker-wide limit
    assert (
        quotas.admit("INTERNAL", "10.0.0.4")
        == "listener INTERNAL has max.connections=1 connections"
    )
    quotas.release("CLIENTS", "10.0.0.1")
    assert quotas.admit("CLIENTS", "10.0.0.2") is None


def test_limits_from_the_settings() -> None:
    config = ServerConfig({"max.connections": "10", "listener.name.clients.max.connections": "3"})
    limits = connection_limits(config, ["CLIENTS", "INTERNAL"], "INTERNAL")
    assert limits.max_connections == 10
    assert limits.max_connections_per_ip == 2**31 - 1
    assert limits.listener_max_connections == {"CLIENTS": 3}
    assert limits.exempt_listener == "INTERNAL"
