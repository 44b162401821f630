"""What ``strom metadata-quorum`` and ``strom cluster describe`` ask the cluster, over strom's
own blocking client (no client library exposes DescribeQuorum): the quorum's state and the
registered brokers."""

from __future__ import annotations

import base64
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kio.schema.describe_cluster.v2.request import DescribeClusterRequest
from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest, PartitionData, TopicData
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.types import TopicName
from kio.static.primitive import i8, i32
from kio.static.protocol import RequestPayload

from strom.cli.client_common import ClientConfig, CliError
from strom.client.blocking import BrokerConnection, parse_servers
from strom.client.security import PLAINTEXT, ClientSecurity, librdkafka_security

__all__ = [
    "BROKERS",
    "CONTROLLERS",
    "ask_quorum",
    "change_voters",
    "command_config_connection",
    "connect",
    "describe_cluster",
    "describe_quorum",
]

BROKERS = 1
CONTROLLERS = 2
"""DescribeCluster's endpoint types."""


@contextmanager
def connect(
    servers: str, *, timeout: float = 10.0, security: ClientSecurity = PLAINTEXT
) -> Iterator[BrokerConnection]:
    """A connection to the first of ``servers`` that accepts one (else ``CliError``)."""
    try:
        addresses = parse_servers(servers)
    except ValueError as error:
        raise CliError(str(error)) from None
    failures: list[str] = []
    for host, port in addresses:
        try:
            connection = BrokerConnection(
                host, port, timeout=timeout, client_id="strom-cli", security=security
            )
        except OSError as error:
            failures.append(f"{host}:{port} ({error.strerror or error})")
            continue
        with connection:
            yield connection
        return
    raise CliError(f"cannot reach {', '.join(failures)}; is the server running?")


def command_config_connection(
    bootstrap_server: str | None, command_config: Path | None
) -> AbstractContextManager[BrokerConnection]:
    """A connection to the cluster with the security settings of ``--command-config``
    (librdkafka's names, see ``librdkafka_security``)."""
    config = ClientConfig.build(bootstrap_server=bootstrap_server, command_config=command_config)
    return connect(
        config.bootstrap_servers,
        timeout=config.connect_timeout_s + 30,
        security=librdkafka_security(config.settings),
    )


@dataclass(frozen=True, slots=True)
class Replica:
    node_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int
    voter: bool
    directory_id: str | None = None
    """Kafka's base64 form (DescribeQuorum v2), None when the quorum does not know it."""


@dataclass(frozen=True, slots=True)
class QuorumState:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    replicas: tuple[Replica, ...]
    endpoints: dict[int, list[str]]
    """The voters' listeners, ``NAME://host:port`` (DescribeQuorum v2's nodes)."""


def describe_quorum(connection: BrokerConnection) -> QuorumState:
    """The quorum as its leader describes it (a broker forwards the question)."""
    request = DescribeQuorumRequest(
        topics=(
            TopicData(
                topic_name=TopicName("__cluster_metadata"),
                partitions=(PartitionData(partition_index=i32(0)),),
            ),
        )
    )
    try:
        response: Any = connection.request(request)
    except OSError as error:
        raise CliError(f"DescribeQuorum failed: {error}") from None
    _check(ErrorCode(response.error_code), response.error_message)
    [partition] = response.topics[0].partitions
    _check(ErrorCode(partition.error_code), partition.error_message)

    def replicas(states: Any, *, voter: bool) -> list[Replica]:
        return [
            Replica(
                int(state.replica_id),
                int(state.log_end_offset),
                int(state.last_fetch_timestamp),
                int(state.last_caught_up_timestamp),
                voter,
                _kafka_uuid(state.replica_directory_id),
            )
            for state in states
        ]

    return QuorumState(
        leader_id=int(partition.leader_id),
        leader_epoch=int(partition.leader_epoch),
        high_watermark=int(partition.high_watermark),
        replicas=tuple(
            replicas(partition.current_voters, voter=True)
            + replicas(partition.observers, voter=False)
        ),
        endpoints={
            int(node.node_id): [f"{e.name}://{e.host}:{e.port}" for e in node.listeners]
            for node in response.nodes
        },
    )


