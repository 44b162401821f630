"""``strom.spark.foreach_batch.guarded``: a ``foreachBatch`` query stopped while its function is
inside a JVM call stops as Spark means it to ("Stopped", no error), instead of its stream thread
dying of a ``StackOverflowError`` in Spark's regex over Py4J's error text; a JVM call that
fails still fails the query with the Java error's text."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from strom.spark.foreach_batch import BatchFunction, guarded

TIMEOUT_S = float(os.environ.get("STROM_TEST_TIMEOUT_S", "60"))


def _start(spark: SparkSession, func: BatchFunction, checkpoint: Path) -> StreamingQuery:
    return (
        spark.readStream.format("rate")
        .load()
        .writeStream.foreachBatch(func)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )


def test_a_query_stopped_inside_a_jvm_call_stops_cleanly(
    spark: SparkSession, tmp_path: Path
) -> None:
    inside = threading.Event()

    def sleep_in_the_jvm(batch: DataFrame, batch_id: int) -> None:
        inside.set()
        assert spark._jvm is not None
        spark._jvm.java.lang.Thread.sleep(int(TIMEOUT_S * 1000))

    query = _start(spark, guarded(sleep_in_the_jvm), tmp_path / "checkpoint")
    assert inside.wait(TIMEOUT_S), "the first micro-batch never ran"
    time.sleep(0.2)  # into the JVM call
    query.stop()
    assert query.exception() is None
    # Spark's own words once it knew the stop for one (without guarded: "Processing new data",
    # the thread having died in the regex)
    assert query.status["message"] == "Stopped"


def test_a_failed_jvm_call_fails_the_query_with_the_java_error(
    spark: SparkSession, tmp_path: Path
) -> None:
    def load(batch: DataFrame, batch_id: int) -> None:
        assert spark._jvm is not None
        spark._jvm.java.lang.Class.forName("no.such.Class")

    query = _start(spark, guarded(load), tmp_path / "checkpoint")
    with pytest.raises(Exception, match="ClassNotFoundException"):
        query.awaitTermination(int(TIMEOUT_S))
    text = str(query.exception())
    assert "BatchFunctionError" in text
    assert "java.lang.ClassNotFoundException: no.such.Class" in text
    assert "at java.base/java.lang.Class.forName" in text  # the Java stack trace
