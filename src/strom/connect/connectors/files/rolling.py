"""The storage sink's file writing: each micro-batch's records, given their file (``path``:
directory and name) and sorted by it and by offset, written on the executors by a Spark data
source's Arrow writer, one Arrow batch at a time (no per-record Python, but for Avro files:
fastavro writes Python values). A file is written under
a hidden temporary name and renamed into place once complete, so a reader never sees half a
file, and a batch Spark runs again writes the same names over the same files."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

__all__ = ["RollingFiles"]


class _Avro:
    """An Avro object container file's writer: its records (a file holds at most
    ``flush.size``) kept until it closes, then written in one fastavro call, as Python
    values (Spark's Avro writer needs the spark-avro jar, which PySpark does not ship)."""

    def __init__(self, path: Path, schema: str, codec: str) -> None:
        self.path, self.codec = path, codec
        self.schema = fastavro.parse_schema(json.loads(schema))
        self.fields = isinstance(self.schema, dict) and self.schema.get("type") == "record"
        self.rows: list[Any] = []

    def write_table(self, data: pa.Table) -> None:
        self.rows.extend(data.to_pylist() if self.fields else data.column(0).to_pylist())

    def close(self) -> None:
        with self.path.open("wb") as out:
            fastavro.writer(out, self.schema, self.rows, codec=self.codec)


class _Open:
    """One file being written: its final path, its temporary one and its format's writer."""

    def __init__(self, path: str, options: Mapping[str, str], schema: pa.Schema) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.temporary = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}.tmp")
        self.records = 0
        self.writer: Any
        extension = options["extension"]
        if extension == "avro":
            self.writer = _Avro(self.temporary, options["avro.schema"], options["avro.codec"])
        elif extension == "parquet":
            self.writer = pq.ParquetWriter(self.temporary, schema)
        elif extension == "csv":
            self.writer = pa_csv.CSVWriter(self.temporary, schema)
        else:
            self.writer = self.temporary.open("wb")

    def write(self, data: pa.Table) -> None:
        self.records += data.num_rows
        if isinstance(self.writer, (pq.ParquetWriter, pa_csv.CSVWriter, _Avro)):
            self.writer.write_table(data)
        else:  # JSON lines: the lines (each ending in a newline) are one Arrow buffer
            lines = data.column(0).combine_chunks()
            wide = pa.types.is_large_string(lines.type)
            offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64 if wide else np.int32)
            first, last = offsets[lines.offset], offsets[lines.offset + len(lines)]
            self.writer.write(memoryview(lines.buffers()[2])[first:last])

    def close(self) -> str:
        self.writer.close()
        self.temporary.replace(self.path)
        return str(self.path)


def _write(options: Mapping[str, str], batches: Iterator[pa.RecordBatch]) -> list[str]:
    """Rows of (``path``, data columns...), sorted by path, into their files; their paths."""
    written: list[str] = []
    current: _Open | None = None
    for batch in batches:
        table = pa.Table.from_batches([batch])
        runs = pc.run_end_encode(table.column("path").combine_chunks())
        ends = runs.run_ends.to_pylist()  # one entry per file, not per record
        names = runs.values.to_pylist()
        data = table.drop_columns(["path"])
        begin = 0
        for end, name in zip(ends, names, strict=True):
            if current is None or str(current.path) != name:
                if current is not None:
                    written.append(current.close())
                current = _Open(name, options, data.schema)
            current.write(data.slice(begin, end - begin))
            begin = end
    if current is not None:
        written.append(current.close())
    return written


@dataclass
class Written(WriterCommitMessage):
    """The files one Spark task wrote."""

    paths: list[str]


class RollingFiles(DataSource):
    """A batch-write Spark data source: option ``extension`` (json, parquet, csv or avro;
    Avro's with options ``avro.schema``, the files' schema as JSON, and ``avro.codec``)."""

    @classmethod
    def name(cls) -> str:
        return "strom-connect-storage"

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        return _Writer(dict(self.options))


class _Writer(DataSourceArrowWriter):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Written:
        return Written(_write(self.options, iterator))
