"""Debezium's ``PostgresConnector`` (``io.debezium.connector.postgresql``), with its settings:
the row changes of a PostgreSQL database's tables through logical replication (``pgoutput``, a
publication and a replication slot it makes when missing), after an initial snapshot
(``snapshot.mode`` initial | never), as Debezium's change events into ``<topic.prefix>.<schema>
.<table>``: the key the table's primary key, the value the envelope (``before``, ``after``,
``source`` with lsn, db, schema, table, ``op`` c/u/d/r, ``ts_ms``), a tombstone after each
delete. Times as Connect's logical types (Debezium's ``time.precision.mode=connect``), decimals
as Connect's Decimal (``decimal.handling.mode=precise``). One Spark query; the offset
(partition ``{"server": topic.prefix}``) is the LSN confirmed to the slot."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from strom import __version__
from strom.connect.config_def import NO_DEFAULT, Definition, at_least, one_of
from strom.connect.connectors.cdc.reader import ChangeSource
from strom.connect.connectors.jdbc.database import (
    Column,
    columns,
    connect,
    quote_table,
    unreachable,
)
from strom.connect.plugins import ConnectorPlugin, RunContext
from strom.connect.source_writes import write_source
from strom.connect.transforms.columns import Names, record_columns, serialized

__all__ = ["PostgresConnector"]

CONNECTION, CONNECTOR = "Connection", "Connector"
SOURCE_FIELDS = StructType(
    [
        StructField("version", StringType(), False),
        StructField("connector", StringType(), False),
        StructField("name", StringType(), False),
        StructField("ts_ms", LongType(), False),
        StructField("snapshot", StringType(), True),
        StructField("db", StringType(), False),
        StructField("schema", StringType(), False),
        StructField("table", StringType(), False),
        StructField("txId", LongType(), True),
        StructField("lsn", LongType(), True),
    ]
)


def _setting(  # noqa: PLR0917
    name: str, kind: str, default: object, doc: str, group: str, order: int, **more: Any
) -> Definition:
    importance = "HIGH" if default is NO_DEFAULT else "MEDIUM"
    display = name.replace(".", " ").title()
    return Definition(name, kind, default, importance, doc, group, order, display, **more)


class PostgresConnector(ConnectorPlugin):
    """A database's changes into topics."""

    class_name = "io.debezium.connector.postgresql.PostgresConnector"
    kind = "source"
    tolerates_errors = True
    definitions: ClassVar[tuple[Definition, ...]] = (
        _setting(
            "database.hostname",
            "STRING",
            NO_DEFAULT,
            "Resolvable hostname or IP address of the database server.",
            CONNECTION,
            1,
        ),
        _setting("database.port", "INT", 5432, "Port of the database server.", CONNECTION, 2),
        _setting(
            "database.user",
            "STRING",
            NO_DEFAULT,
            "Name of the database user to be used when connecting to the database.",
            CONNECTION,
            3,
        ),
        _setting(
            "database.password", "PASSWORD", None, "Password of the database user.", CONNECTION, 4
        ),
        _setting(
            "database.dbname",
            "STRING",
            NO_DEFAULT,
            "The name of the database from which the connector should capture changes.",
            CONNECTION,
            5,
        ),
        _setting(
            "topic.prefix",
            "STRING",
            NO_DEFAULT,
            "Topic prefix that identifies and provides a namespace for the database server.",
            CONNECTOR,
            1,
        ),
        _setting(
            "table.include.list",
            "LIST",
            "",
            "The tables (schema.table) for which changes "
            "are to be captured; every table of the publication when empty.",
            CONNECTOR,
            2,
        ),
        _setting(
            "plugin.name",
            "STRING",
            "pgoutput",
            "The logical decoding plugin.",
            CONNECTOR,
            3,
            check=one_of("pgoutput"),
        ),
        _setting(
            "slot.name", "STRING", "debezium", "The name of the replication slot.", CONNECTOR, 4
        ),
        _setting(
            "publication.name",
            "STRING",
            "dbz_publication",
            "The name of the publication "
            "made for the tables (all tables when table.include.list is empty).",
            CONNECTOR,
            5,
        ),
        _setting(
            "snapshot.mode",
            "STRING",
            "initial",
            "When to take a snapshot of the tables: "
            "initial (when there is no offset yet) or never.",
            CONNECTOR,
            6,
            check=one_of("initial", "never"),
        ),
        _setting(
            "poll.interval.ms",
            "INT",
            500,
            "How often to look for new changes, in ms.",
            CONNECTOR,
            7,
            check=at_least(1),
        ),
        _setting(
            "max.batch.size",
            "INT",
            2048,
            "About how many changes one batch reads.",
            CONNECTOR,
            8,
            check=at_least(1),
        ),
    )

    def retriable(self, config: Mapping[str, str], error: BaseException) -> str | None:
        return unreachable(error)

    def start(self, context: RunContext) -> StreamingQuery:
        config = context.config
        settings = {
            "host": config["database.hostname"].strip(),
            "port": int(config.get("database.port", "5432")),
            "dbname": config["database.dbname"].strip(),
            "user": config["database.user"].strip(),
            "password": config.get("database.password") or None,
            "connect_timeout": 10,
            "options": "-c TimeZone=UTC",
        }
        slot = config.get("slot.name", "debezium").strip()
        publication = config.get("publication.name", "dbz_publication").strip()
        included = [t.strip() for t in config.get("table.include.list", "").split(",") if t.strip()]
        with connect(settings) as connection:
            lsn = _prepare(connection, slot, publication, included)
            tables = {
                t: (columns(connection, quote_table(t), t), _keys(connection, t))
                for t in included or _published(connection, publication)
            }
        partition = {"server": config["topic.prefix"].strip()}
        offset = context.source_offset(partition)
        if offset is None:
            snapshot = config.get("snapshot.mode", "initial").strip() == "initial"
            offset = {"lsn": lsn, "snapshot": True} if snapshot else {"lsn": lsn}
        context.spark.dataSource.register(ChangeSource)
        rows = (
            context.spark.readStream.format(ChangeSource.name())
            .option("connection", json.dumps(settings))
            .option("slot", slot)
            .option("publication", publication)
            .option(
                "tables", json.dumps({t: [c.name for c in cols] for t, (cols, _) in tables.items()})
            )
            .option("offset", json.dumps(dict(offset)))
            .option("max.changes", config.get("max.batch.size", "2048"))
            .option("connector", context.name)
            .option("partition", json.dumps(partition))
            .option("offsets.topic", context.offsets_topic)
            .option("client", json.dumps(dict(context.client)))
            .load()
        )
        events = [_events(context, rows, t, cols, keys) for t, (cols, keys) in tables.items()]
        if not events:
            raise ValueError(f"publication {publication} has no tables to capture")
        records = events[0]
        for more in events[1:]:
            records = records.unionByName(more)
        return (
            write_source(records, context)
            .option("checkpointLocation", context.checkpoint)
            .queryName(f"connect-{context.name}")
            .trigger(processingTime=f"{int(config.get('poll.interval.ms', '500'))} milliseconds")
            .start()
        )


