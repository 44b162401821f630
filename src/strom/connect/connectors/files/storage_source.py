"""A storage source with the settings of Confluent's S3 source, from a local (or shared)
directory: in ``RESTORE_BACKUP`` mode the files a storage sink wrote
(``<topics.dir>/<topic>/.../<topic>+<partition>+<start offset>.<ext>``) go back to their topic
and partition in offset order; in ``GENERALIZED`` mode any file whose path (under
``topics.dir``) matches a ``topic.regex.list`` pattern goes to that pattern's topic. Each row of a
JSON lines, CSV (with a header), Parquet or Avro file is a record whose value is the row (a struct
the value converter writes), read by Spark's file stream source: the files seen are in the
query's checkpoint, as a Connect source's offsets."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from strom.connect.config_def import NO_DEFAULT, Definition, at_least, one_of
from strom.connect.connectors.files.layout import (
    FORMATS,
    SPARK_READERS,
    store_extension,
    store_path,
    store_problems,
)
from strom.connect.plugins import ConnectorPlugin, RunContext
from strom.connect.transforms.columns import record_columns, serialized
from strom.spark.foreach_batch import guarded

__all__ = ["StorageSource"]

STORAGE = "Storage"
RESTORE = "RESTORE_BACKUP"
GENERALIZED = "GENERALIZED"
BACKUP_NAME = r"([^/]+)\+(\d+)\+(\d+)\.[a-z]+$"
"""A storage sink's file name: topic, partition and start offset."""


class NoFilesYet(Exception):
    """No file to take the columns from yet: the connector waits (it stays RUNNING)."""


def _setting(
    name: str, kind: str, default: object, doc: str, order: int, **more: object
) -> Definition:
    importance = "HIGH" if default is NO_DEFAULT else "MEDIUM"
    return Definition(name, kind, default, importance, doc, STORAGE, order, name, **more)  # type: ignore[arg-type]


def topic_patterns(text: str) -> list[tuple[str, str]]:
    """``topic.regex.list``'s ``topic:regex`` pairs, in order."""
    pairs = []
    for entry in text.split(","):
        if entry.strip():
            topic, _, pattern = entry.partition(":")
            pairs.append((topic.strip(), pattern.strip()))
    return pairs


def _patterns_problems(config: Mapping[str, str]) -> list[str]:
    text = config.get("topic.regex.list", "").strip()
    if not text:
        return ["GENERALIZED mode needs topic.regex.list (topic:regex, ...)"]
    problems = []
    for topic, pattern in topic_patterns(text):
        if not topic or not pattern:
            problems.append(f"Invalid entry '{topic}:{pattern}': each is topic:regex")
            continue
        try:
            re.compile(pattern)
        except re.error as error:
            problems.append(f"Invalid regex {pattern} for topic {topic}: {error}")
    return problems


