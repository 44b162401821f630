"""The counters a node's hot paths move, read when its metrics are scraped (``node_metrics``).

Every layer that sees an event (a connection answering a request, the replica manager
appending a batch or answering a consumer's fetch, an ISR change committed) holds the node's
:class:`NodeMetrics`, or None when ``metrics.listener`` is off (then nothing is counted). The
updates are plain integer additions, once per batch or per request, never per record: the
Prometheus families are built only at scrape time, from these numbers and from what the node
already holds (partitions, groups, the quorum's state).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from strom.protocol.api import ApiKey

__all__ = [
    "TIME_SAMPLES",
    "NodeMetrics",
    "PartitionTraffic",
    "RequestTimes",
    "TopicCounts",
    "request_name",
]

TIME_SAMPLES: Final = 1028
"""The request times kept per API for the quantiles (Yammer's histogram reservoir size)."""


class TopicCounts:
    """One topic's counters (Kafka's ``BrokerTopicMetrics``)."""

    __slots__ = ("bytes_in", "bytes_out", "messages_in")

    def __init__(self) -> None:
        self.messages_in = 0
        self.bytes_in = 0
        self.bytes_out = 0


class PartitionTraffic:
    """Bytes in and out per partition, counted whether or not ``metrics.listener`` is set (as
    Kafka always measures them): the load the balancer's network goals read, reported to the
    controller with the heartbeats (``server/broker/load_reporter``) and served as
    ``kafka_log_partition_bytesin_total`` / ``bytesout_total`` on the metrics listener."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[tuple[str, int], list[int]] = {}
        """(topic, partition) -> [bytes appended as a leader, bytes sent to consumers]
        (tuple keys, as a scrape's)."""

    def _partition(self, topic: str, partition: int) -> list[int]:
        key = (topic, partition)
        counts = self.counts.get(key)
        if counts is None:
            counts = self.counts[key] = [0, 0]
        return counts

    def appended(self, topic: str, partition: int, size: int) -> None:
        """``size`` bytes were appended to the partition as its leader."""
        self._partition(topic, partition)[0] += size

    def sent(self, topic: str, partition: int, size: int) -> None:
        """``size`` bytes of the partition go to a consumer in a fetch answer."""
        self._partition(topic, partition)[1] += size

    def forget_others(self, held: Collection[tuple[str, int]]) -> None:
        """Drop the counters of partitions no longer held here."""
        for gone in [key for key in self.counts if key not in held]:
            del self.counts[gone]


class RequestTimes:
    """One API's answered requests by version, and its latest total times (Kafka's
    ``RequestMetrics``: RequestsPerSec and TotalTimeMs)."""

    __slots__ = ("_next", "by_version", "count", "samples", "sum_ms")

    def __init__(self) -> None:
        self.by_version: dict[int, int] = {}
        self.count = 0
        self.sum_ms = 0.0
        self.samples: list[float] = []
        """The last :data:`TIME_SAMPLES` total times, in milliseconds (a ring)."""
        self._next = 0

    def add(self, version: int, millis: float) -> None:
        by_version = self.by_version
        by_version[version] = by_version.get(version, 0) + 1
        self.count += 1
        self.sum_ms += millis
        samples = self.samples
        if len(samples) < TIME_SAMPLES:
            samples.append(millis)
        else:
            samples[self._next] = millis
            self._next = (self._next + 1) % TIME_SAMPLES


class NodeMetrics:
    """The counters of one node (see the module doc)."""

    __slots__ = ("isr_expands", "isr_shrinks", "requests", "topics", "total")

    def __init__(self) -> None:
        self.topics: dict[str, TopicCounts] = {}
        self.total = TopicCounts()
        """All topics together (Kafka's BrokerTopicMetrics without a topic)."""
        self.requests: dict[str, RequestTimes] = {}
        """Kafka's request name (``Produce``, ``OffsetCommit``...) -> its requests."""
        self.isr_shrinks = 0
        self.isr_expands = 0

    def _topic(self, topic: str) -> TopicCounts:
        counts = self.topics.get(topic)
        if counts is None:
            counts = self.topics[topic] = TopicCounts()
        return counts

    def appended(self, topic: str, messages: int, size: int) -> None:
        """A batch of ``messages`` records (``size`` bytes) was appended as a leader."""
        counts = self._topic(topic)
        counts.messages_in += messages
        counts.bytes_in += size
        total = self.total
        total.messages_in += messages
        total.bytes_in += size

    def sent(self, topic: str, size: int) -> None:
        """``size`` bytes of the topic go to a consumer in a fetch answer."""
        self._topic(topic).bytes_out += size
        self.total.bytes_out += size

    def answered(self, request: str, version: int, millis: float) -> None:
        """A request was answered ``millis`` after it was read."""
        times = self.requests.get(request)
        if times is None:
            times = self.requests[request] = RequestTimes()
        times.add(version, millis)


_REQUEST_NAMES: dict[int, str] = {}


def request_name(api_key: int) -> str:
    """Kafka's name of the API (``Produce``, ``OffsetCommit``): its ``request`` label."""
    name = _REQUEST_NAMES.get(api_key)
    if name is None:
        words = ApiKey(api_key).name.split("_")
        name = _REQUEST_NAMES[api_key] = "".join(word.capitalize() for word in words)
    return name