@dataclass(frozen=True, slots=True)
class Node:
    node_id: int
    host: str
    port: int
    rack: str | None
    fenced: bool


@dataclass(frozen=True, slots=True)
class ClusterState:
    cluster_id: str
    controller_id: int
    nodes: tuple[Node, ...]


def describe_cluster(connection: BrokerConnection, *, endpoint_type: int = BROKERS) -> ClusterState:
    """The registered brokers, fenced ones included (or the controllers, from a controller)."""
    request = DescribeClusterRequest(
        include_cluster_authorized_operations=False,
        endpoint_type=i8(endpoint_type),
        include_fenced_brokers=True,
    )
    try:
        response: Any = connection.request(request)
    except OSError as error:
        raise CliError(f"DescribeCluster failed: {error}") from None
    _check(ErrorCode(response.error_code), response.error_message)
    return ClusterState(
        cluster_id=str(response.cluster_id),
        controller_id=int(response.controller_id),
        nodes=tuple(
            Node(int(b.broker_id), b.host, int(b.port), b.rack, bool(b.is_fenced))
            for b in response.brokers
        ),
    )


def replica_counts(connection: BrokerConnection) -> dict[int, tuple[int, int]]:
    """Per broker, the partitions it leads and the replicas it holds (Metadata, all topics)."""
    request = MetadataRequest(
        topics=None,
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    try:
        response: Any = connection.request(request)
    except OSError as error:
        raise CliError(f"Metadata failed: {error}") from None
    leaders: Counter[int] = Counter()
    replicas: Counter[int] = Counter()
    for topic in response.topics:
        for partition in topic.partitions:
            leaders[int(partition.leader_id)] += 1
            replicas.update(int(replica) for replica in partition.replica_nodes)
    return {broker: (leaders[broker], replicas[broker]) for broker in replicas | leaders}


def ask_quorum(servers: str, *, controllers: bool) -> tuple[QuorumState, str]:
    """The quorum's state and the cluster id. Through a broker (it forwards the question to the
    active controller), or through a controller: it names the active one and its address
    (DescribeCluster on the controller listener), which is then asked, as Kafka's admin client
    does."""
    with connect(servers) as connection:
        if not controllers:
            return describe_quorum(connection), describe_cluster(connection).cluster_id
        cluster = describe_cluster(connection, endpoint_type=CONTROLLERS)
        active = next((n for n in cluster.nodes if n.node_id == cluster.controller_id), None)
        if active is None:
            raise CliError("the quorum has no active controller right now; try again shortly")
    with connect(f"{active.host}:{active.port}") as connection:
        return describe_quorum(connection), cluster.cluster_id


def change_voters(servers: str, *, controllers: bool, request: RequestPayload) -> None:
    """Send AddRaftVoter or RemoveRaftVoter (KIP-853) to the quorum's leader: through a broker
    (it forwards), or to the active controller found through a controller; a ``CliError`` names
    what the leader refused."""
    if controllers:
        with connect(servers) as connection:
            cluster = describe_cluster(connection, endpoint_type=CONTROLLERS)
        active = next((n for n in cluster.nodes if n.node_id == cluster.controller_id), None)
        if active is None:
            raise CliError("the quorum has no active controller right now; try again shortly")
        servers = f"{active.host}:{active.port}"
    with connect(servers, timeout=60.0) as connection:
        try:
            response: Any = connection.request(request)
        except OSError as error:
            raise CliError(
                f"{type(request).__name__.removesuffix('Request')} failed: {error}"
            ) from None
    _check(ErrorCode(response.error_code), response.error_message)


def _kafka_uuid(value: uuid.UUID | None) -> str | None:
    if value is None or value.int == 0:
        return None
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def _check(code: ErrorCode, message: str | None) -> None:
    if code is not ErrorCode.none:
        raise CliError(f"{code.name.upper()}: {message or 'refused by the cluster'}")
