"""``MirrorCheckpointConnector``: every ``emit.checkpoints.interval.seconds``, the committed
offsets of the source cluster's consumer groups (``groups`` minus ``groups.exclude``) for the
mirrored topics, translated through the offset syncs, as checkpoints (MM2's format) into the
target's ``<source>.checkpoints.internal``; with ``sync.group.offsets.enabled``, also committed
into the target's groups of the same name while those have no active member there (never moving
a group back). One Spark query: a data source that reads the offset syncs and the groups and
makes the changed checkpoints each trigger, and a ``foreachBatch`` that writes them."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition
from pyspark.sql import DataFrame
from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StructType

from strom.connect.config_def import Definition
from strom.connect.connectors.mirror.clients import TIMEOUT_S, Cluster, cluster_of, retry_reason
from strom.connect.connectors.mirror.formats import Checkpoint, OffsetSync
from strom.connect.connectors.mirror.policy import Flow, GroupFilter
from strom.connect.connectors.mirror.settings import (
    COMMON,
    GROUPS,
    TOPICS,
    interval_s,
    mirror_problems,
    query_name,
    setting,
)
from strom.connect.connectors.mirror.source import worker_cluster
from strom.connect.connectors.mirror.translate import OffsetSyncStore
from strom.connect.plugins import ConnectorPlugin, RunContext
from strom.spark.foreach_batch import guarded

__all__ = ["CheckpointSource", "MirrorCheckpoint", "sync_group_offsets"]

log = logging.getLogger(__name__)

Row = tuple[bytes, bytes]
INACTIVE = (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN)


class MirrorCheckpoint(ConnectorPlugin):
    """MirrorMaker 2's ``MirrorCheckpointConnector``, by its class name and settings."""

    class_name = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
    kind = "source"
    retry_timeout_ms = None  # waits for its clusters, as MM2's clients do
    definitions: ClassVar[tuple[Definition, ...]] = (
        *COMMON,
        *TOPICS,
        *GROUPS,
        setting(
            "emit.checkpoints.enabled",
            "BOOLEAN",
            True,
            "Whether to replicate consumer offsets to target cluster.",
            60,
        ),
        setting(
            "emit.checkpoints.interval.seconds",
            "LONG",
            60,
            "Frequency of checkpoints.",
            61,
        ),
        setting(
            "sync.group.offsets.enabled",
            "BOOLEAN",
            False,
            "Whether to periodically write the translated offsets to __consumer_offsets topic"
            " in target cluster, as long as no active consumers in that group are connected to"
            " the target cluster",
            62,
        ),
        setting(
            "checkpoints.topic.replication.factor",
            "INT",
            3,
            "Replication factor for checkpoints topic.",
            63,
        ),
    )

    @classmethod
    def problems(cls, config: Mapping[str, str]) -> dict[str, list[str]]:
        found = super().problems(config)
        found.update(mirror_problems(config))
        if interval_s(config, "emit.checkpoints.interval.seconds", 60) <= 0:
            found["emit.checkpoints.interval.seconds"] = [
                "emit.checkpoints.interval.seconds must be positive (turn checkpoints off with"
                " emit.checkpoints.enabled=false)"
            ]
        return found

    def topics(self, config: Mapping[str, str]) -> list[str]:
        flow = Flow.of(config)
        return [flow.policy.checkpoints_topic(flow.source)]

    def retriable(self, config: Mapping[str, str], error: BaseException) -> str | None:
        return retry_reason(config, error)

    def start(self, context: RunContext) -> StreamingQuery:
        config = context.config
        flow = Flow.of(config)
        worker = worker_cluster(context)
        target = cluster_of(config, "target", worker)
        topic = flow.policy.checkpoints_topic(flow.source)
        replication = int(config.get("checkpoints.topic.replication.factor", "3"))
        target.ensure_topic(topic, partitions=1, replication=replication, compact=True)
        sync_groups = config.get("sync.group.offsets.enabled", "false").strip().lower() == "true"
        context.spark.dataSource.register(CheckpointSource)
        checkpoints = (
            context.spark.readStream.format(CheckpointSource.name())
            .option("config", json.dumps(dict(config)))
            .option("worker", json.dumps(worker))
            .load()
        )
        producer = Producer({**target.client, "enable.idempotence": True})

        def emit(batch: DataFrame, batch_id: int) -> None:
            rows = [(bytes(r.key), bytes(r.value)) for r in batch.collect()]
            for key, value in rows:
                producer.produce(topic, value, key, partition=0)
            if producer.flush(TIMEOUT_S):
                raise RuntimeError(f"checkpoints not written to {topic} within {TIMEOUT_S} s")
            if sync_groups:
                sync_group_offsets(target, [Checkpoint.decode(k, v) for k, v in rows])

        interval = interval_s(config, "emit.checkpoints.interval.seconds", 60)
        return (
            checkpoints.writeStream.foreachBatch(guarded(emit))
            .option("checkpointLocation", context.checkpoint)
            .queryName(query_name(context))
            .trigger(processingTime=f"{int(interval * 1000)} milliseconds")
            .start()
        )


