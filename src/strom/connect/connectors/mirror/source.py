"""``MirrorSourceConnector``: the records of the source cluster's topics (``topics`` minus
``topics.exclude``, never internal topics or cycles) copied to the target's remote topics named
by the replication policy, with their keys, values, headers, timestamps and partitions; remote
topics created with the source's partition count (and configs), kept in step every
``refresh.topics.interval.seconds``; offset syncs written after each micro-batch. One Spark
query: the ``strom`` source reading the source cluster, a ``foreachBatch`` writing each batch to
the target with the ``strom`` sink. At least once (a replayed micro-batch is written again), or
with ``exactly.once.source.support=enabled`` exactly once (KIP-656's approach): each
micro-batch's records go to the target in transactions that also hold its batch id, whose source
offsets are in the query's checkpoint, so a replayed micro-batch writes nothing twice."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from confluent_kafka import Producer
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from strom.connect.config_def import Definition, one_of
from strom.connect.connectors.mirror.batches import Copied, planned_ranges
from strom.connect.connectors.mirror.clients import Cluster, TopicSync, cluster_of, retry_reason
from strom.connect.connectors.mirror.policy import Flow
from strom.connect.connectors.mirror.settings import (
    COMMON,
    TOPICS,
    interval_s,
    mirror_problems,
    query_name,
    setting,
)
from strom.connect.connectors.mirror.translate import batch_syncs
from strom.connect.plugins import ConnectorPlugin, RunContext
from strom.spark.foreach_batch import guarded

__all__ = ["MirrorSource", "worker_cluster"]

log = logging.getLogger(__name__)

TRIGGER = "250 milliseconds"
"""How often the query looks for new records (and topics) on the source."""


def worker_cluster(context: RunContext) -> dict[str, str]:
    """The worker's own cluster, as Java-named client settings."""
    return {k.removeprefix("kafka."): v for k, v in context.spark_options.items()}


class MirrorSource(ConnectorPlugin):
    """MirrorMaker 2's ``MirrorSourceConnector``, by its class name and settings."""

    class_name = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
    kind = "source"
    retry_timeout_ms = None  # waits for its clusters, as MM2's clients do
    definitions: ClassVar[tuple[Definition, ...]] = (
        *COMMON,
        *TOPICS,
        setting(
            "refresh.topics.enabled",
            "BOOLEAN",
            True,
            "Whether to periodically check for new topics and partitions.",
            40,
        ),
        setting(
            "refresh.topics.interval.seconds",
            "LONG",
            600,
            "Frequency of topic refresh.",
            41,
        ),
        setting(
            "sync.topic.configs.enabled",
            "BOOLEAN",
            True,
            "Whether to periodically configure remote topics to match their corresponding"
            " upstream topics.",
            42,
        ),
        setting(
            "sync.topic.configs.interval.seconds",
            "LONG",
            600,
            "Frequency of topic config sync.",
            43,
        ),
        setting(
            "config.properties.exclude",
            "LIST",
            "",
            "Topic configuration properties that should not be replicated.",
            44,
        ),
        setting(
            "sync.topic.acls.enabled",
            "BOOLEAN",
            True,
            "Whether to periodically configure remote topic ACLs to match their corresponding"
            " upstream topics.",
            45,
        ),
        setting(
            "sync.topic.acls.interval.seconds",
            "LONG",
            600,
            "Frequency of topic ACL sync.",
            45,
        ),
        setting(
            "replication.factor",
            "INT",
            -1,
            "Replication factor for newly created remote topics (-1: the broker's default).",
            46,
        ),
        setting(
            "offset-syncs.topic.replication.factor",
            "INT",
            3,
            "Replication factor for offset-syncs topic.",
            47,
        ),
        setting(
            "offset.lag.max",
            "LONG",
            100,
            "How out-of-sync a remote partition can be before it is resynced.",
            49,
        ),
        setting(
            "exactly.once.source.support",
            "STRING",
            "disabled",
            "Whether records are mirrored exactly once (enabled: transactional writes to the"
            " target, committed with the micro-batch; read them with isolation.level"
            " read_committed).",
            50,
            check=one_of("enabled", "preparing", "disabled"),
        ),
        setting(
            "emit.offset-syncs.enabled",
            "BOOLEAN",
            True,
            "Whether to store the new offset of the replicated records.",
            48,
        ),
    )

    @classmethod
    def problems(cls, config: Mapping[str, str]) -> dict[str, list[str]]:
        found = super().problems(config)
        found.update(mirror_problems(config))
        return found

    def retriable(self, config: Mapping[str, str], error: BaseException) -> str | None:
        return retry_reason(config, error)  # MM2's clients wait for a cluster that is down

    def start(self, context: RunContext) -> StreamingQuery:
        config = context.config
        flow = Flow.of(config)
        worker = worker_cluster(context)
        source = cluster_of(config, "source", worker)
        target = cluster_of(config, "target", worker)
        topics = TopicSync(flow, source, target, config)
        topics.sync(configs=True)
        exactly_once = config.get("exactly.once.source.support", "").strip() == "enabled"
        syncs = _OffsetSyncs(flow, source, target, config, markers=exactly_once)
        records = (
            context.spark.readStream.format("strom")
            .options(**source.spark_options())
            .option("subscribePattern", flow.source_pattern())
            .option("startingOffsets", "earliest")
            .option("failOnDataLoss", "false")
            .option("includeHeaders", "true")
            .load()
        )
        sink = target.spark_options()
        if exactly_once:  # the prefix stays the same across restarts, and differs by flow
            sink.update(exactlyOnce="true", transactionalIdPrefix=query_name(context))

        batches = _Batches(context.checkpoint)

        def mirror(batch: DataFrame, batch_id: int) -> None:
            planned = batches.planned(batch_id)
            if planned is not None:
                copied = _mirror_planned(
                    batch, planned, flow=flow, topics=topics, syncs=syncs, sink=sink
                )
                if not copied:
                    batches.gaps_seen()
                return
            batch.persist()
            try:
                _mirror(batch, flow, topics, syncs, sink)
            finally:
                batch.unpersist()

        query = (
            records.writeStream.foreachBatch(guarded(mirror))
            .option("checkpointLocation", context.checkpoint)
            .queryName(query_name(context))
            .trigger(processingTime=TRIGGER)
            .start()
        )
        for job, switch, every, first in (
            ("refresh", "refresh.topics.enabled", "refresh.topics.interval.seconds", False),
            ("acls", "sync.topic.acls.enabled", "sync.topic.acls.interval.seconds", True),
        ):
            if config.get(switch, "true").strip().lower() == "true":
                threading.Thread(
                    target=_every,
                    args=(query, interval_s(config, every, 600), job, topics, first),
                    name=f"mirror-{job}-{context.name}",
                    daemon=True,
                ).start()
        return query