class StorageSource(ConnectorPlugin):
    """Files into topics, one Spark file stream over ``<store.url>/<topics.dir>``."""

    class_name = "strom.connect.storage.StorageSourceConnector"
    kind = "source"
    retry_timeout_ms = None  # waits for files to read, however long
    definitions: ClassVar[tuple[Definition, ...]] = (
        _setting("store.url", "STRING", NO_DEFAULT, "The directory (file:///dir or a path).", 1),
        _setting(
            "topics.dir", "STRING", "topics", "The directory under store.url that is read.", 2
        ),
        _setting(
            "format.class",
            "CLASS",
            NO_DEFAULT,
            "The files' format: " + ", ".join(FORMATS) + ".",
            3,
        ),
        _setting(
            "mode",
            "STRING",
            RESTORE,
            "RESTORE_BACKUP: a storage sink's files back to their topics and partitions; "
            "GENERALIZED: files matching topic.regex.list into its topics.",
            4,
            check=one_of(RESTORE, GENERALIZED),
        ),
        _setting(
            "topic.regex.list",
            "LIST",
            "",
            "GENERALIZED mode's topic:regex pairs; a file goes to the first topic whose regex "
            "finds its path under topics.dir.",
            5,
        ),
        _setting(
            "poll.interval.ms",
            "LONG",
            500,
            "How often the directory is looked at for new files.",
            6,
            check=at_least(1),
        ),
    )

    @classmethod
    def problems(cls, config: Mapping[str, str]) -> dict[str, list[str]]:
        found = super().problems(config)
        for name, problems in store_problems(config).items():
            found.setdefault(name, []).extend(problems)
        if config.get("mode", RESTORE).strip() == GENERALIZED and (
            problems := _patterns_problems(config)
        ):
            found.setdefault("topic.regex.list", []).extend(problems)
        return found

    def retriable(self, config: Mapping[str, str], error: BaseException) -> str | None:
        return str(error) if isinstance(error, NoFilesYet) else None

    def start(self, context: RunContext) -> StreamingQuery:
        config = context.config
        root = store_path(config["store.url"])
        assert root is not None  # validated
        directory = root / config.get("topics.dir", "topics").strip().strip("/")
        files = _file_stream(context.spark, directory, store_extension(config))
        generalized = config.get("mode", RESTORE).strip() == GENERALIZED

        def write(batch: DataFrame, batch_id: int) -> None:
            if generalized:
                records = _matched(batch, directory, config["topic.regex.list"])
            else:
                records = _in_offset_order(batch)
            keep = () if generalized else ("partition",)
            serialized(records, context, keep=keep).write.format("strom").options(
                **context.spark_options
            ).mode("append").save()

        interval = int(config.get("poll.interval.ms", "500") or 500)
        return (
            files.writeStream.foreachBatch(guarded(write))
            .option("checkpointLocation", context.checkpoint)
            .queryName(f"connect-{context.name}")
            .trigger(processingTime=f"{interval} milliseconds")
            .start()
        )


def _file_stream(spark: SparkSession, directory: Path, extension: str) -> DataFrame:
    """The rows of the ``*.<extension>`` files under ``directory`` as they appear, with the
    columns of the files there now (Spark's file stream needs them up front)."""
    if not any(directory.rglob(f"*.{extension}")):
        raise NoFilesYet(f"waiting for a first *.{extension} file under {directory}")
    options = {"recursiveFileLookup": "true", "pathGlobFilter": f"*.{extension}"}
    if extension == "csv":
        options.update(header="true", inferSchema="true")
    reader = SPARK_READERS.get(extension, extension)
    schema = spark.read.format(reader).options(**options).load(str(directory)).schema
    return (
        spark.readStream.format(reader)
        .options(**options)
        .schema(schema)
        .load(str(directory))
        .select("*", "_metadata")
    )


def _row(files: DataFrame) -> Column:
    """A file row as one struct (the record's value), without Spark's ``_metadata``."""
    return F.struct(*(F.col(f"`{c}`") for c in files.columns if c != "_metadata"))


def _path(files: DataFrame) -> Column:
    return F.regexp_replace(F.col("_metadata.file_path"), r"^file:", "")


def _matched(files: DataFrame, directory: Path, patterns: str) -> DataFrame:
    """GENERALIZED mode: each row to the topic of the first pattern that finds its file's
    path under ``directory``; rows of files no pattern finds are left out."""
    relative = F.substring(_path(files), len(str(directory)) + 2, 1 << 30)
    topic: Column = F.lit(None).cast("string")
    for name, pattern in reversed(topic_patterns(patterns)):
        topic = F.when(relative.rlike(pattern), F.lit(name)).otherwise(topic)
    frame = files.select(*record_columns(F.lit(None), _row(files), topic))
    return frame.where(F.col("topic").isNotNull())


def _in_offset_order(files: DataFrame) -> DataFrame:
    """RESTORE_BACKUP mode: a storage sink's rows as records of their topic and partition
    (from the file name), sorted within each partition by the file's start offset, then by
    place in the file; rows of files not so named are left out."""
    name = F.regexp_extract(_path(files), BACKUP_NAME, 0)
    frame = files.select(
        *record_columns(F.lit(None), _row(files), F.regexp_extract(name, BACKUP_NAME, 1)),
        F.regexp_extract(name, BACKUP_NAME, 2).cast("int").alias("partition"),
        F.regexp_extract(name, BACKUP_NAME, 3).cast("long").alias("start"),
        F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("place"),
    ).where(F.length(name) > 0)
    return frame.repartition("topic", "partition").sortWithinPartitions(
        "topic", "partition", "start", "block", "place"
    )
