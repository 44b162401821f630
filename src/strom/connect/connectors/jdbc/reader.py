"""A streaming Spark data source of one table's (or query's) new rows, as Confluent's JDBC
source polls them: on the driver, each micro-batch's end offset is the newest row the mode
finds; on the executors, the rows between two offsets are read with ``COPY (SELECT ...) TO
STDOUT (FORMAT csv)`` straight into Arrow record batches (no per-row Python). A completed
batch's end offset goes to Connect's offsets topic (``{"table": name}`` or ``{"query":
"query"}``), where a new query starts from."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StructType,
)

from strom.connect.connectors.jdbc.database import connect
from strom.connect.connectors.jdbc.modes import Mode
from strom.connect.connectors.offset_writer import OffsetWriter

if TYPE_CHECKING:
    import pyarrow as pa
    from psycopg import Copy

__all__ = ["JdbcTableSource"]

BLOCK_BYTES = 4 << 20
"""How much COPY text Arrow parses into one record batch."""


class JdbcTableSource(DataSource):
    """Options: ``connection`` (psycopg's settings, JSON), ``mode``, ``source`` (a quoted
    table or a parenthesized query), ``incrementing``/``timestamp`` (column names), ``select``
    (the SQL of the columns), ``schema`` (their Spark types as COPY writes them, JSON),
    ``parallelism`` (how many ranges of ids an incrementing batch is read in, at most),
    ``offset`` (where a new query starts, JSON), and for the offsets topic ``connector``,
    ``partition`` (JSON), ``offsets.topic`` and ``client`` (the worker's librdkafka settings)."""

    @classmethod
    def name(cls) -> str:
        return "strom-connect-jdbc"

    def schema(self) -> StructType:
        return StructType.fromJson(json.loads(self.options["schema"]))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return _TableReader(dict(self.options), schema)


@dataclass(frozen=True)
class _Rows(InputPartition):
    query: str


class _TableReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.settings: dict[str, Any] = json.loads(options["connection"])
        self.mode = Mode(
            options["mode"],
            options["source"],
            options.get("incrementing") or None,
            options.get("timestamp") or None,
        )
        self.select = options["select"]
        self.parallelism = int(options.get("parallelism", "1"))
        self.schema = schema
        self.start: dict[str, Any] = json.loads(options["offset"])
        self.bulk = self.mode.name == "bulk"  # whose offsets Connect's topic never sees
        self.offsets = OffsetWriter(
            json.loads(options["client"]),
            options["offsets.topic"],
            options["connector"],
            json.loads(options["partition"]),
        )

    def initialOffset(self) -> dict[str, Any]:
        return self.start

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        # Spark plans a micro-batch once the one before it completed: ``start`` is done.
        self.commit(start)
        query = self.mode.latest(start)
        if query is None:
            return self.mode.end(start, None)
        with connect(self.settings) as connection:
            found = connection.execute(query).fetchone()
        return self.mode.end(start, found)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[_Rows]:
        from psycopg import sql  # noqa: PLC0415

        ranges = [(start, end)]
        if self.mode.name == "incrementing" and self.parallelism > 1:
            low, high = int(start["incrementing"]), int(end["incrementing"])
            bounds = [low + (high - low) * n // self.parallelism for n in range(self.parallelism)]
            cuts = [{"incrementing": b} for b in dict.fromkeys([*bounds, high])]
            ranges = list(pairwise(cuts))
        with connect(self.settings) as connection:
            texts = [
                self.mode.rows(sql.SQL(self.select), low_end, high_end).as_string(connection)
                for low_end, high_end in ranges
            ]
        return [_Rows(f"COPY ({text}) TO STDOUT (FORMAT csv)") for text in texts]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Rows)
        return _copy_into_arrow(self.settings, partition.query, self.schema)

    def commit(self, end: dict[str, Any]) -> None:
        if not self.bulk and end != self.mode.initial():
            self.offsets.store(end)


def _arrow_type(data_type: DataType) -> pa.DataType:
    import pyarrow as pa  # noqa: PLC0415

    if isinstance(data_type, DecimalType):
        return pa.decimal128(data_type.precision, data_type.scale)
    simple: list[tuple[type[DataType], pa.DataType]] = [
        (BooleanType, pa.bool_()),
        (ShortType, pa.int16()),
        (IntegerType, pa.int32()),
        (LongType, pa.int64()),
        (FloatType, pa.float32()),
        (DoubleType, pa.float64()),
    ]
    return next((arrow for kind, arrow in simple if isinstance(data_type, kind)), pa.string())


class _CopyStream(io.RawIOBase):
    """COPY's output as a file Arrow's CSV reader reads."""

    def __init__(self, copy: Copy) -> None:
        self.chunks = iter(copy)
        self.left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.left:
            chunk = next(self.chunks, None)
            if chunk is None:
                return 0
            self.left = bytes(chunk)
        size = min(len(buffer), len(self.left))
        buffer[:size] = self.left[:size]
        self.left = self.left[size:]
        return size


def _copy_into_arrow(
    settings: dict[str, Any], query: str, schema: StructType
) -> Iterator[pa.RecordBatch]:
    """The rows of a COPY as record batches of ``schema``."""
    import pyarrow as pa  # noqa: PLC0415
    from pyarrow import csv  # noqa: PLC0415

    names = schema.fieldNames()
    arrow_schema = pa.schema([(f.name, _arrow_type(f.dataType)) for f in schema.fields])
    with (
        connect(settings) as connection,
        connection.cursor() as cursor,
        cursor.copy(query) as copy,
    ):
        stream = io.BufferedReader(_CopyStream(copy), BLOCK_BYTES)
        if not stream.peek(1):
            return
        reader = csv.open_csv(
            stream,
            read_options=csv.ReadOptions(
                column_names=names, block_size=BLOCK_BYTES, use_threads=False
            ),
            convert_options=csv.ConvertOptions(
                column_types=arrow_schema,
                null_values=[""],
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
                true_values=["t"],
                false_values=["f"],
            ),
        )
        yield from reader
