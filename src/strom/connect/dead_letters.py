"""Kafka Connect's error handling with ``errors.tolerance=all``. A sink's records a converter
cannot take: each micro-batch is split by a column of Connect's messages (no per-record Python
for good records); the bad ones are logged (``errors.log.enable``) and written to
``errors.deadletterqueue.topic.name`` as they were read, with the ``__connect.errors.*``
headers when ``errors.deadletterqueue.context.headers.enable``. A source's records a transform
fails on (``source_writes.write_source``): skipped and logged, as Kafka's source tasks do (a
source has no dead letter queue). With ``errors.tolerance=none`` the converters and
transforms fail the query themselves."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from strom.connect.converters import Converter

__all__ = ["ErrorHandler"]

log = logging.getLogger(__name__)

DATA_EXCEPTION = "org.apache.kafka.connect.errors.DataException"
PREFIX = "__connect.errors."


def _flag(config: Mapping[str, str], name: str) -> bool:
    return config.get(name, "false").strip().lower() == "true"


@dataclass(frozen=True)
class ErrorHandler:
    """A sink connector's error settings, and what it does with a batch's bad records."""

    connector: str
    tolerate: bool
    topic: str
    context_headers: bool
    log_errors: bool
    log_messages: bool

    @classmethod
    def of(cls, connector: str, config: Mapping[str, str]) -> ErrorHandler:
        return cls(
            connector,
            config.get("errors.tolerance", "none").strip() == "all",
            config.get("errors.deadletterqueue.topic.name", "").strip(),
            _flag(config, "errors.deadletterqueue.context.headers.enable"),
            _flag(config, "errors.log.enable"),
            _flag(config, "errors.log.include.messages"),
        )

    @staticmethod
    def error(key: Converter, value: Converter) -> Column:
        """Connect's message for a record (``key``/``value`` bytes) its converters cannot take,
        with the stage and converter class it failed in, or null: a struct column."""
        found = [
            (c.text_error(F.col(part)), stage, c.class_name)
            for part, c, stage in (
                ("key", key, "KEY_CONVERTER"),
                ("value", value, "VALUE_CONVERTER"),
            )
        ]
        fields = [
            F.struct(
                message.alias("message"), F.lit(stage).alias("stage"), F.lit(name).alias("class")
            )
            for message, stage, name in found
        ]
        first, second = found[0][0], found[1][0]
        return F.when(first.isNotNull(), fields[0]).when(second.isNotNull(), fields[1])

    def _headers(self, error: Column) -> Column:
        own = F.coalesce(F.col("headers"), F.array().cast("array<struct<key:string,value:binary>>"))
        if not self.context_headers:
            return own
        context = {
            "topic": F.col("topic"),
            "partition": F.col("partition").cast("string"),
            "offset": F.col("offset").cast("string"),
            "connector.name": F.lit(self.connector),
            "task.id": F.lit("0"),
            "stage": error["stage"],
            "class.name": error["class"],
            "exception.class.name": F.lit(DATA_EXCEPTION),
            "exception.message": error["message"],
            "exception.stacktrace": F.concat(F.lit(f"{DATA_EXCEPTION}: "), error["message"]),
        }
        added = [
            F.struct(F.lit(PREFIX + name).alias("key"), F.encode(text, "UTF-8").alias("value"))
            for name, text in context.items()
        ]
        return F.concat(own, F.array(*added))

    def marked(self, records: DataFrame, key: Converter, value: Converter) -> DataFrame:
        """A sink's stream with each record's converter error (``error``) when it tolerates
        errors; as it is otherwise (a bad record then fails the query)."""
        return records.withColumn("error", self.error(key, value)) if self.tolerate else records

    def good(self, batch: DataFrame, spark_options: Mapping[str, str]) -> DataFrame:
        """The records of a ``marked`` micro-batch to write: the bad ones reported (log, dead
        letter queue) first. The caller persists ``batch``, which is read twice."""
        if not self.tolerate:
            return batch
        bad = batch.where(F.col("error").isNotNull())
        if not bad.isEmpty():
            self.report(bad, spark_options)
        return batch.where(F.col("error").isNull())

    def log_source(self, error: Any) -> None:
        """Log a source record's failure (a row of ``serialized``'s ``error``) as Kafka's
        ``LogReporter`` does."""
        record = getattr(error, "record", None) if self.log_messages else None
        log.error(
            "Error encountered in task %s-0. Executing stage '%s' with class '%s'%s: %s",
            self.connector,
            error.stage,
            error["class"],
            f", where source record is = {record}" if record else "",
            error.message,
        )

    def report(self, bad: DataFrame, spark_options: Mapping[str, str]) -> None:
        """Log the batch's bad records and write them to the dead letter queue."""
        if self.log_errors:
            shown = ["topic", "partition", "offset", "error"]
            for row in bad.select(*shown, "key", "value").collect():
                record = f"{row.topic}-{row.partition}@{row.offset}"
                if self.log_messages:
                    record += f" key={row.key!r} value={row.value!r}"
                log.error(
                    "connector %s: error in stage %s (%s) on %s: %s",
                    self.connector,
                    row.error.stage,
                    row.error["class"],
                    record,
                    row.error.message,
                )
        if self.topic:
            letters = bad.select("key", "value", self._headers(F.col("error")).alias("headers"))
            letters.write.format("strom").mode("append").options(**spark_options).option(
                "topic", self.topic
            ).save()
