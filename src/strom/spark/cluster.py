"""What the driver asks the cluster: which partitions a subscription covers and their offsets.

One ``Cluster`` per query plan, over confluent-kafka's AdminClient (metadata, ListOffsets in one
request for all partitions) and, for ``maxBytesPerTrigger`` only, a Consumer that measures
record sizes. Every call is bounded by ``kafka.default.api.timeout.ms``; an unreachable broker
or a misspelt client setting fails with one clear message, never a hang.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, _listoffsets

from strom.common import TopicPartition
from strom.spark.offsets import EARLIEST, LATEST, OffsetSpec, PartitionOffsets, SpecKind
from strom.spark.options import OptionError, Subscription, SubscriptionKind

__all__ = ["Cluster", "ClusterError", "consumer_settings"]

_PARTITION_EOF = KafkaError._PARTITION_EOF
_KAFKA_SPEC: Any = _listoffsets.OffsetSpec  # ListOffsets specs; their methods are untyped
SAMPLE_RECORDS = 10_000
"""At most this many records per partition are measured for ``maxBytesPerTrigger``."""


class ClusterError(RuntimeError):
    """The cluster could not answer (unreachable, unknown topic, timeout)."""


def consumer_settings(client: Mapping[str, str]) -> dict[str, Any]:
    """librdkafka consumer settings: the user's, plus what the source needs to own.

    No group commits, no automatic reset (a missing offset is data loss to report), partition
    EOF events (a range whose tail is gone ends there), read_uncommitted unless asked (Java's
    default, which Spark inherits; librdkafka's is read_committed). A partition whose local
    queue holds more than ``queued.min.messages`` is fetched again 1 ms later, not after
    librdkafka's default second, which idles a task that drains its queue faster.
    """
    settings: dict[str, Any] = {
        "group.id": f"spark-strom-source-{uuid.uuid4()}",
        "isolation.level": "read_uncommitted",
        "fetch.queue.backoff.ms": "1",
        **client,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "error",
        "enable.partition.eof": True,
    }
    return settings


def _client_error(exc: KafkaException | ValueError | TypeError) -> Exception:
    text = str(exc.args[0]) if exc.args else str(exc)
    if "configuration property" in text or "Invalid value" in text:
        return OptionError(f"bad kafka.* option: {text}")
    return ClusterError(text)


class Cluster:
    """Metadata and offsets of a cluster, for the driver; ``close()`` when done."""

    def __init__(self, client: Mapping[str, str], *, timeout_ms: int) -> None:
        self._client = dict(client)
        self._timeout = timeout_ms / 1000
        admin_settings: dict[str, Any] = {
            k: v
            for k, v in client.items()
            if k not in ("isolation.level", "group.id", "fetch.wait.max.ms")
        }
        try:
            self._admin = AdminClient(admin_settings)
        except (KafkaException, ValueError, TypeError) as exc:
            raise _client_error(exc) from None
        level = client.get("isolation.level", "read_uncommitted")
        self._isolation = (
            IsolationLevel.READ_COMMITTED
            if level == "read_committed"
            else IsolationLevel.READ_UNCOMMITTED
        )
        self._consumer: Any = None

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def partitions(self, subscription: Subscription) -> list[TopicPartition]:
        """The partitions the subscription covers now (assign: exactly those named)."""
        if subscription.kind is SubscriptionKind.ASSIGN:
            self._metadata()  # fail early when the broker cannot be reached
            return list(subscription.partitions)
        metadata = self._metadata()
        out: list[TopicPartition] = []
        for name, topic in metadata.topics.items():
            if name.startswith("__") or not subscription.matches(name):
                continue
            if topic.error is not None:
                continue  # e.g. being created or deleted; picked up by a later trigger
            out.extend(TopicPartition(name, p) for p in topic.partitions)
        return sorted(out)

    def _metadata(self) -> Any:
        try:
            return self._admin.list_topics(timeout=self._timeout)
        except KafkaException as exc:
            servers = self._client.get("bootstrap.servers", "")
            raise ClusterError(
                f"cannot reach the cluster at {servers!r} within {self._timeout:g}s: {exc.args[0]}"
            ) from None

    def _list_offsets(self, specs: Mapping[TopicPartition, Any]) -> PartitionOffsets:
        if not specs:
            return {}
        request = {KafkaTopicPartition(tp.topic, tp.partition): spec for tp, spec in specs.items()}
        try:
            futures = self._admin.list_offsets(
                request, isolation_level=self._isolation, request_timeout=self._timeout
            )
            return {
                TopicPartition(ktp.topic, ktp.partition): future.result(self._timeout).offset
                for ktp, future in futures.items()
            }
        except KafkaException as exc:
            raise ClusterError(f"cannot list offsets: {exc.args[0]}") from None
        except TimeoutError:
            raise ClusterError(f"listing offsets took more than {self._timeout:g}s") from None

    def earliest(self, partitions: Iterable[TopicPartition]) -> PartitionOffsets:
        return self._list_offsets({tp: _KAFKA_SPEC.earliest() for tp in partitions})

    def latest(self, partitions: Iterable[TopicPartition]) -> PartitionOffsets:
        return self._list_offsets({tp: _KAFKA_SPEC.latest() for tp in partitions})

    def resolve(
        self,
        spec: OffsetSpec,
        partitions: Iterable[TopicPartition],
        *,
        starting: bool,
        timestamp_not_found_latest: bool = False,
    ) -> PartitionOffsets:
        """Concrete offsets for a spec; JSON specs must name exactly these partitions.

        A timestamp with no record at or after it gives the latest offset for an ending spec, and
        for a starting spec an error (or the latest offset with the 'latest' strategy).
        """
        tps = sorted(partitions)
        if spec.kind is SpecKind.EARLIEST:
            return self.earliest(tps)
        if spec.kind is SpecKind.LATEST:
            return self.latest(tps)
        if spec.kind in (SpecKind.OFFSETS, SpecKind.TIMESTAMPS) and set(spec.offsets) != set(tps):
            named = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(spec.offsets))
            have = ", ".join(f"{tp.topic}-{tp.partition}" for tp in tps)
            which = "starting" if starting else "ending"
            raise OptionError(
                f"the {which} offsets must name every partition the query reads "
                f"(-2 for earliest, -1 for latest); named: [{named}], reading: [{have}]"
            )
        if spec.kind is SpecKind.OFFSETS:
            out = dict(spec.offsets)
            earliest = self.earliest(tp for tp, o in out.items() if o == EARLIEST)
            latest = self.latest(tp for tp, o in out.items() if o == LATEST)
            return {**out, **earliest, **latest}
        stamps = (
            dict(spec.offsets)
            if spec.kind is SpecKind.TIMESTAMPS
            else dict.fromkeys(tps, spec.timestamp)
        )
        found = self._list_offsets({tp: _KAFKA_SPEC.for_timestamp(t) for tp, t in stamps.items()})
        missing = [tp for tp, offset in found.items() if offset < 0]
        if missing and starting and not timestamp_not_found_latest:
            tp = missing[0]
            raise ClusterError(
                f"no offset matched timestamp {stamps[tp]} in {tp.topic}-{tp.partition} "
                "(set startingOffsetsByTimestampStrategy=latest to start from the latest offset)"
            )
        return {**found, **self.latest(missing)}

    def byte_limited(
        self, start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int], budget: int
    ) -> PartitionOffsets:
        """End offsets whose records (key + value + headers) fit ``budget`` bytes in all.

        The budget is shared among partitions in proportion to their lag; each partition with
        data moves at least one record. Records are measured by reading them; past
        ``SAMPLE_RECORDS`` records of one partition the rest is estimated from their mean size.
        """
        lags = {tp: end[tp] - start[tp] for tp in end if end[tp] > start[tp]}
        total = sum(lags.values())
        out = dict(end)
        for tp, lag in lags.items():
            out[tp] = self._fit(tp, start[tp], end[tp], max(1, budget * lag // total))
        return out

    def _fit(self, tp: TopicPartition, start: int, end: int, budget: int) -> int:
        consumer = self._sampler()
        consumer.assign([KafkaTopicPartition(tp.topic, tp.partition, start)])
        used = 0
        seen = 0
        position = start
        try:
            while position < end and seen < SAMPLE_RECORDS:
                messages = consumer.consume(min(1000, end - position), self._timeout)
                if not messages:
                    raise ClusterError(
                        f"no records from {tp.topic}-{tp.partition} at {position} "
                        f"within {self._timeout:g}s"
                    )
                for message in messages:
                    if message.error() is not None:
                        # End of the partition: the rest of the range holds no records. Any
                        # other error (offsets gone) is the reader's to report.
                        return end if message.error().code() == _PARTITION_EOF else position + 1
                    size = record_size(message)
                    if used + size > budget and position > start:
                        return position
                    used += size
                    seen += 1
                    position = message.offset() + 1
                    if position >= end:
                        return end
        finally:
            consumer.unassign()
        mean = used / max(1, seen)
        return min(end, position + int((budget - used) / max(1.0, mean)))

    def _sampler(self) -> Any:
        if self._consumer is None:
            settings = consumer_settings(self._client)
            try:
                self._consumer = Consumer(settings)
            except (KafkaException, ValueError, TypeError) as exc:
                raise _client_error(exc) from None
        return self._consumer


def record_size(message: Any) -> int:
    """Bytes of a record that count against ``maxBytesPerTrigger``: key, value, headers."""
    key = message.key()
    value = message.value()
    size = (len(key) if key else 0) + (len(value) if value else 0)
    for name, data in message.headers() or ():
        size += len(name) + (len(data) if data else 0)
    return size