class _Batches:
    """Where each micro-batch's ranges come from: the query's offset log (``batches``), until
    a batch's rows show a gap in the source's offsets; then an aggregation over each batch."""

    def __init__(self, checkpoint: str) -> None:
        self.log = Path(checkpoint) / "offsets"
        self.gap_free = True

    def planned(self, batch_id: int) -> list[Copied] | None:
        """The batch's ranges from the offset log, or None (aggregate the batch instead)."""
        if not self.gap_free or batch_id == 0:
            return None
        try:
            previous = (self.log / str(batch_id - 1)).read_text()
            current = (self.log / str(batch_id)).read_text()
        except OSError:
            return None
        return planned_ranges(previous, current)

    def gaps_seen(self) -> None:
        log.info("the source's offsets have gaps: offset syncs from an aggregation of each batch")
        self.gap_free = False


def _mirror_planned(
    batch: DataFrame,
    planned: Sequence[Copied],
    *,
    flow: Flow,
    topics: TopicSync,
    syncs: _OffsetSyncs,
    sink: Mapping[str, str],
) -> bool:
    """Write one micro-batch read from ``planned`` ranges in one Spark job; False when it held
    fewer records than the ranges (gaps: no offset syncs for it, none being known exactly)."""
    copied = [c for c in planned if flow.should_replicate(c.topic)]
    if copied:
        observed = Observation()
        rows = _allowed_rows(batch, flow, topics, copied, len({c.topic for c in planned}))
        _write(rows.observe(observed, F.count(F.lit(1)).alias("records")), flow, copied, sink)
        if observed.get["records"] != sum(c.records for c in copied):
            return False
        syncs.emit(copied)
    return True


def _mirror(
    batch: DataFrame,
    flow: Flow,
    topics: TopicSync,
    syncs: _OffsetSyncs,
    sink: Mapping[str, str],
) -> None:
    """Write one micro-batch to the target: remote topics made first, offset syncs after (its
    first, last offset and count per partition aggregated from the persisted batch)."""
    ends = [
        Copied(row.topic, row.partition, row.first, row.last, row.records)
        for row in batch.groupBy("topic", "partition")
        .agg(
            F.min("offset").alias("first"),
            F.max("offset").alias("last"),
            F.count("offset").alias("records"),
        )
        .collect()
    ]
    copied = [c for c in ends if flow.should_replicate(c.topic)]
    if copied:
        rows = _allowed_rows(batch, flow, topics, copied, len({c.topic for c in ends}))
        _write(rows, flow, copied, sink)
        syncs.emit(copied)