def _prepare(connection: Any, slot: str, publication: str, tables: list[str]) -> int:
    """Make the publication and the slot when missing; the slot's confirmed LSN."""
    from psycopg import sql  # noqa: PLC0415

    if not connection.execute(
        "SELECT 1 FROM pg_publication WHERE pubname = %s", (publication,)
    ).fetchone():
        which: sql.Composable = sql.SQL("ALL TABLES")
        if tables:
            which = sql.SQL("TABLE {}").format(
                sql.SQL(", ").join(sql.SQL(quote_table(t)) for t in tables)
            )
        connection.execute(
            sql.SQL("CREATE PUBLICATION {} FOR {}").format(sql.Identifier(publication), which)
        )
    found = connection.execute(
        "SELECT (confirmed_flush_lsn - '0/0')::int8 FROM pg_replication_slots WHERE slot_name = %s",
        (slot,),
    ).fetchone()
    if found is None:
        connection.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
        found = connection.execute(
            "SELECT (confirmed_flush_lsn - '0/0')::int8 FROM pg_replication_slots"
            " WHERE slot_name = %s",
            (slot,),
        ).fetchone()
    return int(found[0])


def _published(connection: Any, publication: str) -> list[str]:
    rows = connection.execute(
        "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s ORDER BY 1, 2",
        (publication,),
    ).fetchall()
    return [f"{schema}.{name}" for schema, name in rows]