def sync_group_offsets(target: Cluster, checkpoints: list[Checkpoint]) -> None:
    """Commit checkpoints into the target's groups that have no active member there, only
    moving a group forward (what a failed-over consumer already committed stays)."""
    by_group: dict[str, list[Checkpoint]] = {}
    for checkpoint in checkpoints:
        by_group.setdefault(checkpoint.group, []).append(checkpoint)
    if not by_group:
        return
    admin = target.admin
    described = admin.describe_consumer_groups(list(by_group), request_timeout=TIMEOUT_S)
    for group, future in described.items():
        try:
            if future.result().state not in INACTIVE:
                log.debug("group %s is active on %s: not synced", group, target.alias)
                continue
            current = _committed(admin, group)
            moves = [
                KafkaTopicPartition(c.topic, c.partition, c.downstream)
                for c in by_group[group]
                if current.get((c.topic, c.partition), -1) < c.downstream
            ]
            if moves:
                request = [ConsumerGroupTopicPartitions(group, moves)]
                admin.alter_consumer_group_offsets(request)[group].result(TIMEOUT_S)
        except KafkaException as error:  # the next checkpoints try again, as MM2's task does
            log.warning("cannot sync group %s's offsets to %s: %s", group, target.alias, error)


def _committed(admin: Any, group: str) -> dict[tuple[str, int], int]:
    request = [ConsumerGroupTopicPartitions(group)]
    answer = admin.list_consumer_group_offsets(request, request_timeout=TIMEOUT_S)
    found = answer[group].result(TIMEOUT_S).topic_partitions or []
    return {(tp.topic, tp.partition): tp.offset for tp in found if tp.offset >= 0}


class CheckpointSource(DataSource):
    """The checkpoints of a flow (options: ``config``, the connector's config as JSON, and
    ``worker``, the worker's cluster as JSON), the changed ones each trigger."""

    @classmethod
    def name(cls) -> str:
        return "strom-mirror-checkpoints"

    def schema(self) -> str:
        return "key binary, value binary"

    def simpleStreamReader(self, schema: StructType) -> SimpleDataSourceStreamReader:
        return _Checkpoints(dict(self.options))


