"""Seconds per batch read of a one-row Python data source, with Spark's Python workers
importing PySpark from the installed package (strom's session) or from ``pyspark.zip``.

Each read starts data source planner and reader processes (forks of Spark's Python daemon),
which import PySpark's worker modules: from the zip, Python compiles them every time. Prints
where the workers' pyspark came from and the first read's time
(new workers) and the median of ``--rounds`` more.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import statistics
import time
from collections.abc import Iterator
from unittest import mock

import pyspark
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType


class WorkerPySpark(DataSource):
    """One row: the ``pyspark.__file__`` of the worker that read it."""

    @classmethod
    def name(cls) -> str:
        return "worker_pyspark"

    def schema(self) -> str:
        return "file string"

    def reader(self, schema: StructType) -> DataSourceReader:
        return _Reader()


class _Reader(DataSourceReader):
    def read(self, partition: InputPartition) -> Iterator[tuple[str]]:
        yield (pyspark.__file__ or "",)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zip", action="store_true", help="leave pyspark.zip first (before)")
    parser.add_argument("--rounds", type=int, default=5, help="timed reads (default 5)")
    args = parser.parse_args()
    session_module = importlib.import_module("strom.spark.session")
    unchanged = mock.patch.object(session_module, "_with_worker_site", lambda conf: conf)
    with unchanged if args.zip else contextlib.nullcontext():
        spark = session_module.session(master="local[1]", app_name="strom-bench")
    try:
        spark.dataSource.register(WorkerPySpark)
        start = time.perf_counter()
        first = spark.read.format("worker_pyspark").load().collect()[0].file
        print(f"first read {time.perf_counter() - start:.2f} s; workers import {first}")
        times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            spark.read.format("worker_pyspark").load().collect()
            times.append(time.perf_counter() - start)
        print(f"median {statistics.median(times):.3f} s per read:", [f"{t:.2f}" for t in times])
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
