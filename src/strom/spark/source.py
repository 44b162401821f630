"""The ``strom`` data source: what Spark calls to read and write topics.

``spark.read``/``readStream.format("strom")`` read topics as Spark's Kafka source does;
``df.write``/``writeStream.format("strom")`` write them as its sink does. Options are parsed
here, on the driver, so a bad one fails the query before any task starts.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from strom.spark.options import OptionError, parse_read_options, parse_write_options
from strom.spark.reader import StromBatchReader, StromStreamReader
from strom.spark.schema import source_schema
from strom.spark.writer import (
    StromBatchWriter,
    StromStreamWriter,
    check_producer_settings,
    check_write_schema,
)

__all__ = ["StromDataSource"]


class StromDataSource(DataSource):
    """Topics of a strom (or any Kafka) cluster as DataFrames, in batch and streaming."""

    @classmethod
    def name(cls) -> str:
        return "strom"

    def _include_headers(self) -> bool:
        return str(self.options.get("includeHeaders", "false")).strip().lower() == "true"

    def schema(self) -> StructType:
        return source_schema(include_headers=self._include_headers())

    def _check_schema(self, schema: StructType) -> None:
        if schema != self.schema():
            raise OptionError(
                "the strom source has a fixed schema (Spark's Kafka source's) and cannot be "
                "given another one"
            )

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_schema(schema)
        return StromBatchReader(parse_read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        self._check_schema(schema)
        return StromStreamReader(parse_read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise OptionError(
                "save mode Overwrite is not allowed for strom; use Append (or ErrorIfExists)"
            )
        # exactlyOnce is for a batch write inside a micro-batch (foreachBatch, as
        # strom.spark.write_stream does it); elsewhere its tasks refuse, naming the reason.
        options = parse_write_options(self.options)
        check_write_schema(schema, options)
        check_producer_settings(options)
        return StromBatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = parse_write_options(self.options)
        check_write_schema(schema, options)
        check_producer_settings(options)
        return StromStreamWriter(options)
