"""A streaming query that copies one topic to another with ``exactlyOnce=true``.

``start_copy`` starts it in a session; run as a script it is a whole driver of its own (its own
SparkSession and JVM) that runs the copy to the end, so a test can SIGKILL it mid-query:

    python exactly_once_copy.py BOOTSTRAP SOURCE TARGET CHECKPOINT
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

import strom.spark

ROWS_PER_TRIGGER = 40
ROW_DELAY_S = 0.05
"""Each row waits this long before the sink gets it: a task's transaction holds written records
for a while, so a kill lands while a micro-batch is in flight."""


def start_copy(
    spark: SparkSession,
    *,
    bootstrap: str,
    source: str,
    target: str,
    checkpoint: Path,
    slow: bool = True,
    rows_per_trigger: int = ROWS_PER_TRIGGER,
) -> StreamingQuery:
    """The copy, in micro-batches of ``rows_per_trigger`` records, run to the end of the input."""

    def delayed(value: bytes) -> bytes:
        time.sleep(ROW_DELAY_S)
        return value

    value = F.udf(delayed, "binary", useArrow=False)(F.col("value")) if slow else F.col("value")
    return (
        spark.readStream.format("strom")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", rows_per_trigger)
        .load()
        .select("key", value.alias("value"), "partition")
        .writeStream.format("strom")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", target)
        .option("exactlyOnce", "true")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )


def main(bootstrap: str, source: str, target: str, checkpoint: str) -> None:
    spark = strom.spark.session(
        master="local[2]",
        app_name="strom-exactly-once-driver",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            # The JIT's first tier only, and the serial collector: this driver lives seconds.
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        },
    )
    query = start_copy(
        spark, bootstrap=bootstrap, source=source, target=target, checkpoint=Path(checkpoint)
    )
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:5])
