"""What the Spark benchmarks share: a quiet local Spark session and a scratch directory, both
gone when the run ends."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

import strom.spark


@contextmanager
def spark_and_scratch(
    cores: int = 2, name: str = "strom-bench"
) -> Iterator[tuple[SparkSession, Path]]:
    """A session on ``local[cores]`` (only its errors logged, no progress bars) and a new
    directory; the session stopped and the directory removed on the way out."""
    spark = strom.spark.session(
        master=f"local[{cores}]", app_name=name, conf={"spark.ui.showConsoleProgress": "false"}
    )
    spark.sparkContext.setLogLevel("ERROR")
    scratch = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    try:
        yield spark, scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        spark.stop()
