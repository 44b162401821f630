"""The source's schema, Spark's Kafka source's exactly, and records turned into Arrow batches.

Columns: key binary, value binary, topic string, partition int, offset long, timestamp
timestamp, timestampType int (0 create time, 1 log append time, as Spark numbers them; -1 when
the record has none), and headers array<struct<key string, value binary>> with
``includeHeaders``. A batch of consumed records becomes one ``pyarrow.RecordBatch`` column by
column, which Spark takes without converting rows one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = ["HEADERS_TYPE", "RecordBatchBuilder", "source_schema"]

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)

# confluent-kafka numbers timestamp types 0 (none), 1 (create), 2 (log append); Spark -1, 0, 1.
_SPARK_TIMESTAMP_TYPE = {TIMESTAMP_CREATE_TIME: 0, TIMESTAMP_LOG_APPEND_TIME: 1}


def source_schema(*, include_headers: bool) -> StructType:
    """The schema of every DataFrame the source produces."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


class RecordBatchBuilder:
    """Turns lists of consumed messages (one partition's) into Arrow record batches."""

    def __init__(self, *, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.schema: Any = to_arrow_schema(
            source_schema(include_headers=include_headers), timezone="UTC"
        )

    def build(self, topic: str, partition: int, messages: Sequence[Any]) -> Any:
        """A ``pyarrow.RecordBatch`` of the messages, in the source's schema."""
        count = len(messages)
        stamps = [m.timestamp() for m in messages]
        columns = [
            pa.array([m.key() for m in messages], pa.binary()),
            pa.array([m.value() for m in messages], pa.binary()),
            pa.array([topic] * count, pa.string()),
            pa.array([partition] * count, pa.int32()),
            pa.array([m.offset() for m in messages], pa.int64()),
            pa.array(
                [ms * 1000 if kind else None for kind, ms in stamps],
                self.schema.field("timestamp").type,
            ),
            pa.array([_SPARK_TIMESTAMP_TYPE.get(kind, -1) for kind, _ in stamps], pa.int32()),
        ]
        if self.include_headers:
            columns.append(
                pa.array(
                    [_headers(m.headers()) for m in messages], self.schema.field("headers").type
                )
            )
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _headers(headers: list[tuple[str, bytes | None]] | None) -> list[dict[str, Any]] | None:
    """Spark's value for a record's headers: null when it has none."""
    if not headers:
        return None
    return [{"key": name, "value": value} for name, value in headers]
