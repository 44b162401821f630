"""The balancer's model of the cluster from the controller's metadata image, and the throttles
of its moves, for ``strom.balancer.enable`` (:class:`strom.balancer.SelfBalancer`).

The image holds the active brokers, their racks and every partition's replicas; the partitions'
sizes and byte rates come from the brokers' load samples, reported with their heartbeats
(:class:`strom.balancer.load.LoadReports`), so the controller balances disk and network load
as well as replica and leader counts.
"""

from __future__ import annotations

from collections.abc import Sequence

from strom.balancer import BrokerModel, ClusterModel, Move, PartitionModel
from strom.balancer.load import LoadReports, with_loads
from strom.balancer.throttles import throttled_replicas
from strom.common import TopicPartition
from strom.controller.config_control import (
    AlterableConfig,
    AlterConfigOp,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from strom.metadata import ConfigResourceType, MetadataImage

__all__ = ["away_brokers", "cluster_model", "throttle_request"]

_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
_REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def cluster_model(image: MetadataImage, reports: LoadReports | None = None) -> ClusterModel:
    """The active brokers (unfenced, not shutting down) and every partition's replicas, with
    the loads the active brokers reported."""
    brokers = tuple(
        BrokerModel(broker_id, rack=broker.rack)
        for broker_id, broker in sorted(image.cluster.brokers.items())
        if broker.active
    )
    partitions = tuple(
        PartitionModel(TopicPartition(topic.name, index), tuple(partition.replicas))
        for topic in sorted(image.topics.topics_by_id.values(), key=lambda t: t.name)
        for index, partition in sorted(topic.partitions.items())
    )
    loads = {} if reports is None else reports.loads({b.id for b in brokers})
    return ClusterModel(brokers, with_loads(partitions, loads))


def away_brokers(image: MetadataImage) -> tuple[BrokerModel, ...]:
    """The brokers that hold replicas but are not active: fenced, shutting down, or no longer
    registered (self-healing's candidates)."""
    registered = image.cluster.brokers
    holding = {
        b
        for topic in image.topics.topics_by_id.values()
        for p in topic.partitions.values()
        for b in p.replicas
    }
    return tuple(
        BrokerModel(b, rack=registered[b].rack if b in registered else None)
        for b in sorted(holding)
        if b not in registered or not registered[b].active
    )


def throttle_request(moves: Sequence[Move], rate: int | None) -> IncrementalAlterConfigsRequest:
    """The throttles of ``moves`` at ``rate`` bytes/s, as ``kafka-reassign-partitions.sh
    --throttle`` sets them (None: the request that removes them once the moves are done)."""
    lists = throttled_replicas({m.tp: m.before for m in moves}, {m.tp: m.after for m in moves})
    brokers = sorted({b for m in moves if m.adding for b in (*m.before, *m.after)})

    def configs(names: tuple[str, str], values: tuple[str, str]) -> list[AlterableConfig]:
        if rate is None:
            return [AlterableConfig(name, None, AlterConfigOp.DELETE) for name in names]
        return [AlterableConfig(n, v) for n, v in zip(names, values, strict=True)]

    resources = [
        IncrementalAlterConfigsResource(ConfigResourceType.TOPIC, topic, configs(_REPLICAS, pair))
        for topic, pair in sorted(lists.items())
    ]
    resources += [
        IncrementalAlterConfigsResource(
            ConfigResourceType.BROKER, str(b), configs(_RATES, (str(rate), str(rate)))
        )
        for b in brokers
    ]
    return IncrementalAlterConfigsRequest(resources)
