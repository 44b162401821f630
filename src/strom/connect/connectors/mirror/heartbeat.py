"""``MirrorHeartbeatConnector``: a heartbeat (MM2's format, key ``{source, target}``, value
the time) into the target's ``heartbeats`` topic every ``emit.heartbeats.interval.seconds``,
which the flows out of the target carry on (``<target>.heartbeats`` downstream): a consumer of
a remote heartbeats topic sees the whole path is alive. One Spark query: a small data source
that makes one heartbeat per trigger, written with the ``strom`` sink."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import ClassVar

from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StructType

from strom.connect.config_def import Definition
from strom.connect.connectors.mirror.clients import cluster_of, retry_reason
from strom.connect.connectors.mirror.formats import Heartbeat
from strom.connect.connectors.mirror.policy import replication_policy
from strom.connect.connectors.mirror.settings import (
    COMMON,
    interval_s,
    mirror_problems,
    query_name,
    setting,
)
from strom.connect.connectors.mirror.source import worker_cluster
from strom.connect.plugins import ConnectorPlugin, RunContext

__all__ = ["HeartbeatSource", "MirrorHeartbeat"]


class MirrorHeartbeat(ConnectorPlugin):
    """MirrorMaker 2's ``MirrorHeartbeatConnector``, by its class name and settings."""

    class_name = "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"
    kind = "source"
    retry_timeout_ms = None  # waits for its clusters, as MM2's clients do
    definitions: ClassVar[tuple[Definition, ...]] = (
        *COMMON,
        setting(
            "emit.heartbeats.enabled",
            "BOOLEAN",
            True,
            "Whether to emit heartbeats to target cluster.",
            50,
        ),
        setting(
            "emit.heartbeats.interval.seconds",
            "LONG",
            1,
            "Frequency of heartbeats.",
            51,
        ),
        setting(
            "heartbeats.topic.replication.factor",
            "INT",
            3,
            "Replication factor for heartbeats topic.",
            52,
        ),
    )

    @classmethod
    def problems(cls, config: Mapping[str, str]) -> dict[str, list[str]]:
        found = super().problems(config)
        found.update(mirror_problems(config))
        if interval_s(config, "emit.heartbeats.interval.seconds", 1) <= 0:
            found["emit.heartbeats.interval.seconds"] = [
                "emit.heartbeats.interval.seconds must be positive (turn heartbeats off with"
                " emit.heartbeats.enabled=false)"
            ]
        return found

    def topics(self, config: Mapping[str, str]) -> list[str]:
        return [replication_policy(config).heartbeats_topic()]

    def retriable(self, config: Mapping[str, str], error: BaseException) -> str | None:
        return retry_reason(config, error)

    def start(self, context: RunContext) -> StreamingQuery:
        config = context.config
        target = cluster_of(config, "target", worker_cluster(context))
        topic = replication_policy(config).heartbeats_topic()
        enabled = config.get("emit.heartbeats.enabled", "true").strip().lower() == "true"
        if enabled:
            replication = int(config.get("heartbeats.topic.replication.factor", "3"))
            target.ensure_topic(topic, partitions=1, replication=replication, compact=True)
        context.spark.dataSource.register(HeartbeatSource)
        interval = interval_s(config, "emit.heartbeats.interval.seconds", 1)
        beats = (
            context.spark.readStream.format(HeartbeatSource.name())
            .option("source", config["source.cluster.alias"].strip())
            .option("target", config.get("target.cluster.alias", "target").strip())
            .option("enabled", str(enabled).lower())
            .load()
        )
        return (
            beats.writeStream.format("strom")
            .options(**target.spark_options())
            .option("topic", topic)
            .option("checkpointLocation", context.checkpoint)
            .queryName(query_name(context))
            .trigger(processingTime=f"{int(interval * 1000)} milliseconds")
            .start()
        )


class HeartbeatSource(DataSource):
    """One heartbeat of the flow ``source`` -> ``target`` per trigger (none when ``enabled``
    is false: the connector then runs and does nothing, as MM2's does)."""

    @classmethod
    def name(cls) -> str:
        return "strom-mirror-heartbeats"

    def schema(self) -> str:
        return "key binary, value binary"

    def simpleStreamReader(self, schema: StructType) -> SimpleDataSourceStreamReader:
        return _Beats(dict(self.options))


class _Beats(SimpleDataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.source, self.target = options["source"], options["target"]
        self.enabled = options.get("enabled", "true") == "true"

    def initialOffset(self) -> dict[str, int]:
        return {"beat": 0}

    def read(self, start: dict[str, int]) -> tuple[Iterator[tuple[bytes, bytes]], dict[str, int]]:
        if not self.enabled:
            return iter([]), start
        return self._beats(1), {"beat": start["beat"] + 1}

    def readBetweenOffsets(
        self, start: dict[str, int], end: dict[str, int]
    ) -> Iterator[tuple[bytes, bytes]]:
        return self._beats(end["beat"] - start["beat"])

    def _beats(self, count: int) -> Iterator[tuple[bytes, bytes]]:
        beat = Heartbeat(self.source, self.target, int(time.time() * 1000))
        return iter([(beat.key(), beat.value())] * count)
