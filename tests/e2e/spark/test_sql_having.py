"""`having.having_batches` when Spark runs a micro-batch again (a driver that died after the
batch's write and before its commit): the run again writes what the first run wrote, no row
twice beyond that and no tombstone lost, and the batches after it go on from the held keys it
left. Run on the suite's SparkSession with the micro-batches as Spark's update mode hands them
over (key, value, the HAVING's value), `write` collecting what would go to the topic."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from strom.sql.having import having_batches
from strom.sql.planner import HAVING

Written = list[tuple[bytes, bytes | None]]


def _batch(spark: SparkSession, rows: list[tuple[bytes, bytes, bool]]) -> DataFrame:
    return spark.createDataFrame(rows, f"key binary, value binary, `{HAVING}` boolean")


def test_a_micro_batch_run_again_writes_what_it_wrote_the_first_time(
    spark: SparkSession, tmp_path: Path
) -> None:
    written: list[Written] = []

    def write(out: DataFrame) -> None:
        written.append(sorted((bytes(r.key), r.value and bytes(r.value)) for r in out.collect()))

    run = having_batches(tmp_path / "having-keys", write)
    run(_batch(spark, [(b"a", b"a1", True), (b"b", b"b1", True), (b"c", b"c1", False)]), 0)
    assert written[-1] == [(b"a", b"a1"), (b"b", b"b1")]  # c never passed: nothing

    second = [(b"a", b"a2", False), (b"b", b"b2", True), (b"c", b"c2", False)]
    run(_batch(spark, second), 1)
    assert written[-1] == [(b"a", None), (b"b", b"b2")]  # a's tombstone: it was held
    # the driver died before committing batch 1: Spark runs it again, with the same rows
    run(_batch(spark, second), 1)
    assert written[-1] == written[-2], "a run again must write what the first run wrote"

    # and the next batch reads the keys batch 1 left: a is no longer held, b still is
    run(_batch(spark, [(b"a", b"a3", False), (b"b", b"b3", False)]), 2)
    assert written[-1] == [(b"b", None)]
    run(_batch(spark, [(b"a", b"a4", True), (b"b", b"b4", False)]), 3)
    assert written[-1] == [(b"a", b"a4")]  # b's tombstone was written once, in batch 2
    assert sorted(p.name for p in (tmp_path / "having-keys").iterdir()) == ["2", "3"]
