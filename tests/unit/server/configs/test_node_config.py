"""Roles, listeners and voters: what a node is, from Kafka's settings, and one-line refusals."""

from __future__ import annotations

import pytest

from strom.config import ConfigError, ServerConfig
from strom.server.configs.node_config import HostPort, NodeConfig, ProcessRole

COMBINED = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293",
}


def node(**settings: str) -> NodeConfig:
    return NodeConfig.from_config(ServerConfig(settings))


def test_no_roles_is_the_standalone_node() -> None:
    config = node()
    assert config.standalone
    assert config.roles == {ProcessRole.BROKER, ProcessRole.CONTROLLER}
    assert config.voter_ids == {1}
    assert config.controller_listener is None
    assert [listener.name for listener in config.broker_listeners] == ["PLAINTEXT"]
    assert config.inter_broker_listener_name == "PLAINTEXT"
    assert config.advertised["PLAINTEXT"] == HostPort("localhost", 9092)


def test_a_combined_node_of_a_quorum() -> None:
    config = node(**COMBINED)
    assert not config.standalone and config.is_broker and config.is_controller
    assert config.voter_ids == {1, 2, 3}
    assert config.voters[2] == HostPort("127.0.0.1", 9193)
    listener = config.controller_listener
    assert listener is not None and listener.address.port == 9093
    assert listener.security_protocol == "PLAINTEXT"  # not in the map: PLAINTEXT, as Kafka
    assert [listener.name for listener in config.broker_listeners] == ["PLAINTEXT"]


def test_a_controller_of_a_dynamic_quorum_finds_it_through_bootstrap_servers() -> None:
    """KIP-853: no controller.quorum.voters; the voters are in the metadata log."""
    settings = {k: v for k, v in COMBINED.items() if k != "controller.quorum.voters"}
    config = node(**settings, **{"controller.quorum.bootstrap.servers": "127.0.0.1:9093"})
    assert config.is_controller and config.voters == {} and config.voter_ids == frozenset()
    assert config.bootstrap_servers == (HostPort("127.0.0.1", 9093),)


def test_a_broker_only_node_with_two_listeners_and_advertised_addresses() -> None:
    config = node(
        **{
            "process.roles": "broker",
            "node.id": "4",
            "listeners": "INTERNAL://0.0.0.0:9094,EXTERNAL://0.0.0.0:9095",
            "advertised.listeners": "INTERNAL://b4.internal:9094,EXTERNAL://b4.example.com:19095",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": "c1:9093,c2:9093",
            "broker.rack": "rack-a",
        }
    )
    assert config.roles == {ProcessRole.BROKER}
    assert config.voters == {} and len(config.bootstrap_servers) == 2
    assert config.advertised["EXTERNAL"] == HostPort("b4.example.com", 19095)
    assert config.inter_broker_listener_name == "INTERNAL"
    assert config.rack == "rack-a"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"controller.quorum.voters": "1@a:1"}, "controller.quorum.voters: set process.roles"),
        ({**COMBINED, "controller.quorum.voters": "1@a"}, "expected HOST:PORT"),
        ({**COMBINED, "controller.quorum.voters": "one@a:1"}, "expected id@host:port"),
        ({**COMBINED, "controller.quorum.voters": "1@a:1,1@b:2"}, "voter 1 is listed twice"),
        ({**COMBINED, "node.id": "7"}, "node.id 7 is not one of the voters (1, 2, 3)"),
        ({"node.id": "1", "broker.id": "2"}, "broker.id: must equal node.id (1)"),
        ({**COMBINED, "controller.listener.names": ""}, "controller.listener.names: required"),
        (
            {**COMBINED, "listeners": "PLAINTEXT://a:1"},
            "a controller must listen on CONTROLLER",
        ),
        ({**COMBINED, "controller.quorum.voters": ""}, "controller.quorum.voters: set it"),
        (
            {**COMBINED, "process.roles": "broker"},
            "a broker-only node cannot listen on controller listener CONTROLLER",
        ),
        ({**COMBINED, "process.roles": "observer"}, "'observer' is not one of"),
        ({"listeners": "PLAINTEXT://a:1,PLAINTEXT://a:2"}, "listener name PLAINTEXT is used twice"),
        (
            {
                "listeners": "A://a:1,PLAINTEXT://a:1",
                "listener.security.protocol.map": "A:PLAINTEXT",
            },
            "port 1 is used by two listeners",
        ),
        ({"listeners": "INTERNAL://a:1"}, "no security protocol for listener INTERNAL"),
        ({"listeners": "a:1"}, "expected NAME://host:port"),
        ({"listener.security.protocol.map": "X:TLS"}, "expected NAME:PROTOCOL"),
        ({"advertised.listeners": "OTHER://a:1"}, "OTHER is not one of the listeners"),
        (
            {
                "listeners": "A://a:1,B://a:2",
                "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT",
            },
            "inter.broker.listener.name: set it",
        ),
    ],
)
def test_inconsistent_settings_are_refused_in_one_line(
    settings: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        node(**settings)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_each_listener_takes_its_security_protocol() -> None:
    node = NodeConfig.from_config(
        ServerConfig(
            {
                "listeners": "PLAINTEXT://a:1,SSL://a:2,CLIENTS://a:3,SASL_PLAINTEXT://a:4",
                "listener.security.protocol.map": (
                    "PLAINTEXT:PLAINTEXT,SSL:SSL,CLIENTS:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
                ),
                "inter.broker.listener.name": "PLAINTEXT",
            }
        )
    )
    protocols = {listener.name: listener.security_protocol for listener in node.listeners}
    assert protocols == {
        "PLAINTEXT": "PLAINTEXT",
        "SSL": "SSL",
        "CLIENTS": "SASL_SSL",
        "SASL_PLAINTEXT": "SASL_PLAINTEXT",
    }
