"""Connection limits, as Kafka's ``ConnectionQuotas``: the counts and the decisions; the
listeners wait and close (``strom.server.network.listener``).

* ``max.connections`` (the broker) and ``listener.name.<listener>.max.connections``: a listener
  without a free slot stops accepting until a connection closes, as Kafka's acceptor blocks
  (the connection it has accepted waits, the next ones wait in the kernel's backlog).
* The inter-broker listener of a broker with several listeners is never held to
  ``max.connections`` (its own listener limit still holds): its connections are counted, and
  while they take the broker over the limit the other listeners close their least recently
  active connections (Kafka's ``Processor.closeExcessConnections``).
* ``max.connections.per.ip``, or the IP's ``max.connections.per.ip.overrides`` entry: a
  connection over its IP's limit is closed as soon as it is accepted.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from strom.config import ConfigError, ServerConfig

__all__ = ["ConnectionLimits", "ConnectionQuotas", "connection_limits", "parse_ip_overrides"]

log = logging.getLogger(__name__)

_UNLIMITED = 2**31 - 1
_OVERRIDES = "max.connections.per.ip.overrides"
_HOST = re.compile(r"[A-Za-z0-9.\-_:%]+")


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_connections: int = _UNLIMITED
    max_connections_per_ip: int = _UNLIMITED
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    """IP address -> its own ``max.connections.per.ip``."""
    listener_max_connections: Mapping[str, int] = field(default_factory=dict)
    """Listener name -> its own ``max.connections``."""
    protected_listener: str | None = None
    """The inter-broker listener, when the broker has others: not held to ``max_connections``."""


def parse_ip_overrides(text: str) -> dict[str, int]:
    """``host:count`` entries, comma-separated (Kafka's ``Csv.parseCsvMap``: the count after the
    last colon, so IPv6 addresses need no brackets); raises ConfigError."""
    overrides: dict[str, int] = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        host, sep, count = entry.rpartition(":")
        host = host.strip()
        if not sep or not count.strip().isdigit() or not _HOST.fullmatch(host):
            raise ConfigError(_OVERRIDES, f"expected host:count entries, got {entry!r}")
        overrides[host] = int(count)
    return overrides


def _address(host: str) -> str:
    """The IP address of an override's host, as Kafka's ``InetAddress.getByName``."""
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        pass
    try:
        return str(socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][4][0])
    except OSError as error:
        raise ConfigError(_OVERRIDES, f"cannot resolve {host}: {error.strerror or error}") from None


def connection_limits(
    config: ServerConfig, listeners: Iterable[str], inter_broker_listener: str | None
) -> ConnectionLimits:
    """The limits the server settings set for a broker's ``listeners``; raises ConfigError."""
    names = list(listeners)
    per_listener = {}
    for name in names:
        setting = f"listener.name.{name.lower()}.max.connections"
        if config.is_explicit(setting):
            per_listener[name] = config.get_int(setting)
    overrides = {
        _address(host): count
        for host, count in parse_ip_overrides(config.get_str(_OVERRIDES)).items()
    }
    per_ip = config.get_int("max.connections.per.ip")
    if per_ip == 0 and not overrides:
        raise ConfigError("max.connections.per.ip", f"can be 0 only when {_OVERRIDES} is set")
    return ConnectionLimits(
        max_connections=config.get_int("max.connections"),
        max_connections_per_ip=per_ip,
        per_ip_overrides=overrides,
        listener_max_connections=per_listener,
        protected_listener=inter_broker_listener if len(names) > 1 else None,
    )


class ConnectionQuotas:
    """Counts the connections of one broker's listeners; tells a listener whether it may
    accept, and whether it must close one."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._total = 0
        self._by_listener: Counter[str] = Counter()
        self._by_ip: Counter[str] = Counter()
        self._watchers: list[Callable[[], None]] = []

    def watch(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after every change of the counts."""
        self._watchers.append(callback)

    def slot_available(self, listener: str) -> bool:
        """May ``listener`` take one more connection (Kafka's ``connectionSlotAvailable``)?"""
        limit = self.limits.listener_max_connections.get(listener, _UNLIMITED)
        if self._by_listener[listener] >= limit:
            return False
        return listener == self.limits.protected_listener or (
            self._total < self.limits.max_connections
        )

    def over_limit(self, listener: str) -> bool:
        """Must ``listener`` close a connection: the protected listener's took the broker over
        ``max.connections`` (Kafka's ``maxConnectionsExceeded``)."""
        limits = self.limits
        return self._total > limits.max_connections and listener != limits.protected_listener

    def admit(self, listener: str, ip: str) -> str | None:
        """Count a connection accepted when a slot was available; why it must be closed
        instead (then it is not counted), or None."""
        most = self.limits.per_ip_overrides.get(ip, self.limits.max_connections_per_ip)
        if self._by_ip[ip] >= most:
            return f"{ip} already has the configured maximum of {most} connections"
        self._by_ip[ip] += 1
        self._by_listener[listener] += 1
        self._total += 1
        self._changed()
        return None

    def release(self, listener: str, ip: str) -> None:
        """A connection :meth:`admit` counted has closed."""
        self._by_ip[ip] -= 1
        if not self._by_ip[ip]:
            del self._by_ip[ip]
        self._by_listener[listener] -= 1
        self._total -= 1
        self._changed()

    def _changed(self) -> None:
        for callback in tuple(self._watchers):
            callback()