class _Checkpoints(SimpleDataSourceStreamReader):
    """Lives on the driver for the whole query: keeps the offset syncs read so far and the
    checkpoints emitted, so each trigger reads only new syncs and emits only changes."""

    def __init__(self, options: dict[str, str]) -> None:
        config: dict[str, str] = json.loads(options["config"])
        worker: dict[str, str] = json.loads(options["worker"])
        self.flow = Flow.of(config)
        self.groups = GroupFilter.of(config)
        self.enabled = config.get("emit.checkpoints.enabled", "true").strip().lower() == "true"
        self.source = cluster_of(config, "source", worker)
        location = config.get("offset-syncs.topic.location", "source").strip()
        self.syncs_cluster = (
            cluster_of(config, "target", worker) if location == "target" else self.source
        )
        self.syncs_topic = self.flow.policy.offset_syncs_topic(self.flow.target)
        self.store = OffsetSyncStore()
        self.emitted: dict[tuple[str, str, int], tuple[int, int]] = {}
        """The checkpoints written, by (group, topic, partition): (upstream, downstream)."""
        self._pending: dict[int, dict[tuple[str, str, int], tuple[int, int]]] = {}
        """Each planned round's checkpoints, emitted once Spark commits the round."""
        self._consumer: Consumer | None = None

    def initialOffset(self) -> dict[str, int]:
        return {"round": 0}

    def read(self, start: dict[str, int]) -> tuple[Iterator[Row], dict[str, int]]:
        if not self.enabled:
            return iter([]), start
        try:
            self._read_syncs()
            changed = self._changed()
        except Exception:  # the next trigger tries again, as MM2's task does
            log.warning("cannot make checkpoints now", exc_info=True)
            return iter([]), start
        if not changed:
            return iter([]), start
        end = start["round"] + 1
        self._pending[end] = {
            (c.group, c.topic, c.partition): (c.upstream, c.downstream) for c in changed
        }
        return iter([(c.key(), c.value()) for c in changed]), {"round": end}

    def commit(self, end: dict[str, int]) -> None:
        """The rounds up to ``end`` are written: their checkpoints are emitted."""
        for done in sorted(r for r in self._pending if r <= end["round"]):
            self.emitted.update(self._pending.pop(done))

    def readBetweenOffsets(self, start: dict[str, int], end: dict[str, int]) -> Iterator[Row]:
        return iter([])  # a replayed round's checkpoints come again, newer, next trigger

    def _read_syncs(self) -> None:
        """Apply the offset syncs written since the last trigger."""
        if self._consumer is None:
            if self.syncs_topic not in self.syncs_cluster.partition_counts():
                return
            self._consumer = Consumer(
                {
                    **self.syncs_cluster.client,
                    "group.id": f"mirror-checkpoints-{uuid.uuid4().hex}",
                    "enable.auto.commit": False,
                    "enable.partition.eof": True,
                }
            )
            self._consumer.assign([KafkaTopicPartition(self.syncs_topic, 0, OFFSET_BEGINNING)])
        partition = KafkaTopicPartition(self.syncs_topic, 0)
        low, high = self._consumer.get_watermark_offsets(partition, timeout=TIMEOUT_S)
        # before its first record the consumer is at OFFSET_INVALID (-1001), below any end: read
        # from the start only up to ``high``, never wait for syncs written after it
        position = max(self._consumer.position([partition])[0].offset, low)
        while position < high:
            message: Any = self._consumer.poll(TIMEOUT_S)
            if message is None:
                raise TimeoutError(f"no offset syncs from {self.syncs_topic} in {TIMEOUT_S} s")
            if message.error() is not None:
                if message.error().code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(message.error().str())
                if message.offset() >= high:
                    break
                continue  # an end met by an earlier fetch, before the syncs up to ``high``
            self.store.apply(OffsetSync.decode(message.key() or b"", message.value() or b""))
            position = message.offset() + 1

    def _changed(self) -> list[Checkpoint]:
        """The checkpoints of every group that differ from the last emitted."""
        admin = self.source.admin
        listed = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
        groups = sorted(
            g.group_id for g in listed.valid if self.groups.should_replicate_group(g.group_id)
        )
        found = []
        for group in groups:
            for (topic, partition), upstream in _committed(admin, group).items():
                if not self.flow.topics.should_replicate_topic(topic):
                    continue
                downstream = self.store.translate_downstream(topic, partition, upstream)
                if downstream is None:
                    continue
                remote = self.flow.checkpoint_topic(topic)
                if self.emitted.get((group, remote, partition)) == (upstream, downstream):
                    continue
                found.append(Checkpoint(group, remote, partition, upstream, downstream))
        return found
