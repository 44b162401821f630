"""A node's metrics, built at scrape time under the names the Prometheus JMX exporter's
standard Kafka rules give Kafka's own (and kafka-exporter's for consumer lag), so that existing
dashboards and alerts read strom as they read Kafka. docs/metrics.md lists them.

Counters come from :class:`~strom.server.metrics.NodeMetrics` (moved per batch and per request
where the events happen); gauges are read from what the node holds (the replica manager's
partitions, the coordinators' groups and transactions, the quorum's state, the metadata image),
so that nothing is kept up to date per event.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from strom.common import TopicPartition
from strom.metadata.image import MetadataImage
from strom.server.broker.broker import Broker
from strom.server.controller.controller_server import ControllerServer
from strom.server.metrics import NodeMetrics, RequestTimes
from strom.server.network.listener import Listener
from strom.server.raft.raft_manager import RaftManager

__all__ = ["QUANTILES", "NodeCollector", "NodeParts", "render"]

QUANTILES: Final = (0.5, 0.75, 0.95, 0.98, 0.99, 0.999)
"""The request time quantiles (Yammer histograms' percentiles, as the JMX exporter names
them: 0.50 for 50thPercentile...)."""


@dataclass(frozen=True, slots=True)
class NodeParts:
    """What a scrape reads: the roles present on the node (None: not this node's role)."""

    node_id: int
    metrics: NodeMetrics
    image: Callable[[], MetadataImage]
    """The committed metadata image."""
    raft: Callable[[], RaftManager | None]
    broker: Callable[[], Broker | None]
    controller: Callable[[], ControllerServer | None]
    listeners: Callable[[], Sequence[Listener]]
    """Every Kafka listener of the node (its request queue)."""


def _metric(name: str, doc: str, kind: str) -> Metric:
    return Metric(name, doc, kind)


def _gauge(name: str, doc: str, value: float, labels: dict[str, str] | None = None) -> Metric:
    metric = _metric(name, doc, "gauge")
    metric.add_sample(name, labels or {}, value)
    return metric


def _counter(name: str, doc: str, value: float) -> Metric:
    metric = _metric(name, doc, "counter")
    metric.add_sample(name + "_total", {}, value)
    return metric


class NodeCollector(Collector):
    """Every family of one node (see the module doc)."""

    def __init__(self, parts: NodeParts) -> None:
        self._parts = parts
        self._last_busy = (time.monotonic(), time.thread_time())

    def collect(self) -> Iterable[Metric]:
        parts = self._parts
        yield from self._topic_metrics()
        yield from self._request_metrics()
        yield from self._network_metrics()
        broker = parts.broker()
        if broker is not None:
            yield from _replica_metrics(broker, parts.metrics)
            yield from _coordinator_metrics(broker)
        yield from _controller_metrics(parts.controller(), parts.image())
        raft = parts.raft()
        if raft is not None:
            yield from _raft_metrics(raft)

    def _topic_metrics(self) -> Iterator[Metric]:
        metrics = self._parts.metrics
        for field, name, doc in (
            ("messages_in", "messagesin", "Records appended as a leader."),
            ("bytes_in", "bytesin", "Bytes appended as a leader."),
            ("bytes_out", "bytesout", "Bytes sent to consumers."),
        ):
            family = f"kafka_server_brokertopicmetrics_{name}"
            metric = _metric(family, doc, "counter")
            metric.add_sample(family + "_total", {}, getattr(metrics.total, field))
            for topic, counts in metrics.topics.items():
                metric.add_sample(family + "_total", {"topic": topic}, getattr(counts, field))
            yield metric

    def _request_metrics(self) -> Iterator[Metric]:
        requests = self._parts.metrics.requests
        total = _metric(
            "kafka_network_requestmetrics_requests", "Requests answered, by API.", "counter"
        )
        times = _metric(
            "kafka_network_requestmetrics_totaltimems",
            "Milliseconds from reading a request to its answer, by API.",
            "summary",
        )
        for request, counts in sorted(requests.items()):
            for version, count in sorted(counts.by_version.items()):
                total.add_sample(
                    "kafka_network_requestmetrics_requests_total",
                    {"request": request, "version": str(version)},
                    count,
                )
            _add_quantiles(times, request, counts)
        yield total
        yield times

    def _network_metrics(self) -> Iterator[Metric]:
        """The request queue, and how idle the node's one thread was since the last scrape
        (1 - its CPU time over the wall time): the loop does the network processors' and the
        request handlers' work both."""
        queued = sum(listener.requests_in_flight for listener in self._parts.listeners())
        yield _gauge(
            "kafka_network_requestchannel_requestqueuesize",
            "Requests read and not yet answered.",
            queued,
        )
        now = (time.monotonic(), time.thread_time())
        (wall_before, cpu_before), self._last_busy = self._last_busy, now
        wall = now[0] - wall_before
        idle = 1.0 if wall <= 0 else min(1.0, max(0.0, 1 - (now[1] - cpu_before) / wall))
        yield _gauge(
            "kafka_network_socketserver_networkprocessoravgidle_percent",
            "Fraction of time the network loop was idle since the last scrape.",
            idle,
        )
        yield _gauge(
            "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent",
            "Fraction of time the request handling loop was idle since the last scrape.",
            idle,
        )


def _add_quantiles(metric: Metric, request: str, times: RequestTimes) -> None:
    name = metric.name
    labels = {"request": request}
    samples = sorted(times.samples)
    if samples:
        last = len(samples) - 1
        for quantile in QUANTILES:
            value = samples[min(last, round(quantile * last))]
            metric.add_sample(name, {**labels, "quantile": str(quantile)}, value)
    metric.add_sample(name + "_count", labels, times.count)
    metric.add_sample(name + "_sum", labels, times.sum_ms)


def _replica_metrics(broker: Broker, metrics: NodeMetrics) -> Iterator[Metric]:
    """Kafka's ReplicaManager gauges and its logs' sizes and offsets."""
    partitions = broker.replica_manager.local_partitions
    leaders = under_replicated = 0
    size = _metric("kafka_log_log_size", "Bytes in the partition's log.", "gauge")
    end = _metric("kafka_log_log_logendoffset", "The partition's log end offset.", "gauge")
    start = _metric("kafka_log_log_logstartoffset", "The partition's log start offset.", "gauge")
    for tp, partition in partitions.items():
        if partition.is_leader:
            leaders += 1
            if len(partition.isr) < len(partition.registration.replicas):
                under_replicated += 1
        labels = {"topic": tp.topic, "partition": str(tp.partition)}
        log = partition.log
        size.add_sample("kafka_log_log_size", labels, log.size)
        end.add_sample("kafka_log_log_logendoffset", labels, log.log_end_offset)
        start.add_sample("kafka_log_log_logstartoffset", labels, log.log_start_offset)
    prefix = "kafka_server_replicamanager_"
    yield _gauge(prefix + "partitioncount", "Partitions held here.", len(partitions))
    yield _gauge(prefix + "leadercount", "Partitions led here.", leaders)
    yield _gauge(
        prefix + "underreplicatedpartitions",
        "Partitions led here whose ISR is smaller than their replicas.",
        under_replicated,
    )
    yield _counter(prefix + "isrshrinks", "ISR shrinks committed.", metrics.isr_shrinks)
    yield _counter(prefix + "isrexpands", "ISR expansions committed.", metrics.isr_expands)
    yield size
    yield end
    yield start


def _coordinator_metrics(broker: Broker) -> Iterator[Metric]:
    """The groups and transactions coordinated here, and each group's lag on the partitions
    whose log is here (kafka-exporter's ``kafka_consumergroup_lag``)."""
    groups = broker.group_coordinator.core.groups
    yield _gauge(
        "kafka_coordinator_group_groupmetadatamanager_numgroups",
        "Groups coordinated here.",
        len(groups),
    )
    yield _gauge(
        "kafka_coordinator_group_groupmetadatamanager_numoffsets",
        "Committed offsets of the groups coordinated here.",
        sum(len(group.offsets) for group in groups.values()),
    )
    yield _gauge(
        "kafka_coordinator_transaction_transactionstatemanager_numtransactionalids",
        "Transactional ids coordinated here.",
        len(broker.txn_coordinator.core.transactions),
    )
    partitions = broker.replica_manager.local_partitions
    lag = _metric("kafka_consumergroup_lag", "High watermark minus committed offset.", "gauge")
    current = _metric(
        "kafka_consumergroup_current_offset", "The group's committed offset.", "gauge"
    )
    for group_id, group in groups.items():
        for (topic, index), committed in group.offsets.items():
            labels = {"consumergroup": group_id, "topic": topic, "partition": str(index)}
            current.add_sample("kafka_consumergroup_current_offset", labels, committed.offset)
            partition = partitions.get(TopicPartition(topic, index))
            if partition is not None:
                behind = max(0, partition.log.high_watermark - committed.offset)
                lag.add_sample("kafka_consumergroup_lag", labels, behind)
    yield lag
    yield current


def _controller_metrics(
    controller: ControllerServer | None, image: MetadataImage
) -> Iterator[Metric]:
    """Kafka's KafkaController gauges: the counts are the active controller's (0 elsewhere,
    as Kafka reports them)."""
    active = controller is not None and controller.is_active
    offline = total = 0
    if active:
        for topic in image.topics.topics_by_name.values():
            total += len(topic.partitions)
            offline += sum(1 for p in topic.partitions.values() if p.leader < 0)
    prefix = "kafka_controller_kafkacontroller_"
    yield _gauge(prefix + "activecontrollercount", "1 on the active controller.", int(active))
    yield _gauge(prefix + "globalpartitioncount", "Partitions in the cluster.", total)
    yield _gauge(prefix + "offlinepartitionscount", "Partitions without a leader.", offline)
    yield _gauge(
        prefix + "globaltopiccount",
        "Topics in the cluster.",
        len(image.topics.topics_by_name) if active else 0,
    )


def _raft_metrics(raft: RaftManager) -> Iterator[Metric]:
    """The quorum's state as Kafka's ``raft-metrics`` (Strimzi's KRaft rules' names)."""
    client = raft.client
    leader = client.leader_and_epoch
    prefix = "kafka_server_raftmetrics_"
    yield _gauge(
        prefix + "current_leader",
        "The quorum's leader (-1: none known).",
        -1 if leader.leader_id is None else leader.leader_id,
    )
    yield _gauge(prefix + "current_epoch", "The quorum's epoch.", leader.epoch)
    high_watermark = client.high_watermark
    yield _gauge(
        prefix + "high_watermark",
        "The metadata log's high watermark (-1: unknown).",
        -1 if high_watermark is None else high_watermark,
    )
    yield _gauge(
        prefix + "log_end_offset", "The metadata log's end offset.", client.log_end().offset
    )
    yield _gauge(
        prefix + "current_state",
        "This node's role in the quorum (label current_state).",
        1,
        {"current_state": client.role.value},
    )
    commits = raft.commit_latencies
    yield _gauge(
        prefix + "commit_latency_avg",
        "Mean milliseconds from appending a record as leader to its commit (recent).",
        sum(commits) / len(commits) if commits else 0.0,
    )
    yield _gauge(
        prefix + "commit_latency_max",
        "Longest milliseconds from appending a record as leader to its commit (recent).",
        max(commits) if commits else 0.0,
    )


def render(registry: CollectorRegistry) -> bytes:
    """The registry's families in Prometheus's text format."""
    return generate_latest(registry)
