"""What a node is and where it listens: the role and network settings, parsed and checked once.

Kafka's settings, read as Kafka reads them in KRaft mode:

* ``process.roles``: ``broker``, ``controller`` or both. Left empty, the node is a **standalone**
  one-node cluster, as ``strom server`` has always run: broker and the only controller voter in one
  process, without a controller listener (nothing else would connect to it).
* ``listeners``: ``NAME://host:port`` entries, names and ports unique; each name's security
  protocol comes from ``listener.security.protocol.map`` (a name that is itself a protocol maps to
  it; a controller listener missing from the map is PLAINTEXT, as Kafka allows).
* ``advertised.listeners``: what clients and other nodes are told, per listener name (by default
  the listener's own address, with the bound port when it is 0).
* ``controller.listener.names``: the controller listeners (the first is the one other nodes use);
  brokers must name them too, to know how to reach the controllers, but never listen on them.
* ``inter.broker.listener.name`` (or the listener named after ``security.inter.broker.protocol``):
  the listener other brokers reach this one on.
* ``controller.quorum.voters`` (``id@host:port,...``), or ``controller.quorum.bootstrap.servers``
  (``host:port,...``) through which a broker finds the voters.

Every inconsistency is a :class:`~strom.config.ConfigError` naming the setting, in one line.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from strom.config import ConfigError, ServerConfig

__all__ = [
    "HostPort",
    "ListenerConfig",
    "NodeConfig",
    "ProcessRole",
    "parse_host_port",
    "parse_voters",
]

SECURITY_PROTOCOLS: Final = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})


@dataclass(frozen=True, slots=True)
class HostPort:
    """A listener address; ``host`` may be a name, an IPv4 or an IPv6 address (no brackets)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> HostPort:
        """``host:port``, ``[v6]:port`` or ``:port`` (every interface)."""
        host, sep, port_text = text.strip().rpartition(":")
        if not sep or not port_text.isdigit():
            raise ValueError(f"expected HOST:PORT, got {text!r}")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        elif ":" in host:
            raise ValueError(f"write an IPv6 address in brackets, as [{host}]:{port_text}")
        port = int(port_text)
        if port > 65535:
            raise ValueError(f"port {port} is out of range")
        return cls(host, port)

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


class ProcessRole(enum.StrEnum):
    BROKER = "broker"
    CONTROLLER = "controller"


@dataclass(frozen=True, slots=True)
class ListenerConfig:
    """One entry of ``listeners``."""

    name: str
    address: HostPort
    security_protocol: str


def parse_host_port(setting: str, text: str) -> HostPort:
    try:
        return HostPort.parse(text)
    except ValueError as error:
        raise ConfigError(setting, str(error)) from None


def _split_listener(setting: str, entry: str) -> tuple[str, HostPort]:
    name, sep, address = entry.strip().partition("://")
    if not sep or not name:
        raise ConfigError(setting, f"expected NAME://host:port, got {entry.strip()!r}")
    return name.upper(), parse_host_port(setting, address)


def _entries(text: str | None) -> list[str]:
    return [entry.strip() for entry in (text or "").split(",") if entry.strip()]


def parse_voters(entries: tuple[str, ...]) -> Mapping[int, HostPort]:
    """``controller.quorum.voters``: ``id@host:port`` entries with distinct ids."""
    voters: dict[int, HostPort] = {}
    for entry in entries:
        node, sep, address = entry.partition("@")
        if not sep or not node.strip().isdigit():
            raise ConfigError(
                "controller.quorum.voters", f"expected id@host:port entries, got {entry!r}"
            )
        node_id = int(node)
        if node_id in voters:
            raise ConfigError("controller.quorum.voters", f"voter {node_id} is listed twice")
        voters[node_id] = parse_host_port("controller.quorum.voters", address)
    return MappingProxyType(voters)


def _protocol_map(text: str) -> dict[str, str]:
    protocols: dict[str, str] = {}
    for entry in _entries(text):
        name, sep, protocol = entry.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip() or protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                "listener.security.protocol.map",
                f"expected NAME:PROTOCOL entries with a protocol of "
                f"{', '.join(sorted(SECURITY_PROTOCOLS))}, got {entry!r}",
            )
        protocols[name.strip().upper()] = protocol
    return protocols


