"""What a nemesis asks a running cluster before it strikes: who leads a partition, who
coordinates a group or a transactional id, which controller is active.

Each question goes to the live, unpaused brokers in turn with strom's blocking client (an
admin client would stick to a broker that is down), and is retried until the cluster has an
answer or the timeout passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import TopicName
from kio.static.primitive import i8

from strom.client.blocking import BrokerConnection
from strom.testing.cluster import Cluster, ClusterError

__all__ = ["PartitionState", "coordinator", "leader", "partition_states"]

_GROUP: Final = i8(0)
_TRANSACTION: Final = i8(1)
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class PartitionState:
    leader: int
    """-1 while the partition has none."""
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


def _ask_brokers(cluster: Cluster, question: Callable[[BrokerConnection], _T | None]) -> _T | None:
    """The first answer a live broker gives (None: none could answer)."""
    for broker_id in cluster.broker_ids:
        node = cluster.nodes[broker_id]
        if not node.alive or node.paused:
            continue
        host, port = node.address.rsplit(":", 1)
        try:
            with BrokerConnection(host, int(port), timeout=2.0) as connection:
                answer = question(connection)
        except OSError:
            continue
        if answer is not None:
            return answer
    return None


def _until(
    cluster: Cluster,
    question: Callable[[BrokerConnection], _T | None],
    *,
    timeout: float,
    what: str,
) -> _T:
    deadline = time.monotonic() + timeout
    while True:
        answer = _ask_brokers(cluster, question)
        if answer is not None:
            return answer
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


def partition_states(
    cluster: Cluster, topic: str, *, timeout: float = 30.0
) -> dict[int, PartitionState]:
    """Each partition's leader, ISR and replicas, as a live broker's metadata has them."""
    request = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name=TopicName(topic)),),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )

    def ask(connection: BrokerConnection) -> dict[int, PartitionState] | None:
        [described] = connection.request(request).topics
        if described.error_code != 0 or not described.partitions:
            return None
        return {
            int(p.partition_index): PartitionState(
                leader=int(p.leader_id),
                isr=tuple(int(b) for b in p.isr_nodes),
                replicas=tuple(int(b) for b in p.replica_nodes),
            )
            for p in described.partitions
        }

    return _until(cluster, ask, timeout=timeout, what=f"the partitions of {topic!r}")


def leader(cluster: Cluster, topic: str, partition: int = 0, *, timeout: float = 30.0) -> int:
    """The broker leading the partition (waits while it has none)."""
    deadline = time.monotonic() + timeout
    while True:
        state = partition_states(cluster, topic, timeout=timeout).get(partition)
        if state is not None and state.leader >= 0:
            return state.leader
        if time.monotonic() > deadline:
            raise ClusterError(f"{topic}-{partition} has no leader after {timeout:g} s")
        time.sleep(0.2)


def coordinator(
    cluster: Cluster, key: str, *, transactional: bool = False, timeout: float = 30.0
) -> int:
    """The broker coordinating the group (or, ``transactional``, the transactional id)."""
    request = FindCoordinatorRequest(key=key, key_type=_TRANSACTION if transactional else _GROUP)

    def ask(connection: BrokerConnection) -> int | None:
        answer = connection.request(request)
        return int(answer.node_id) if answer.error_code == 0 else None

    kind = "transaction" if transactional else "group"
    return _until(cluster, ask, timeout=timeout, what=f"the {kind} coordinator of {key!r}")
