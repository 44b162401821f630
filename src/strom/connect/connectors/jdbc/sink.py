"""Confluent's ``JdbcSinkConnector`` (``io.confluent.connect.jdbc``) for PostgreSQL, with its
settings: the records of ``topics`` (or ``topics.regex``) as rows of ``table.name.format``
tables, by ``insert.mode`` (insert, upsert, update) with the primary key ``pk.mode`` and
``pk.fields`` give, tombstones deleting rows (``delete.enabled``), tables made and widened
(``auto.create``, ``auto.evolve``). Values need a schema (JsonConverter with
``schemas.enable``). Each micro-batch is parsed and shaped by Spark, one group per topic and
schema, and written table by table (``writer.write``). With ``errors.tolerance=all`` records the
converters cannot take go to the log and dead letter queue (``ErrorHandler``); a failed write
fails the task (Kafka Connect tolerates conversion errors, not the connector's). A database that
cannot be reached is retried for ``errors.retry.timeout``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StructField, StructType

from strom.connect.config_def import NO_DEFAULT, Definition, one_of
from strom.connect.connectors.files.connectors import sink_stream
from strom.connect.connectors.jdbc.database import connect, connection_settings, unreachable
from strom.connect.connectors.jdbc.schemas import Field, fields_of
from strom.connect.connectors.jdbc.writer import TableWrite, write
from strom.connect.converters import JSON, STRING, Converter
from strom.connect.dead_letters import ErrorHandler
from strom.connect.plugins import ConnectorPlugin, RunContext
from strom.spark.foreach_batch import guarded

__all__ = ["JdbcSink"]

CONNECTION, WRITES, MAPPING, DDL = "Connection", "Writes", "Data Mapping", "DDL Support"
TRIGGER = "500 milliseconds"
KAFKA_FIELDS = (
    Field("__connect_topic", {"type": "string"}),
    Field("__connect_partition", {"type": "int32"}),
    Field("__connect_offset", {"type": "int64"}),
)
_KAFKA_COLUMNS = ("topic", "partition", "offset")


def _setting(  # noqa: PLR0917
    name: str, kind: str, default: object, doc: str, group: str, order: int, **more: Any
) -> Definition:
    importance = "HIGH" if default is NO_DEFAULT or group == CONNECTION else "MEDIUM"
    display = name.replace(".", " ").title()
    return Definition(name, kind, default, importance, doc, group, order, display, **more)


class JdbcSink(ConnectorPlugin):
    """Topics' records into tables; its offsets are the ``connect-<name>`` group's."""

    class_name = "io.confluent.connect.jdbc.JdbcSinkConnector"
    kind = "sink"
    tolerates_errors = True
    definitions: ClassVar[tuple[Definition, ...]] = (
        _setting("connection.url", "STRING", NO_DEFAULT, "JDBC connection URL.", CONNECTION, 1),
        _setting("connection.user", "STRING", None, "JDBC connection user.", CONNECTION, 2),
        _setting(
            "connection.password", "PASSWORD", None, "JDBC connection password.", CONNECTION, 3
        ),
        _setting(
            "insert.mode",
            "STRING",
            "insert",
            "The insertion mode: insert, upsert or update.",
            WRITES,
            1,
            check=one_of("insert", "upsert", "update"),
        ),
        _setting(
            "batch.size",
            "INT",
            3000,
            "Records to batch together for insertion (strom writes each micro-batch in bulk).",
            WRITES,
            2,
        ),
        _setting(
            "delete.enabled",
            "BOOLEAN",
            False,
            "Whether to treat null record values as deletes. Requires pk.mode to be record_key.",
            WRITES,
            3,
        ),
        _setting(
            "table.name.format",
            "STRING",
            "${topic}",
            "A format string for the destination table name, with ${topic} for the topic.",
            MAPPING,
            1,
        ),
        _setting(
            "pk.mode",
            "STRING",
            "none",
            "The primary key mode: none, kafka, record_key or record_value.",
            MAPPING,
            2,
            check=one_of("none", "kafka", "record_key", "record_value"),
        ),
        _setting(
            "pk.fields", "LIST", "", "List of comma-separated primary key field names.", MAPPING, 3
        ),
        _setting(
            "auto.create",
            "BOOLEAN",
            False,
            "Whether to automatically create the destination table.",
            DDL,
            1,
        ),
        _setting(
            "auto.evolve",
            "BOOLEAN",
            False,
            "Whether to automatically add columns to the table.",
            DDL,
            2,
        ),
    )

    @classmethod
    def problems(cls, config: Mapping[str, str]) -> dict[str, list[str]]:
        found = super().problems(config)
        if config.get("transforms", "").strip():
            found.setdefault("transforms", []).append(
                "The JDBC sink runs no transforms yet: transform in the source, or before it"
            )
        url = config.get("connection.url", "").strip()
        if url:
            try:
                connection_settings(url, None, None)
            except ValueError as error:
                found["connection.url"] = [
                    f"Invalid value {url} for configuration connection.url: {error}"
                ]
        pk_mode = config.get("pk.mode", "none").strip()
        mode = config.get("insert.mode", "insert").strip()
        if config.get("delete.enabled", "false").strip().lower() == "true" and (
            pk_mode != "record_key"
        ):
            found["delete.enabled"] = ["Deletes are only supported for pk.mode record_key"]
        if mode in ("upsert", "update") and pk_mode == "none":
            found["pk.mode"] = [f"insert.mode {mode} needs a primary key: pk.mode is none"]
        fields = [f for f in config.get("pk.fields", "").split(",") if f.strip()]
        if pk_mode == "kafka" and fields and len(fields) != len(KAFKA_FIELDS):
            found["pk.fields"] = [
                "PK mode for table is KAFKA so there should either be no field"
                " names defined for defaults to be used, or 3 field names"
                " (topic, partition, offset)"
            ]
        return found

    def retriable(self, config: Mapping[str, str], error: BaseException) -> str | None:
        return unreachable(error)

    def start(self, context: RunContext) -> StreamingQuery:
        config = context.config
        value_converter = context.value_converter
        schemas = value_converter.class_name == JSON and value_converter.schemas_enable
        if not schemas and value_converter.registry is None:
            raise ValueError(
                "The JDBC sink needs records with a schema: value.converter "
                "org.apache.kafka.connect.json.JsonConverter with schemas.enable=true, or a "
                "schema registry's (io.confluent.connect.avro.AvroConverter, ...)"
            )
        errors = ErrorHandler.of(context.name, config)
        records = errors.marked(
            sink_stream(context, self.topics(config)),
            context.key_converter,
            context.value_converter,
        )
        batches = _Batches(config, context.key_converter, value_converter)

        def write(batch: DataFrame, batch_id: int) -> None:
            if not errors.tolerate:
                batches.write(batch, batch_id)
                return
            batch.persist()  # read twice: the bad records, then the good
            try:
                batches.write(errors.good(batch, context.producer_options), batch_id)
            finally:
                batch.unpersist()

        return (
            records.writeStream.foreachBatch(guarded(write))
            .option("checkpointLocation", context.checkpoint)
            .queryName(f"connect-{context.name}")
            .trigger(processingTime=TRIGGER)
            .start()
        )


class _Batches:
    """Writes micro-batches to the database as the connector's settings say."""

    def __init__(self, config: Mapping[str, str], key: Converter, value: Converter) -> None:
        self.settings = connection_settings(
            config["connection.url"].strip(),
            config.get("connection.user"),
            config.get("connection.password"),
        )
        self.mode = config.get("insert.mode", "insert").strip()
        self.pk_mode = config.get("pk.mode", "none").strip()
        self.pk_fields = [f.strip() for f in config.get("pk.fields", "").split(",") if f.strip()]
        self.deletes = config.get("delete.enabled", "false").strip().lower() == "true"
        self.table_format = config.get("table.name.format", "${topic}").strip()
        self.auto_create = config.get("auto.create", "false").strip().lower() == "true"
        self.auto_evolve = config.get("auto.evolve", "false").strip().lower() == "true"
        self.key_is_text = key.class_name == STRING
        self.key, self.value = key, value

    def write(self, batch: DataFrame, batch_id: int) -> None:
        if self.key.registry is not None or self.value.registry is not None:
            from strom.connect.registry_converters import decoded  # noqa: PLC0415

            batch = decoded(decoded(batch, "key", self.key), "value", self.value)
        text = F.col("value").cast("string")
        key = F.col("key").cast("string")
        records = batch.select(
            *_KAFKA_COLUMNS,
            F.get_json_object(text, "$.schema").alias("vschema"),
            F.get_json_object(text, "$.payload").alias("vpayload"),
            F.col("value").isNull().alias("tombstone"),
            (
                F.lit('{"type":"string"}')
                if self.key_is_text
                else F.get_json_object(key, "$.schema")
            ).alias("kschema"),
            (key if self.key_is_text else F.get_json_object(key, "$.payload")).alias("kpayload"),
        )
        if (keys := self._row_keys()) is not None:
            # one statement per key: the last record of a key in the micro-batch wins (a
            # replayed source writes a key twice, and one upsert cannot touch a row twice)
            last = Window.partitionBy("topic", *keys).orderBy(
                F.col("partition").desc(), F.col("offset").desc()
            )
            records = records.withColumn("n", F.row_number().over(last)).where("n = 1")
        records = records.persist()
        try:
            groups = records.select("topic", "vschema", "kschema", "tombstone").distinct()
            jobs = [self._job(records, *group) for group in groups.collect()]
            with connect(self.settings) as connection:
                for job in jobs:
                    if job is not None:
                        write(connection, job)
        finally:
            records.unpersist()

    def _row_keys(self) -> list[SparkColumn] | None:
        """What names a record's row when a micro-batch must keep one record per row (upserts,
        updates and deletes): its key, or its value's ``pk.fields`` (all of it without)."""
        if self.pk_mode == "record_key" and (self.mode != "insert" or self.deletes):
            return [F.col("kpayload")]
        if self.pk_mode == "record_value" and self.mode != "insert":
            fields = self.pk_fields
            return [F.get_json_object("vpayload", f"$.{f}") for f in fields] or [F.col("vpayload")]
        return None

    def _job(
        self, records: DataFrame, topic: str, vschema: str | None, kschema: str | None, dead: bool
    ) -> TableWrite | None:
        """One group's rows (or deletes), shaped by Spark and collected as Arrow."""
        if dead and not self.deletes:
            return None
        rows = records.where(
            (F.col("topic") == topic)
            & F.col("vschema").eqNullSafe(F.lit(vschema))
            & F.col("kschema").eqNullSafe(F.lit(kschema))
            & (F.col("tombstone") == dead)
        )
        key_fields, key_struct = self._key_fields(kschema)
        value_fields = [] if dead else fields_of(_schema(vschema, "value"), None)
        if self.pk_mode == "record_value":
            keys = self.pk_fields or [f.name for f in value_fields]
        elif self.pk_mode == "kafka":
            keys = self.pk_fields or [f.name for f in KAFKA_FIELDS]
        else:
            keys = [f.name for f in key_fields]
        taken = {f.name for f in key_fields}
        value_fields = [f for f in value_fields if f.name not in taken]
        fields = [*key_fields, *value_fields]
        columns = [
            *self._key_columns(key_fields, key_struct),
            *_payload_columns(F.col("vpayload"), value_fields, struct=True),
        ]
        table = rows.select(*columns).toArrow()
        return TableWrite(
            self.table_format.replace("${topic}", topic),
            fields,
            keys,
            self.mode,
            self.auto_create,
            self.auto_evolve,
            rows=None if dead else table,
            deletes=table if dead else None,
        )

    def _key_fields(self, kschema: str | None) -> tuple[list[Field], bool]:
        """The primary key's fields from the record's key or coordinates, and whether the key
        is a struct."""
        if self.pk_mode == "kafka":
            names = self.pk_fields or [f.name for f in KAFKA_FIELDS]
            return [Field(n, f.schema) for n, f in zip(names, KAFKA_FIELDS, strict=True)], False
        if self.pk_mode != "record_key":
            return [], False
        schema = _schema(kschema, "key")
        if schema.get("type") != "struct":
            name = self.pk_fields[0] if self.pk_fields else "__connect_key"
            return fields_of(schema, name), False
        found = fields_of(schema, None)
        return [f for f in found if not self.pk_fields or f.name in self.pk_fields], True

    def _key_columns(self, fields: list[Field], struct: bool) -> list[SparkColumn]:
        if self.pk_mode == "kafka":
            return [
                F.col(c).cast("string").alias(f.name)
                for c, f in zip(_KAFKA_COLUMNS, fields, strict=True)
            ]
        return _payload_columns(F.col("kpayload"), fields, struct=struct)


def _schema(text: str | None, which: str) -> dict[str, Any]:
    if not text:
        raise ValueError(
            f"The JDBC sink needs record {which}s with a schema (JsonConverter's envelope)"
        )
    schema: dict[str, Any] = json.loads(text)
    return schema


def _payload_columns(payload: SparkColumn, fields: list[Field], struct: bool) -> list[SparkColumn]:
    """The fields of a payload (a struct's JSON, or a primitive's) as text columns."""
    if not fields:
        return []
    if not struct:
        only = fields[0]
        return [only.value(payload.cast(only.json_type)).alias(only.name)]
    parsed = F.from_json(payload, StructType([StructField(f.name, f.json_type) for f in fields]))
    return [f.value(parsed[f.name]).alias(f.name) for f in fields]