@dataclass(frozen=True, slots=True)
class NodeConfig:
    node_id: int
    roles: frozenset[ProcessRole]
    standalone: bool
    """No ``process.roles``: a one-node cluster without a controller listener."""
    listeners: tuple[ListenerConfig, ...]
    advertised: Mapping[str, HostPort]
    """Listener name -> advertised address (host "" or port 0: the bound one's)."""
    controller_listener_names: tuple[str, ...]
    inter_broker_listener_name: str | None
    voters: Mapping[int, HostPort]
    """Voter id -> its controller listener (empty for the standalone node and for nodes that
    find the voters through ``bootstrap_servers``: a dynamic quorum's, KIP-853)."""
    bootstrap_servers: tuple[HostPort, ...]
    rack: str | None
    protocol_map: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """``listener.security.protocol.map`` as parsed."""

    def security_protocol(self, listener_name: str) -> str:
        """A listener's security protocol, this node's own or one it only connects to (a
        broker's controller listener): the map's, else its name's, else PLAINTEXT."""
        for listener in self.listeners:
            if listener.name == listener_name:
                return listener.security_protocol
        if listener_name in self.protocol_map:
            return self.protocol_map[listener_name]
        return listener_name if listener_name in SECURITY_PROTOCOLS else "PLAINTEXT"

    @property
    def is_broker(self) -> bool:
        return ProcessRole.BROKER in self.roles

    @property
    def is_controller(self) -> bool:
        return ProcessRole.CONTROLLER in self.roles

    @property
    def voter_ids(self) -> frozenset[int]:
        """The quorum's voters as far as the settings say (the standalone node is its own)."""
        return frozenset({self.node_id}) if self.standalone else frozenset(self.voters)

    @property
    def broker_listeners(self) -> tuple[ListenerConfig, ...]:
        return tuple(
            listener
            for listener in self.listeners
            if listener.name not in self.controller_listener_names
        )

    @property
    def controller_listener(self) -> ListenerConfig | None:
        """The listener this controller serves the quorum and the brokers on."""
        for listener in self.listeners:
            if (
                self.controller_listener_names
                and listener.name == self.controller_listener_names[0]
            ):
                return listener
        return None

    @classmethod
    def from_config(cls, config: ServerConfig) -> NodeConfig:
        node_id = config.get_int("node.id")
        if config.is_explicit("broker.id") and config["broker.id"] != node_id:
            # Kafka's KRaft mode: broker.id is an old name of node.id and must agree with it.
            raise ConfigError("broker.id", f"must equal node.id ({node_id}) when both are set")
        raw_roles = config["process.roles"]
        assert isinstance(raw_roles, tuple)
        roles = frozenset(ProcessRole(role) for role in raw_roles)
        standalone = not roles
        if standalone:
            roles = frozenset(ProcessRole)
        controller_names = tuple(_list(config, "controller.listener.names"))
        if not standalone and not controller_names:
            raise ConfigError("controller.listener.names", "required when process.roles is set")
        listeners = _listeners(config, controller_names)
        voters = parse_voters(tuple(_list(config, "controller.quorum.voters")))
        bootstrap = tuple(
            parse_host_port("controller.quorum.bootstrap.servers", entry)
            for entry in _list(config, "controller.quorum.bootstrap.servers")
        )
        if standalone:
            _check_standalone(controller_names, voters, bootstrap)
        else:
            _check_quorum(
                node_id=node_id,
                roles=roles,
                listeners=listeners,
                controller_names=controller_names,
                voters=voters,
                bootstrap=bootstrap,
            )
        inter_broker = _inter_broker_listener(config, roles, listeners, controller_names)
        rack = config["broker.rack"]
        return cls(
            node_id=node_id,
            roles=roles,
            standalone=standalone,
            listeners=listeners,
            advertised=_advertised(config, listeners),
            controller_listener_names=controller_names,
            inter_broker_listener_name=inter_broker,
            voters=voters,
            bootstrap_servers=bootstrap,
            rack=rack if isinstance(rack, str) and rack else None,
            protocol_map=MappingProxyType(
                _protocol_map(config.get_str("listener.security.protocol.map"))
            ),
        )


def _list(config: ServerConfig, name: str) -> tuple[str, ...]:
    value = config[name]
    assert isinstance(value, tuple), name
    return tuple(item.upper() if name.endswith(".names") else item for item in value)


