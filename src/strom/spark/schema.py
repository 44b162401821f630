"""The source's schema, Spark's Kafka source's exactly, in Spark's and in Arrow's types.

Columns: key binary, value binary, topic string, partition int, offset long, timestamp
timestamp, timestampType int (0 create time, 1 log append time, as Spark numbers them), and
headers array<struct<key string, value binary>> with ``includeHeaders``. The readers hand
Spark ``pyarrow.RecordBatch``es in ``arrow_schema`` (built by ``record_columns``), which Spark
takes without converting rows one by one."""

from __future__ import annotations

from typing import Any

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

__all__ = ["HEADERS_TYPE", "arrow_schema", "source_schema"]

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


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
