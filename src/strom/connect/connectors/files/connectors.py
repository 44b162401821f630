"""``FileStreamSourceConnector`` and ``FileStreamSinkConnector`` (``org.apache.kafka.connect
.file``), with Kafka's settings, each one Spark Structured Streaming query."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StringType

from strom.connect.config_def import NO_DEFAULT, Definition, at_least
from strom.connect.connectors.files.tail import TailSource
from strom.connect.converters import STRING, Converter
from strom.connect.dead_letters import ErrorHandler
from strom.connect.plugins import ConnectorPlugin, RunContext
from strom.connect.source_writes import write_source
from strom.connect.transforms.columns import record_columns, serialized, sink_records
from strom.spark.foreach_batch import guarded

__all__ = ["FileStreamSink", "FileStreamSource", "sink_stream"]

TRIGGER = "500 milliseconds"
"""How often a file connector's query looks for new lines or records."""


class FileStreamSource(ConnectorPlugin):
    """The lines appended to ``file`` into ``topic``: one task, values of the STRING schema,
    no keys; the offset is the byte position (``{"filename"}`` -> ``{"position"}``)."""

    class_name = "org.apache.kafka.connect.file.FileStreamSourceConnector"
    kind = "source"
    exactly_once = True
    definitions: ClassVar[tuple[Definition, ...]] = (
        Definition(
            "file",
            "STRING",
            None,
            "HIGH",
            "Source filename. If not specified, the standard input will be used",
            "Common",
            8,
            "File",
        ),
        Definition(
            "topic",
            "LIST",
            NO_DEFAULT,
            "HIGH",
            "The topic to publish data to",
            "Common",
            9,
            "Topic",
        ),
        Definition(
            "batch.size",
            "INT",
            2000,
            "LOW",
            "The maximum number of records the source task reads from the file at a time",
            "Common",
            10,
            "Batch size",
            check=at_least(1),
        ),
    )

    @classmethod
    def problems(cls, config: Mapping[str, str]) -> dict[str, list[str]]:
        found = super().problems(config)
        topics = [t for t in config.get("topic", "").split(",") if t.strip()]
        if len(topics) > 1:
            found["topic"] = [
                f"Invalid value {config['topic']} for configuration topic: 'topic' in"
                " FileStreamSourceConfig must be a single topic"
            ]
        if not config.get("file", "").strip():
            found["file"] = ["strom reads no standard input: give the file to read"]
        return found

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        task = {k: config[k] for k in ("file", "topic", "batch.size") if k in config}
        return [task]  # one file, one reader: Kafka's FileStreamSource has one task too

    def topics(self, config: Mapping[str, str]) -> list[str]:
        return [config["topic"].strip()]

    def start(self, context: RunContext) -> StreamingQuery:
        config = context.config
        topic = config["topic"].strip()
        offset = context.source_offset({"filename": config["file"]}) or {}
        context.spark.dataSource.register(TailSource)
        lines = (
            context.spark.readStream.format(TailSource.name())
            .option("path", str(Path(config["file"]).absolute()))
            .option("filename", config["file"])
            .option("position", str(int(offset.get("position", 0))))
            .option("batch.size", config.get("batch.size", "2000"))
            .option("connector", context.name)
            .option("offsets.topic", "" if context.transactions else context.offsets_topic)
            .option("client", json.dumps(dict(context.client)))
            .load()
        )
        frame = lines.select(*record_columns(F.lit(None), F.col("line"), F.lit(topic)))
        partition = {"filename": config["file"]}
        return (
            write_source(serialized(frame, context), context, [partition])
            .option("checkpointLocation", context.checkpoint)
            .queryName(f"connect-{context.name}")
            .trigger(processingTime=TRIGGER)
            .start()
        )


class FileStreamSink(ConnectorPlugin):
    """The records of ``topics`` (or ``topics.regex``) appended to ``file`` (the worker's
    standard output without one), one line per record value; its offsets are the consumer
    group ``connect-<name>``'s, as any sink connector's."""

    class_name = "org.apache.kafka.connect.file.FileStreamSinkConnector"
    kind = "sink"
    tolerates_errors = True
    definitions: ClassVar[tuple[Definition, ...]] = (
        Definition(
            "file",
            "STRING",
            None,
            "HIGH",
            "Destination filename. If not specified, the standard output will be used",
            "Common",
            8,
            "File",
        ),
    )

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        task = {k: config[k] for k in ("file", "topics", "topics.regex") if k in config}
        return [dict(task) for _ in range(max_tasks)]

    def start(self, context: RunContext) -> StreamingQuery:
        config = context.config
        errors = ErrorHandler.of(context.name, config)
        records = errors.marked(
            sink_stream(context, self.topics(config)),
            context.key_converter,
            context.value_converter,
        )
        _lines(sink_records(records, context))  # a transform that cannot run fails the start
        file = config.get("file", "").strip()
        path = Path(file).absolute() if file else None

        def append(batch: DataFrame, batch_id: int) -> None:
            batch.persist()
            try:
                lines = _lines(sink_records(errors.good(batch, context.producer_options), context))
                column = lines.coalesce(1).toArrow().column("line").to_pylist()
            finally:
                batch.unpersist()
            if not column:
                return
            text = "".join(f"{line}\n" for line in column)
            if path is None:
                sys.stdout.write(text)
                sys.stdout.flush()
            else:
                with path.open("a", encoding="utf-8") as out:
                    out.write(text)

        return (
            records.writeStream.foreachBatch(guarded(append))
            .option("checkpointLocation", context.checkpoint)
            .queryName(f"connect-{context.name}")
            .trigger(processingTime=TRIGGER)
            .start()
        )


def sink_stream(context: RunContext, topics: list[str]) -> DataFrame:
    """A sink's records: the ``strom`` source of ``topics`` (or ``topics.regex``) with headers,
    from its group's offsets, committing to the group, ``tasks.max`` partitions at least."""
    regex = context.config.get("topics.regex", "").strip()
    reader = context.spark.readStream.format("strom").options(**context.spark_options)
    if regex:
        reader = reader.option("subscribePattern", regex)
    else:
        reader = reader.option("subscribe", ",".join(topics))
    return (
        reader.option("startingOffsets", context.sink_start)
        .option("commitToGroup", context.sink_group)
        .option("minPartitions", str(len(context.tasks) or 1))
        .option("failOnDataLoss", "false")
        .option("includeHeaders", "true")
        .load()
    )


def _lines(records: DataFrame) -> DataFrame:
    """Each record's value as Kafka's FileStreamSink prints it: text as itself, a struct (a
    transform's) as Connect's ``Struct{...}``, null as ``null``."""
    value, data_type = F.col("value"), records.schema["value"].dataType
    text = (
        value
        if isinstance(data_type, StringType)
        else F.decode(Converter(STRING).serialize(value, data_type), "UTF-8")
    )
    return records.select(F.coalesce(text, F.lit("null")).alias("line"))