def _listeners(
    config: ServerConfig, controller_names: tuple[str, ...]
) -> tuple[ListenerConfig, ...]:
    protocols = _protocol_map(config.get_str("listener.security.protocol.map"))
    entries = [
        _split_listener("listeners", entry) for entry in _entries(config.get_str("listeners"))
    ]
    if not entries:
        raise ConfigError("listeners", "at least one listener is required")
    out: list[ListenerConfig] = []
    names: set[str] = set()
    ports: set[int] = set()
    for name, address in entries:
        if name in names:
            raise ConfigError("listeners", f"listener name {name} is used twice")
        if address.port and address.port in ports:
            raise ConfigError("listeners", f"port {address.port} is used by two listeners")
        names.add(name)
        ports.add(address.port)
        protocol = protocols.get(name)
        if protocol is None and name in SECURITY_PROTOCOLS:
            protocol = name
        if protocol is None and name in controller_names:
            protocol = "PLAINTEXT"
        if protocol is None:
            raise ConfigError(
                "listener.security.protocol.map", f"no security protocol for listener {name}"
            )
        out.append(ListenerConfig(name, address, protocol))
    return tuple(out)


def _advertised(
    config: ServerConfig, listeners: tuple[ListenerConfig, ...]
) -> Mapping[str, HostPort]:
    advertised = {listener.name: listener.address for listener in listeners}
    text = config["advertised.listeners"]
    for given in _entries(text if isinstance(text, str) else None):
        entry = given if "://" in given or len(listeners) != 1 else f"{listeners[0].name}://{given}"
        name, address = _split_listener("advertised.listeners", entry)
        if name not in advertised:
            raise ConfigError("advertised.listeners", f"{name} is not one of the listeners")
        advertised[name] = address
    return MappingProxyType(advertised)


def _check_standalone(
    controller_names: tuple[str, ...],
    voters: Mapping[int, HostPort],
    bootstrap: tuple[HostPort, ...],
) -> None:
    for name, given in (
        ("controller.quorum.voters", voters),
        ("controller.quorum.bootstrap.servers", bootstrap),
        ("controller.listener.names", controller_names),
    ):
        if given:
            raise ConfigError(name, "set process.roles too (broker, controller or both)")


def _check_quorum(
    *,
    node_id: int,
    roles: frozenset[ProcessRole],
    listeners: tuple[ListenerConfig, ...],
    controller_names: tuple[str, ...],
    voters: Mapping[int, HostPort],
    bootstrap: tuple[HostPort, ...],
) -> None:
    if not voters and not bootstrap:
        raise ConfigError(
            "controller.quorum.voters",
            "set it (id@host:port,...) or controller.quorum.bootstrap.servers",
        )
    names = {listener.name for listener in listeners}
    if ProcessRole.CONTROLLER in roles:
        if controller_names[0] not in names:
            raise ConfigError(
                "listeners",
                f"a controller must listen on {controller_names[0]} (controller.listener.names)",
            )
        if voters and node_id not in voters:
            raise ConfigError(
                "controller.quorum.voters",
                f"node.id {node_id} is not one of the voters "
                f"({', '.join(map(str, sorted(voters)))})",
            )
    else:
        clash = sorted(names & set(controller_names))
        if clash:
            raise ConfigError(
                "listeners", f"a broker-only node cannot listen on controller listener {clash[0]}"
            )
    if ProcessRole.BROKER in roles and not (names - set(controller_names)):
        raise ConfigError(
            "listeners", "a broker needs a listener that is not a controller listener"
        )


def _inter_broker_listener(
    config: ServerConfig,
    roles: frozenset[ProcessRole],
    listeners: tuple[ListenerConfig, ...],
    controller_names: tuple[str, ...],
) -> str | None:
    if ProcessRole.BROKER not in roles:
        return None
    configured = config["inter.broker.listener.name"]
    broker_names = [
        listener.name for listener in listeners if listener.name not in controller_names
    ]
    if isinstance(configured, str) and configured:
        name = configured.upper()
        if name not in broker_names:
            raise ConfigError(
                "inter.broker.listener.name", f"{name} is not one of the broker's listeners"
            )
        return name
    name = config.get_str("security.inter.broker.protocol")
    if name in broker_names:
        return name
    if len(broker_names) == 1:
        return broker_names[0]
    raise ConfigError(
        "inter.broker.listener.name",
        f"set it: no listener is named {name} and there are several ({', '.join(broker_names)})",
    )
