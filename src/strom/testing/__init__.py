"""Real strom brokers for tests (see docs/testing.md): ``Broker``, ``AsyncBroker``, the faults
they inject, ``Cluster`` (controller and broker processes, optionally each in a network
namespace of its own, with network faults between them), ``Registry`` (a schema registry
beside a broker), and a pytest plugin (``strom.testing.pytest_plugin``, loaded by pytest
itself).

The names are imported on first use, so that loading the pytest plugin (which imports this
package) stays cheap and imports no broker code until a fixture needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from strom.protocol.api import ApiKey
    from strom.protocol.kafka_releases import KAFKA_RELEASES
    from strom.server.network.faults import Faults
    from strom.testing.broker import AsyncBroker, Broker, BrokerStartError, unique_topic_name
    from strom.testing.cluster import Cluster, ClusterError, ClusterNode
    from strom.testing.netns import NamespaceNetwork, NetnsError, netns_unavailable
    from strom.testing.network import NetworkNemesis
    from strom.testing.registry import Registry

__all__ = [
    "KAFKA_RELEASES",
    "ApiKey",
    "AsyncBroker",
    "Broker",
    "BrokerStartError",
    "Cluster",
    "ClusterError",
    "ClusterNode",
    "Faults",
    "NamespaceNetwork",
    "NetnsError",
    "NetworkNemesis",
    "Registry",
    "netns_unavailable",
    "unique_topic_name",
]

_HOMES = {
    "ApiKey": "strom.protocol.api",
    "KAFKA_RELEASES": "strom.protocol.kafka_releases",
    "Faults": "strom.server.network.faults",
    "AsyncBroker": "strom.testing.broker",
    "Broker": "strom.testing.broker",
    "BrokerStartError": "strom.testing.broker",
    "Cluster": "strom.testing.cluster",
    "ClusterError": "strom.testing.cluster",
    "ClusterNode": "strom.testing.cluster",
    "NamespaceNetwork": "strom.testing.netns",
    "NetnsError": "strom.testing.netns",
    "NetworkNemesis": "strom.testing.network",
    "netns_unavailable": "strom.testing.netns",
    "unique_topic_name": "strom.testing.broker",
    "Registry": "strom.testing.registry",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'strom.testing' has no attribute {name!r}")
    from strom.server.collector import import_module  # noqa: PLC0415 - on first use

    return getattr(import_module(home), name)
