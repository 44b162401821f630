"""A node's metrics, built at scrape time under the names the Prometheus JMX exporter's
standard Kafka rules give Kafka's own (and kafka-exporter's for consumer lag), so that existing
dashboards and alerts read strom as they read Kafka. docs/metrics.md lists them.

Counters come from :class:`~strom.server.metrics.NodeMetrics` (moved per batch and per request
where the events happen); gauges are read from what the node holds (the replica manager's
partitions, the coordinators' groups and transactions, the quorum's state, the metadata image),
so that nothing is kept up to date per event. The text is written by ``exposition``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from strom.metadata.image import MetadataImage
from strom.server.broker.broker import Broker
from strom.server.controller.controller_server import ControllerServer
from strom.server.exposition import (
    COUNTER,
    GAUGE,
    SUMMARY,
    Family,
    counter,
    gauge,
    labels,
    render,
)
from strom.server.metrics import NodeMetrics, RequestTimes
from strom.server.network.listener import Listener
from strom.server.raft.raft_manager import RaftManager

__all__ = ["QUANTILES", "NodeCollector", "NodeParts"]

QUANTILES: Final = (0.5, 0.75, 0.95, 0.98, 0.99, 0.999)
"""The request time quantiles (Yammer histograms' percentiles, as the JMX exporter names
them: 0.5 for 50thPercentile...)."""


@dataclass(frozen=True, slots=True)
class NodeParts:
    """What a scrape reads: the roles present on the node (None: not this node's role)."""

    metrics: NodeMetrics
    image: Callable[[], MetadataImage]
    """The committed metadata image."""
    raft: Callable[[], RaftManager | None]
    broker: Callable[[], Broker | None]
    controller: Callable[[], ControllerServer | None]
    listeners: Callable[[], Sequence[Listener]]
    """Every Kafka listener of the node (its request queue)."""


class NodeCollector:
    """Every family of one node (see the module doc)."""

    def __init__(self, parts: NodeParts) -> None:
        self._parts = parts
        self._last_busy = (time.monotonic(), time.thread_time())
        self._partition_labels: dict[tuple[str, int], str] = {}
        """A partition's ``{topic=..,partition=..}`` by (topic, partition), made once: with
        the lines' f-strings, what a scrape of many partitions costs (tuple keys: a
        ``TopicPartition``'s dataclass hash is several times slower)."""

    def render(self) -> bytes:
        """The text of a scrape."""
        return render(list(self.collect()))

    def collect(self) -> Iterator[Family]:
        parts = self._parts
        yield from self._topic_metrics()
        yield from self._request_metrics()
        yield from self._network_metrics()
        broker = parts.broker()
        if broker is not None:
            high_watermarks: dict[tuple[str, int], int] = {}
            yield from self._replica_metrics(broker, high_watermarks)
            yield from self._coordinator_metrics(broker, high_watermarks)
        yield from _controller_metrics(parts.controller(), parts.image())
        raft = parts.raft()
        if raft is not None:
            yield from _raft_metrics(raft)

    def _topic_metrics(self) -> Iterator[Family]:
        metrics = self._parts.metrics
        existing = self._parts.image().topics.topics_by_name
        for deleted in [topic for topic in metrics.topics if topic not in existing]:
            del metrics.topics[deleted]  # as Kafka drops a deleted topic's BrokerTopicMetrics
        for field, name, doc in (
            ("messages_in", "messagesin", "Records appended as a leader."),
            ("bytes_in", "bytesin", "Bytes appended as a leader."),
            ("bytes_out", "bytesout", "Bytes sent to consumers."),
        ):
            family = Family(f"kafka_server_brokertopicmetrics_{name}", COUNTER, doc)
            family.add(getattr(metrics.total, field))
            for topic, counts in metrics.topics.items():
                family.add(getattr(counts, field), labels(topic=topic))
            yield family

    def _request_metrics(self) -> Iterator[Family]:
        requests = self._parts.metrics.requests
        total = Family("kafka_network_requestmetrics_requests", COUNTER, "Requests answered.")
        times = Family(
            "kafka_network_requestmetrics_totaltimems",
            SUMMARY,
            "Milliseconds from reading a request to its answer.",
        )
        for request, counts in sorted(requests.items()):
            for version, count in sorted(counts.by_version.items()):
                total.add(count, labels(request=request, version=str(version)))
            _add_quantiles(times, request, counts)
        yield total
        yield times

    def _network_metrics(self) -> Iterator[Family]:
        """The request queue, and how idle the node's one thread was since the last scrape
        (1 - its CPU time over the wall time): the loop does the network processors' and the
        request handlers' work both."""
        queued = sum(listener.requests_in_flight for listener in self._parts.listeners())
        yield gauge(
            "kafka_network_requestchannel_requestqueuesize",
            "Requests read and not yet answered.",
            queued,
        )
        now = (time.monotonic(), time.thread_time())
        (wall_before, cpu_before), self._last_busy = self._last_busy, now
        wall = now[0] - wall_before
        idle = 1.0 if wall <= 0 else min(1.0, max(0.0, 1 - (now[1] - cpu_before) / wall))
        yield gauge(
            "kafka_network_socketserver_networkprocessoravgidle_percent",
            "Fraction of time the network loop was idle since the last scrape.",
            idle,
        )
        yield gauge(
            "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent",
            "Fraction of time the request handling loop was idle since the last scrape.",
            idle,
        )

    def _replica_metrics(
        self, broker: Broker, high_watermarks: dict[tuple[str, int], int]
    ) -> Iterator[Family]:
        """Kafka's ReplicaManager gauges and its logs' sizes and offsets; fills
        ``high_watermarks`` (for the groups' lag)."""
        metrics = self._parts.metrics
        partitions = broker.replica_manager.local_partitions
        known, texts = self._partition_labels, {}
        leaders = under_replicated = 0
        size = Family("kafka_log_log_size", GAUGE, "Bytes in the partition's log.")
        end = Family("kafka_log_log_logendoffset", GAUGE, "The partition's log end offset.")
        start = Family("kafka_log_log_logstartoffset", GAUGE, "The partition's log start offset.")
        traffic = broker.replica_manager.traffic
        rates = traffic.counts
        bytes_in = Family("kafka_log_partition_bytesin", COUNTER, "Bytes appended as a leader.")
        bytes_out = Family("kafka_log_partition_bytesout", COUNTER, "Bytes sent to consumers.")
        size_lines, end_lines, start_lines = size.lines, end.lines, start.lines
        for tp, partition in partitions.items():
            replication = partition.replication  # None unless led here
            if replication is not None:
                leaders += 1
                if len(replication.isr) < len(replication.replicas):
                    under_replicated += 1
            key = (tp.topic, tp.partition)
            text = known.get(key) or labels(topic=tp.topic, partition=str(tp.partition))
            texts[key] = text
            log = partition.log
            high_watermarks[key] = log.high_watermark
            size_lines.append(f"kafka_log_log_size{text} {log.size}")
            end_lines.append(f"kafka_log_log_logendoffset{text} {log.log_end_offset}")
            start_lines.append(f"kafka_log_log_logstartoffset{text} {log.log_start_offset}")
            counts = rates.get(key)
            if counts is not None:
                bytes_in.lines.append(f"kafka_log_partition_bytesin_total{text} {counts[0]}")
                bytes_out.lines.append(f"kafka_log_partition_bytesout_total{text} {counts[1]}")
        self._partition_labels = texts  # the partitions gone here are forgotten
        traffic.forget_others(texts)
        prefix = "kafka_server_replicamanager_"
        yield gauge(prefix + "partitioncount", "Partitions held here.", len(partitions))
        yield gauge(prefix + "leadercount", "Partitions led here.", leaders)
        yield gauge(
            prefix + "underreplicatedpartitions",
            "Partitions led here whose ISR is smaller than their replicas.",
            under_replicated,
        )
        yield counter(prefix + "isrshrinks", "ISR shrinks committed.", metrics.isr_shrinks)
        yield counter(prefix + "isrexpands", "ISR expansions committed.", metrics.isr_expands)
        yield size
        yield end
        yield start
        yield bytes_in
        yield bytes_out

    def _coordinator_metrics(
        self, broker: Broker, high_watermarks: dict[tuple[str, int], int]
    ) -> Iterator[Family]:
        """The groups and transactions coordinated here, and each group's lag on the
        partitions whose log is here (kafka-exporter's ``kafka_consumergroup_lag``)."""
        groups = broker.group_coordinator.core.groups
        yield gauge(
            "kafka_coordinator_group_groupmetadatamanager_numgroups",
            "Groups coordinated here.",
            len(groups),
        )
        yield gauge(
            "kafka_coordinator_group_groupmetadatamanager_numoffsets",
            "Committed offsets of the groups coordinated here.",
            sum(len(group.offsets) for group in groups.values()),
        )
        yield gauge(
            "kafka_coordinator_transaction_transactionstatemanager_numtransactionalids",
            "Transactional ids coordinated here.",
            len(broker.txn_coordinator.core.transactions),
        )
        known = self._partition_labels
        lag = Family("kafka_consumergroup_lag", GAUGE, "High watermark minus committed offset.")
        current = Family(
            "kafka_consumergroup_current_offset", GAUGE, "The group's committed offset."
        )
        lag_lines, current_lines = lag.lines, current.lines
        for group_id, group in groups.items():
            group_text = labels(consumergroup=group_id)[:-1] + ","
            for key, committed in group.offsets.items():
                text = known.get(key) or labels(topic=key[0], partition=str(key[1]))
                text = group_text + text[1:]
                offset = committed.offset
                current_lines.append(f"kafka_consumergroup_current_offset{text} {offset}")
                high_watermark = high_watermarks.get(key)
                if high_watermark is not None:
                    lag_lines.append(
                        f"kafka_consumergroup_lag{text} {max(0, high_watermark - offset)}"
                    )
        yield lag
        yield current


def _add_quantiles(family: Family, request: str, times: RequestTimes) -> None:
    text = labels(request=request)
    samples = sorted(times.samples)
    if samples:
        last = len(samples) - 1
        for quantile in QUANTILES:
            value = samples[min(last, round(quantile * last))]
            family.add(value, labels(request=request, quantile=str(quantile)))
    family.add(times.count, text, "_count")
    family.add(times.sum_ms, text, "_sum")


def _controller_metrics(
    controller: ControllerServer | None, image: MetadataImage
) -> Iterator[Family]:
    """Kafka's KafkaController gauges: the counts are the active controller's (0 elsewhere,
    as Kafka reports them)."""
    active = controller is not None and controller.is_active
    offline = total = topics = 0
    if active:
        for topic in image.topics.topics_by_name.values():
            topics += 1
            total += len(topic.partitions)
            offline += sum(1 for p in topic.partitions.values() if p.leader < 0)
    prefix = "kafka_controller_kafkacontroller_"
    yield gauge(
        prefix + "activecontrollercount",
        "Whether this node is the active controller (1) or not (0).",
        int(active),
    )
    yield gauge(prefix + "globalpartitioncount", "Partitions in the cluster.", total)
    yield gauge(prefix + "offlinepartitionscount", "Partitions without a leader.", offline)
    yield gauge(prefix + "globaltopiccount", "Topics in the cluster.", topics)


def _raft_metrics(raft: RaftManager) -> Iterator[Family]:
    """The quorum's state as Kafka's ``raft-metrics`` (Strimzi's KRaft rules' names)."""
    client = raft.client
    leader = client.leader_and_epoch
    prefix = "kafka_server_raftmetrics_"
    yield gauge(
        prefix + "current_leader",
        "The quorum's leader (-1: none known).",
        -1 if leader.leader_id is None else leader.leader_id,
    )
    yield gauge(prefix + "current_epoch", "The quorum's epoch.", leader.epoch)
    high_watermark = client.high_watermark
    yield gauge(
        prefix + "high_watermark",
        "The metadata log's high watermark (-1: unknown).",
        -1 if high_watermark is None else high_watermark,
    )
    log_end = client.log_end().offset
    yield gauge(prefix + "log_end_offset", "The metadata log's end offset.", log_end)
    yield gauge(
        prefix + "current_state",
        "This node's role in the quorum (label current_state).",
        1,
        labels(current_state=client.role.value),
    )
    commits = raft.commit_latencies
    yield gauge(
        prefix + "commit_latency_avg",
        "Mean milliseconds from appending a batch as leader to its commit (recent ones).",
        sum(commits) / len(commits) if commits else 0.0,
    )
    yield gauge(
        prefix + "commit_latency_max",
        "Longest milliseconds from appending a batch as leader to its commit (recent ones).",
        max(commits) if commits else 0.0,
    )
