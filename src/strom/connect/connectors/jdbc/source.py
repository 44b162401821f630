"""Confluent's ``JdbcSourceConnector`` (``io.confluent.connect.jdbc``) for PostgreSQL, with its
settings: the rows of each table (``table.whitelist``/``table.blacklist``, or every table) or
of one ``query`` into ``topic.prefix`` + table name, polled every ``poll.interval.ms`` in one of
its modes, values of a struct schema named after the table, no keys. One Spark query for the
connector: each table is a stream of its own (``reader.JdbcTableSource``), unioned; with
``tasks.max`` above 1 an incrementing batch is read in that many ranges of ids at once."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import BinaryType, DateType, StructField, StructType, TimestampType

from strom.connect.config_def import NO_DEFAULT, Definition, at_least, one_of
from strom.connect.connectors.jdbc.database import (
    Column,
    columns,
    connect,
    connection_settings,
    quote_table,
    unreachable,
)
from strom.connect.connectors.jdbc.modes import Mode
from strom.connect.connectors.jdbc.reader import JdbcTableSource
from strom.connect.plugins import ConnectorPlugin, RunContext
from strom.connect.source_writes import write_source
from strom.connect.transforms.columns import Names, record_columns, serialized

__all__ = ["JdbcSource"]

DATABASE, MODE, CONNECTOR = "Database", "Mode", "Connector"
MODES = ("bulk", "incrementing", "timestamp", "timestamp+incrementing")


def _setting(  # noqa: PLR0917
    name: str,
    kind: str,
    default: object,
    doc: str,
    group: str,
    order: int,
    display: str,
    **more: Any,
) -> Definition:
    importance = "HIGH" if default is NO_DEFAULT or group == DATABASE else "MEDIUM"
    return Definition(name, kind, default, importance, doc, group, order, display, **more)


@dataclass(frozen=True)
class _Source:
    """One table (or the query) the connector reads."""

    partition: dict[str, str]
    topic: str
    sql: str
    table: str | None


class JdbcSource(ConnectorPlugin):
    """Tables' rows into topics; offsets by table as Confluent's (``{"table": name}`` or
    ``{"query": "query"}`` -> ``{"incrementing", "timestamp", "timestamp_nanos"}``)."""

    class_name = "io.confluent.connect.jdbc.JdbcSourceConnector"
    kind = "source"
    tolerates_errors = True
    exactly_once = True
    definitions: ClassVar[tuple[Definition, ...]] = (
        _setting(
            "connection.url", "STRING", NO_DEFAULT, "JDBC connection URL.", DATABASE, 1, "JDBC URL"
        ),
        _setting(
            "connection.user", "STRING", None, "JDBC connection user.", DATABASE, 2, "JDBC User"
        ),
        _setting(
            "connection.password",
            "PASSWORD",
            None,
            "JDBC connection password.",
            DATABASE,
            3,
            "JDBC Password",
        ),
        _setting(
            "table.whitelist",
            "LIST",
            "",
            "List of tables to include in copying.",
            DATABASE,
            4,
            "Table Whitelist",
        ),
        _setting(
            "table.blacklist",
            "LIST",
            "",
            "List of tables to exclude from copying.",
            DATABASE,
            5,
            "Table Blacklist",
        ),
        _setting(
            "mode",
            "STRING",
            "",
            "The mode for updating a table each time it is polled: " + ", ".join(MODES) + ".",
            MODE,
            1,
            "Table Loading Mode",
            check=one_of("", *MODES),
        ),
        _setting(
            "incrementing.column.name",
            "STRING",
            "",
            "The name of the strictly incrementing column to use to detect new rows.",
            MODE,
            2,
            "Incrementing Column Name",
        ),
        _setting(
            "timestamp.column.name",
            "LIST",
            "",
            "The name of the timestamp column to use to detect new or modified rows.",
            MODE,
            3,
            "Timestamp Column Name",
        ),
        _setting(
            "query",
            "STRING",
            "",
            "If specified, the query to perform to select new or updated rows.",
            MODE,
            4,
            "Query",
        ),
        _setting(
            "poll.interval.ms",
            "INT",
            5000,
            "Frequency in ms to poll for new data in each table.",
            CONNECTOR,
            1,
            "Poll Interval (ms)",
            check=at_least(1),
        ),
        _setting(
            "batch.max.rows",
            "INT",
            100,
            "Maximum number of rows to include in a single batch when polling for new data.",
            CONNECTOR,
            2,
            "Max Rows Per Batch",
            check=at_least(1),
        ),
        _setting(
            "topic.prefix",
            "STRING",
            NO_DEFAULT,
            "Prefix to prepend to table names to "
            "generate the name of the Kafka topic to publish data to.",
            CONNECTOR,
            4,
            "Topic Prefix",
        ),
    )

    @classmethod
    def problems(cls, config: Mapping[str, str]) -> dict[str, list[str]]:
        found = super().problems(config)

        def add(name: str, message: str) -> None:
            found.setdefault(name, []).append(message)

        url = config.get("connection.url", "").strip()
        if url:
            try:
                connection_settings(url, None, None)
            except ValueError as error:
                add(
                    "connection.url",
                    f"Invalid value {url} for configuration connection.url: {error}",
                )
        whitelist = config.get("table.whitelist", "").strip()
        if whitelist and config.get("table.blacklist", "").strip():
            add("table.whitelist", "table.whitelist and table.blacklist cannot both be set")
        if config.get("query", "").strip() and whitelist:
            add("query", "Do not specify table filtering (table.whitelist) with a query")
        mode = config.get("mode", "").strip()
        if not mode:
            add("mode", 'Missing required configuration "mode": one of ' + ", ".join(MODES))
        if "incrementing" in mode and not config.get("incrementing.column.name", "").strip():
            add("incrementing.column.name", f"incrementing.column.name must be set in mode {mode}")
        stamps = [c for c in config.get("timestamp.column.name", "").split(",") if c.strip()]
        if "timestamp" in mode and not stamps:
            add("timestamp.column.name", f"timestamp.column.name must be set in mode {mode}")
        if len(stamps) > 1:
            add("timestamp.column.name", "strom reads one timestamp column, not several")
        return found

    def retriable(self, config: Mapping[str, str], error: BaseException) -> str | None:
        return unreachable(error)

    def start(self, context: RunContext) -> StreamingQuery:
        config = context.config
        settings = connection_settings(
            config["connection.url"].strip(),
            config.get("connection.user"),
            config.get("connection.password"),
        )
        with connect(settings) as connection:
            found = [(s, columns(connection, s.sql, s.table)) for s in _sources(connection, config)]
        context.spark.dataSource.register(JdbcTableSource)
        frames = [self._stream(context, settings, source, cols) for source, cols in found]
        if not frames:
            raise ValueError("no table to read: table.whitelist/table.blacklist leave none")
        records = functools.reduce(DataFrame.unionByName, frames)
        bulk = config["mode"].strip() == "bulk"  # whose offsets Connect's topic never sees
        partitions = [None if bulk else source.partition for source, _ in found]
        return (
            write_source(records, context, partitions)
            .option("checkpointLocation", context.checkpoint)
            .queryName(f"connect-{context.name}")
            .trigger(processingTime=f"{int(config.get('poll.interval.ms', '5000'))} milliseconds")
            .start()
        )

    @staticmethod
    def _stream(
        context: RunContext, settings: dict[str, object], source: _Source, cols: list[Column]
    ) -> DataFrame:
        config = context.config
        mode = config["mode"].strip()
        incrementing = config.get("incrementing.column.name", "").strip()
        timestamp = config.get("timestamp.column.name", "").strip()
        for column in (
            incrementing if "incrementing" in mode else "",
            timestamp if "timestamp" in mode else "",
        ):
            if column and column not in {c.name for c in cols}:
                raise ValueError(f"{source.sql} has no column {column}")
        offset = context.source_offset(source.partition) or {}
        wire = StructType([StructField(c.name, c.wire) for c in cols])
        rows = (
            context.spark.readStream.format(JdbcTableSource.name())
            .option("connection", json.dumps(settings))
            .option("mode", mode)
            .option("source", source.sql)
            .option("incrementing", incrementing if "incrementing" in mode else "")
            .option("timestamp", timestamp if "timestamp" in mode else "")
            .option("select", ", ".join(c.select for c in cols))
            .option("parallelism", config.get("tasks.max", "1"))
            .option("schema", wire.json())
            .option("offset", json.dumps(dict(offset) or Mode(mode, source.sql).initial()))
            .option("connector", context.name)
            .option("partition", json.dumps(source.partition))
            .option("offsets.topic", "" if context.transactions else context.offsets_topic)
            .option("client", json.dumps(dict(context.client)))
            .load()
        )
        struct = StructType([StructField(c.name, c.spark_type, c.nullable) for c in cols])
        data = F.struct(*[_typed(F.col(c.name), c).alias(c.name) for c in cols])
        name = source.table.rpartition(".")[2] if source.table else None
        frame = rows.select(*record_columns(F.lit(None), data, F.lit(source.topic)))
        return serialized(
            frame, context, Names({"value": name}, types={"value": struct}, topic=source.topic)
        )


def _typed(column: SparkColumn, described: Column) -> SparkColumn:
    """A column as COPY wrote it, in its Spark type."""
    if isinstance(described.spark_type, TimestampType):
        return F.timestamp_micros(column)
    if isinstance(described.spark_type, DateType):
        return F.date_from_unix_date(column)
    if isinstance(described.spark_type, BinaryType):
        return F.unhex(column)
    return column


def _sources(connection: object, config: Mapping[str, str]) -> list[_Source]:
    """What the connector reads: its query, or its tables."""
    prefix = config["topic.prefix"].strip()
    query = config.get("query", "").strip()
    if query:
        return [_Source({"query": "query"}, prefix, f"({query})", None)]
    tables = [t.strip() for t in config.get("table.whitelist", "").split(",") if t.strip()]
    if not tables:
        excluded = {t.strip() for t in config.get("table.blacklist", "").split(",")}
        rows = connection.execute(  # type: ignore[attr-defined]
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_type = 'BASE TABLE'"
            " AND table_schema NOT IN ('pg_catalog', 'information_schema')"
            " ORDER BY table_schema, table_name"
        ).fetchall()
        names = [name if schema == "public" else f"{schema}.{name}" for schema, name in rows]
        tables = [t for t in names if t not in excluded]
    return [_Source({"table": t}, prefix + t.rpartition(".")[2], quote_table(t), t) for t in tables]