def _keys(connection: Any, table: str) -> list[str]:
    rows = connection.execute(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
        " AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary"
        " ORDER BY array_position(i.indkey, a.attnum)",
        (quote_table(table),),
    ).fetchall()
    return [row[0] for row in rows]


def _typed(text: SparkColumn, column: Column) -> SparkColumn:
    """A column's value from PostgreSQL's text of it."""
    kind = column.spark_type
    if isinstance(kind, BooleanType):
        return text == F.lit("t")
    if isinstance(kind, BinaryType):
        return F.unhex(F.substring(text, 3, 1 << 30))  # \x0102...
    if isinstance(kind, TimestampType):
        return F.concat(text, F.lit("+00:00")).cast("timestamp")
    return text.cast(kind)


def _events(
    context: RunContext, rows: DataFrame, table: str, cols: list[Column], keys: list[str]
) -> DataFrame:
    """One table's change events (and tombstones after deletes) as records."""
    config = context.config
    prefix = config["topic.prefix"].strip()
    schema_name, _, name = table.rpartition(".")
    row_type = StructType([StructField(c.name, c.spark_type, c.nullable) for c in cols])

    def image(which: str) -> SparkColumn:
        array = F.col(which)
        values = F.struct(*[_typed(array[i], c).alias(c.name) for i, c in enumerate(cols)])
        return F.when(array.isNull(), F.lit(None)).otherwise(values)

    source = F.struct(
        F.lit(__version__).alias("version"),
        F.lit("postgresql").alias("connector"),
        F.lit(prefix).alias("name"),
        F.col("ts_ms"),
        F.col("snapshot"),
        F.lit(config["database.dbname"].strip()).alias("db"),
        F.lit(schema_name).alias("schema"),
        F.lit(name).alias("table"),
        F.col("xid").alias("txId"),
        F.col("lsn"),
    )
    envelope_type = StructType(
        [
            StructField("before", row_type, True),
            StructField("after", row_type, True),
            StructField("source", SOURCE_FIELDS, False),
            StructField("op", StringType(), False),
            StructField("ts_ms", LongType(), True),
        ]
    )
    envelope = F.struct(
        image("before").alias("before"),
        image("after").alias("after"),
        source.alias("source"),
        F.col("op"),
        F.unix_millis(F.current_timestamp()).alias("ts_ms"),
    )
    key_type = StructType([f for f in row_type.fields if f.name in keys])
    row = F.coalesce(image("after"), image("before"))
    key = F.struct(*[row[k].alias(k) for k in keys])
    base = f"{prefix}.{schema_name}.{name}"
    record = F.struct((key if keys else F.lit(None)).alias("key"), envelope.alias("value"))
    tombstone = record.withField("value", F.lit(None).cast(envelope_type))
    both = F.when(F.col("op") == "d", F.array(record, tombstone)).otherwise(F.array(record))
    events = rows.where(F.col("table") == table).select(F.explode(both).alias("r"))
    frame = events.select(*record_columns(F.col("r.key"), F.col("r.value"), F.lit(base)))
    names = Names(
        {"key": f"{base}.Key", "value": f"{base}.Envelope"},
        types={"key": key_type, "value": envelope_type},
    )
    return serialized(frame, context, names)
