"""HAVING over a table, as ksqlDB's filter of a KTable: a key whose row stops passing the HAVING
is deleted from the output table (a tombstone), and a key whose row never passed writes nothing.

Spark's update mode gives each micro-batch's changed groups with their HAVING's value
(`planner.HAVING`); which keys the output table holds is kept beside the query's checkpoint, a
set of encoded keys per micro-batch (`<dir>/<batch id>`, parquet), read and written by Spark
(no Python per record). A micro-batch run again after a failure reads the set the micro-batch
before it left, so it writes what it wrote the first time.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from strom.sql.planner import HAVING

__all__ = ["having_batches"]

Batch = Callable[[DataFrame, int], None]
_HELD = "__HELD"


def having_batches(directory: Path, write: Callable[[DataFrame], None]) -> Batch:
    """A `foreachBatch` function for a sink frame with the `HAVING` column: the rows that pass
    and the tombstones of held keys that fail, given to `write` (key, value, timestamp)."""

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        spark = batch.sparkSession
        versions = sorted(int(p.name) for p in directory.glob("[0-9]*") if int(p.name) < batch_id)
        held = (
            spark.read.parquet(str(directory / str(versions[-1])))
            if versions
            else spark.createDataFrame([], "key binary")
        ).withColumn(_HELD, F.lit(True))
        batch = batch.persist()
        try:
            # the held keys broadcast to the batch's partitions, and the batch's keys to the
            # held ones: no shuffle (the batch has the aggregate's shuffle partitions)
            seen = batch.join(F.broadcast(held), "key", "left")
            seen = seen.filter(F.col(HAVING) | F.col(_HELD).isNotNull())
            value = F.when(F.col(HAVING), F.col("value")).otherwise(F.lit(None).cast("binary"))
            write(seen.withColumn("value", value).drop(HAVING, _HELD))
            changed = F.broadcast(batch.select("key"))
            keys = held.select("key").join(changed, "key", "left_anti")
            keys = keys.unionByName(batch.filter(F.col(HAVING)).select("key"))
            keys.coalesce(1).write.mode("overwrite").parquet(str(directory / str(batch_id)))
        finally:
            batch.unpersist()
        for old in versions[:-1]:  # the one before this stays, for a run again of this one
            shutil.rmtree(directory / str(old), ignore_errors=True)

    return write_batch
