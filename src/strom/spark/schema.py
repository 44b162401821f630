"""The source's schema, Spark's Kafka source's exactly, and records turned into Arrow batches.

Columns: key binary, value binary, topic string, partition int, offset long, timestamp
timestamp, timestampType int (0 create time, 1 log append time, as Spark numbers them; -1 when
the record has none), and headers array<struct<key string, value binary>> with
``includeHeaders``. The readers hand Spark ``pyarrow.RecordBatch``es in ``arrow_schema``, which
Spark takes without converting rows one by one: built from fetched batch bytes
(``record_columns``) or, on the librdkafka path, from consumed messages column by column
(``RecordBatchBuilder``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Message,
)
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

__all__ = ["HEADERS_TYPE", "RecordBatchBuilder", "arrow_schema", "source_schema"]

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


def arrow_schema(*, include_headers: bool) -> Any:
    """The source's schema as the Arrow schema of the record batches its readers yield."""
    return to_arrow_schema(source_schema(include_headers=include_headers), timezone="UTC")


class RecordBatchBuilder:
    """Turns lists of consumed messages (one partition's) into Arrow record batches."""

    def __init__(self, *, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.schema: Any = arrow_schema(include_headers=include_headers)

    def build(self, topic: str, partition: int, messages: Sequence[Any]) -> Any:
        """A ``pyarrow.RecordBatch`` of the (one or more) messages, in the source's schema.

        Per-record work is one C-level ``map`` per field; columns with one value for the whole
        batch (topic, partition, usually the timestamp type) are repeated by Arrow.
        """
        count = len(messages)
        kinds, millis = zip(*map(Message.timestamp, messages), strict=True)
        columns = [
            pa.array(list(map(Message.key, messages)), pa.binary()),
            pa.array(list(map(Message.value, messages)), pa.binary()),
            pa.repeat(pa.scalar(topic, pa.string()), count),
            pa.repeat(pa.scalar(partition, pa.int32()), count),
            pa.array(list(map(Message.offset, messages)), pa.int64()),
            self._timestamps(kinds, millis),
            self._timestamp_types(kinds),
        ]
        if self.include_headers:
            columns.append(
                pa.array(
                    [_headers(m.headers()) for m in messages], self.schema.field("headers").type
                )
            )
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def _timestamps(self, kinds: tuple[int, ...], millis: tuple[int, ...]) -> Any:
        column_type = self.schema.field("timestamp").type
        if TIMESTAMP_NOT_AVAILABLE not in kinds:
            return pa.array(millis, pa.timestamp("ms", tz="UTC")).cast(column_type)
        stamps = [ms * 1000 if kind else None for kind, ms in zip(kinds, millis, strict=True)]
        return pa.array(stamps, column_type)

    @staticmethod
    def _timestamp_types(kinds: tuple[int, ...]) -> Any:
        if kinds.count(kinds[0]) == len(kinds):
            return pa.repeat(
                pa.scalar(_SPARK_TIMESTAMP_TYPE.get(kinds[0], -1), pa.int32()), len(kinds)
            )
        return pa.array([_SPARK_TIMESTAMP_TYPE.get(kind, -1) for kind in kinds], pa.int32())


def _headers(headers: list[tuple[str, bytes | None]] | None) -> list[dict[str, Any]] | None:
    """Spark's value for a record's headers: null when it has none."""
    if not headers:
        return None
    return [{"key": name, "value": value} for name, value in headers]
