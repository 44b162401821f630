"""A storage sink with the settings of Confluent's S3 and HDFS sinks, into a local (or shared)
directory: the records of ``topics`` as JSON lines, CSV, Parquet or Avro files named
``<topic>+<partition>+<start offset>.<ext>`` under ``<store.url>/<topics.dir>/<topic>/<encoded
partition>/``, so Spark reads the topic's directory back (``partition=0``, ``field=value``,
``year=2026`` are its partition columns). One Spark query; its offsets are its group's."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import ClassVar

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StructType

from strom.connect.config_def import NO_DEFAULT, Definition, at_least, one_of
from strom.connect.connectors.files.connectors import TRIGGER, sink_stream
from strom.connect.connectors.files.layout import FORMATS, PARTITIONERS, Layout, layout_problems
from strom.connect.connectors.files.rolling import RollingFiles
from strom.connect.dead_letters import ErrorHandler
from strom.connect.plugins import ConnectorPlugin, RunContext
from strom.connect.registry_converters import avro_schema
from strom.connect.transforms.columns import sink_records
from strom.spark.foreach_batch import guarded

__all__ = ["StorageSink"]

STORAGE = "Storage"
PARTITIONER = "Partitioner"
AVRO_CODECS = ("null", "deflate", "snappy")


def _setting(  # noqa: PLR0917
    name: str, kind: str, default: object, doc: str, group: str, order: int, **more: object
) -> Definition:
    importance = "HIGH" if default is NO_DEFAULT else "MEDIUM"
    return Definition(name, kind, default, importance, doc, group, order, name, **more)  # type: ignore[arg-type]


class StorageSink(ConnectorPlugin):
    """Confluent's storage sink layout in a directory: a file holds at most ``flush.size``
    records of one topic partition and encoded partition, and closes at the end of a
    micro-batch (every ``rotate.interval.ms``), so a file's name (its first offset) is the
    same when Spark runs a batch again: the files are written exactly once."""

    class_name = "strom.connect.storage.StorageSinkConnector"
    kind = "sink"
    tolerates_errors = True
    definitions: ClassVar[tuple[Definition, ...]] = (
        _setting(
            "store.url", "STRING", NO_DEFAULT, "The directory (file:///dir or a path).", STORAGE, 1
        ),
        _setting(
            "topics.dir",
            "STRING",
            "topics",
            "The directory under store.url of the topics' directories.",
            STORAGE,
            2,
        ),
        _setting(
            "format.class",
            "CLASS",
            NO_DEFAULT,
            "The files' format: " + ", ".join(FORMATS) + ".",
            STORAGE,
            3,
        ),
        _setting(
            "flush.size",
            "INT",
            NO_DEFAULT,
            "Records per file at most.",
            STORAGE,
            4,
            check=at_least(1),
        ),
        _setting(
            "rotate.interval.ms",
            "LONG",
            -1,
            "How often files are closed (the micro-batch interval).",
            STORAGE,
            5,
        ),
        _setting(
            "filename.offset.zero.pad.width",
            "INT",
            10,
            "Digits of the offset in file names.",
            STORAGE,
            6,
            check=at_least(0),
        ),
        _setting(
            "avro.codec",
            "STRING",
            "null",
            "AvroFormat's compression codec: null, deflate or snappy.",
            STORAGE,
            7,
            check=one_of(*AVRO_CODECS),
        ),
        _setting(
            "partitioner.class",
            "CLASS",
            "DefaultPartitioner",
            "The partitioner: " + ", ".join(PARTITIONERS) + ".",
            PARTITIONER,
            1,
        ),
        _setting(
            "partition.field.name",
            "LIST",
            "",
            "FieldPartitioner's fields of the value.",
            PARTITIONER,
            2,
        ),
        _setting(
            "path.format",
            "STRING",
            "",
            "TimeBasedPartitioner's directories, a Joda pattern such as 'year'=YYYY/'month'=MM.",
            PARTITIONER,
            3,
        ),
        _setting(
            "partition.duration.ms",
            "LONG",
            -1,
            "The time each time-based partition spans.",
            PARTITIONER,
            4,
        ),
        _setting("locale", "STRING", "", "The locale of path.format (accepted).", PARTITIONER, 5),
        _setting("timezone", "STRING", "UTC", "The time zone of path.format.", PARTITIONER, 6),
        _setting(
            "timestamp.extractor",
            "STRING",
            "Wallclock",
            "The time of a record: Record, RecordField or Wallclock.",
            PARTITIONER,
            7,
        ),
        _setting(
            "timestamp.field",
            "STRING",
            "timestamp",
            "RecordField's field of the value.",
            PARTITIONER,
            8,
        ),
    )

    @classmethod
    def problems(cls, config: Mapping[str, str]) -> dict[str, list[str]]:
        found = super().problems(config)
        for name, problems in layout_problems(config).items():
            found.setdefault(name, []).extend(problems)
        return found

    def start(self, context: RunContext) -> StreamingQuery:
        config = context.config
        errors = ErrorHandler.of(context.name, config)
        records = errors.marked(
            sink_stream(context, self.topics(config)),
            context.key_converter,
            context.value_converter,
        )
        layout, flush = Layout.of(config), int(config["flush.size"])
        sink_records(records, context)  # a transform that cannot run fails the start
        context.spark.dataSource.register(RollingFiles)
        rotate = int(config.get("rotate.interval.ms", "-1") or -1)
        codec = config.get("avro.codec", "null").strip() or "null"

        def write(batch: DataFrame, batch_id: int) -> None:
            batch.persist()
            frame = sink_records(errors.good(batch, context.producer_options), context).persist()
            try:
                if not frame.isEmpty():
                    struct = None if layout.extension == "json" else _values_type(frame)
                    files = _files(frame, layout, flush, _data(layout.extension, struct))
                    options = {"extension": layout.extension}
                    if layout.extension == "avro":
                        schema = _avro(files.drop("path").schema, struct)
                        options.update({"avro.schema": schema, "avro.codec": codec})
                    out = files.write.format(RollingFiles.name()).options(**options)
                    out.mode("append").save()
            finally:
                frame.unpersist()
                batch.unpersist()

        return (
            records.writeStream.foreachBatch(guarded(write))
            .option("checkpointLocation", context.checkpoint)
            .queryName(f"connect-{context.name}")
            .trigger(processingTime=f"{rotate} milliseconds" if rotate > 0 else TRIGGER)
            .start()
        )


def _files(records: DataFrame, layout: Layout, flush: int, data: list[Column]) -> DataFrame:
    """Each record's file (``path``) and ``data`` columns, sorted by file and offset: a file
    per ``flush.size`` records of a topic partition and encoded partition."""
    frame = records.withColumn("encoded", layout.encoded())
    key = (F.col("topic"), F.col("partition"), F.col("encoded"))
    rank = F.row_number().over(Window.partitionBy(*key).orderBy("offset")) - 1
    frame = frame.withColumn("chunk", F.floor(rank / flush))
    start = F.min("offset").over(Window.partitionBy(*key, F.col("chunk")))
    name = layout.file_name(F.col("topic"), F.col("partition"), start)
    path = F.concat(layout.directory(F.col("topic"), F.col("encoded")), F.lit("/"), name)
    return (
        frame.select(path.alias("path"), "offset", *data)
        .repartition("path")
        .sortWithinPartitions("path", "offset")
        .drop("offset")
    )


def _values_type(records: DataFrame) -> str | None:
    """The values' struct type (Spark's DDL), typed by their JSON (one small job), or None
    when they are not all JSON objects."""
    parsed = F.try_parse_json(F.col("value"))
    found = records.select(F.schema_of_variant_agg(parsed)).first()
    schema = str(found[0]) if found else ""
    return re.sub(r"\bOBJECT<", "STRUCT<", schema) if schema.startswith("OBJECT<") else None


def _data(extension: str, struct: str | None) -> list[Column]:
    """The columns a file holds: JSON lines the values' JSON text; Parquet, CSV and Avro the
    values' fields (of type ``struct``), or a ``value`` column of text."""
    if extension == "json":
        return [F.concat(F.col("value"), F.lit("\n")).alias("line")]
    if struct is None:
        return [F.col("value")]
    return [F.inline(F.array(F.from_json(F.col("value"), struct)))]  # its fields


def _avro(data: StructType, struct: str | None) -> str:
    """The Avro schema (JSON) of the files' ``data`` columns, as Confluent's AvroData makes
    it of a Connect schema: a record of the values' fields, or an optional string."""
    return json.dumps(avro_schema(data) if struct is not None else ["null", "string"])
