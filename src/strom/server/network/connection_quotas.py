"""Connection limits, as Kafka's ``ConnectionQuotas``: ``max.connections`` (the whole broker,
or one listener as ``listener.name.<listener>.max.connections``) and
``max.connections.per.ip``. The inter-broker listener is not held to the broker-wide limit,
as on Kafka. A connection over a limit is closed as soon as it is accepted, while the others
are served (Kafka makes the acceptor wait for a free slot instead, for ``max.connections``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from strom.config import ServerConfig

__all__ = ["ConnectionLimits", "ConnectionQuotas", "connection_limits"]

log = logging.getLogger(__name__)

_UNLIMITED = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_connections: int = _UNLIMITED
    max_connections_per_ip: int = _UNLIMITED
    listener_max_connections: Mapping[str, int] = field(default_factory=dict)
    """Listener name -> its own ``max.connections``."""
    exempt_listener: str | None = None
    """The inter-broker listener: not counted against ``max_connections``."""


def connection_limits(
    config: ServerConfig, listeners: Iterable[str], inter_broker_listener: str | None
) -> ConnectionLimits:
    """The limits the server settings set."""
    per_listener = {}
    for name in listeners:
        setting = f"listener.name.{name.lower()}.max.connections"
        if config.is_explicit(setting):
            per_listener[name] = config.get_int(setting)
    return ConnectionLimits(
        max_connections=config.get_int("max.connections"),
        max_connections_per_ip=config.get_int("max.connections.per.ip"),
        listener_max_connections=per_listener,
        exempt_listener=inter_broker_listener,
    )


class ConnectionQuotas:
    """Counts the connections of one broker's listeners and admits new ones."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._total = 0
        self._by_listener: Counter[str] = Counter()
        self._by_ip: Counter[str] = Counter()

    def admit(self, listener: str, ip: str) -> str | None:
        """Count a new connection; why it is refused (then not counted), or None."""
        limits = self.limits
        if self._by_ip[ip] >= limits.max_connections_per_ip:
            most = limits.max_connections_per_ip
            return f"{ip} has max.connections.per.ip={most} connections"
        listener_limit = limits.listener_max_connections.get(listener, _UNLIMITED)
        if self._by_listener[listener] >= listener_limit:
            return f"listener {listener} has max.connections={listener_limit} connections"
        counted = listener != limits.exempt_listener
        if counted and self._total >= limits.max_connections:
            return f"the broker has max.connections={limits.max_connections} connections"
        self._by_ip[ip] += 1
        self._by_listener[listener] += 1
        self._total += counted
        return None

    def release(self, listener: str, ip: str) -> None:
        """A connection :meth:`admit` counted has closed."""
        self._by_ip[ip] -= 1
        if not self._by_ip[ip]:
            del self._by_ip[ip]
        self._by_listener[listener] -= 1
        self._total -= listener != self.limits.exempt_listener