def _allowed_rows(
    batch: DataFrame, flow: Flow, topics: TopicSync, copied: Sequence[Copied], in_batch: int
) -> DataFrame:
    """The rows of the ``copied`` partitions' topics (``in_batch`` topics in all), once their
    remote topics exist with enough partitions."""
    counts: dict[str, int] = {}
    for c in copied:
        counts[c.topic] = max(counts.get(c.topic, 0), c.partition + 1)
    topics.ensure(counts)
    return batch if len(counts) == in_batch else batch.where(F.col("topic").isin(sorted(counts)))


def _write(rows: DataFrame, flow: Flow, copied: Sequence[Copied], sink: Mapping[str, str]) -> None:
    """The rows to their remote topics, with the source's partitions and timestamps."""
    allowed = sorted({c.topic for c in copied})
    remote = F.create_map(*[F.lit(n) for t in allowed for n in (t, flow.remote_topic(t))])
    (
        rows.select(
            remote[F.col("topic")].alias("topic"),
            "partition",
            "key",
            "value",
            "headers",
            F.unix_millis("timestamp").alias("timestamp"),
        )
        .write.format("strom")
        .mode("append")
        .options(**sink)
        .option("includeTimestamp", "true")
        .save()
    )


def _refresh(topics: TopicSync) -> bool:
    """syncing new topics, partitions and configs"""
    topics.sync(configs=True)
    return True


def _sync_acls(topics: TopicSync) -> bool:
    """syncing the remote topics' ACLs (False: no more rounds, the source has no authorizer)"""
    if topics.sync_acls() >= 0:
        return True
    log.info("not syncing topic ACLs: cluster %s has no authorizer", topics.source.alias)
    return False


_JOBS = {"refresh": _refresh, "acls": _sync_acls}


def _every(
    query: StreamingQuery, interval: float, job: str, topics: TopicSync, first: bool
) -> None:
    """``job`` every ``interval`` seconds while the query runs (``first``: from the start)."""
    if not first:
        time.sleep(interval)
    while query.isActive:
        try:
            if not _JOBS[job](topics):
                return
        except Exception:  # the next round tries again; the query itself carries on
            log.warning("mirror %s: %s failed", job, _JOBS[job].__doc__, exc_info=True)
        time.sleep(interval)


class _OffsetSyncs:
    """Writes offset syncs to ``mm2-offset-syncs.<target>.internal`` (on the source cluster,
    or the target with ``offset-syncs.topic.location=target``): after a batch, where the
    records it copied of each partition are on the target (``translate.batch_syncs``). With
    ``markers`` (exactly once) each remote partition a batch wrote ends in its transaction's
    commit marker, one offset past the batch's last record."""

    def __init__(
        self,
        flow: Flow,
        source: Cluster,
        target: Cluster,
        config: Mapping[str, str],
        *,
        markers: bool = False,
    ) -> None:
        self.flow, self.target, self.markers = flow, target, markers
        self.enabled = config.get("emit.offset-syncs.enabled", "true").strip().lower() == "true"
        location = config.get("offset-syncs.topic.location", "source").strip()
        self.cluster = target if location == "target" else source
        self.topic = flow.policy.offset_syncs_topic(flow.target)
        self.replication = int(config.get("offset-syncs.topic.replication.factor", "3"))
        self.lag_max = int(config.get("offset.lag.max", "100"))
        self._producer: Producer | None = None

    def emit(self, copied: Sequence[Copied]) -> None:
        """The syncs of the batch's partitions."""
        if not self.enabled or not copied:
            return
        if self._producer is None:
            self.cluster.ensure_topic(
                self.topic, partitions=1, replication=self.replication, compact=True
            )
            self._producer = Producer({**self.cluster.client, "enable.idempotence": True})
        remote = {
            (r.topic, r.partition): (self.flow.remote_topic(r.topic), r.partition) for r in copied
        }
        ends = self.target.end_offsets(remote.values())
        for row in copied:
            for sync in batch_syncs(
                row.topic,
                row.partition,
                first=row.first,
                last=row.last,
                count=row.records,
                end=ends[remote[row.topic, row.partition]] - self.markers,
                lag_max=self.lag_max,
            ):
                self._producer.produce(self.topic, sync.value(), sync.key(), partition=0)
        if self._producer.flush(30):
            raise self.cluster.unreachable(f"offset syncs not written to {self.topic} in 30 s")
