"""How a source connector's query writes its records to strom.

As they are, by the ``strom`` streaming sink; or micro-batch by micro-batch (``foreachBatch``)
when it must: with ``errors.tolerance=all`` a record a transform failed on (``serialized``'s
``error`` column) is skipped and logged, as Kafka's source tasks do; and with KIP-618's
exactly-once support the micro-batch's records and the connector's source offsets after them
(the ones Spark logged for the micro-batch, in its checkpoint's ``offsets/<batch id>``) are
written in one transaction of the ``strom`` sink's ``exactlyOnce`` batch write, whose
transactional id is ``<group.id>-<connector>-0`` and whose marker makes a replayed
micro-batch write nothing twice. The offsets topic's readers read committed records only, so
the offsets a new query starts from are those of the records written, never more or fewer."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from strom.connect.dead_letters import ErrorHandler
from strom.connect.records import encode, offset_key
from strom.spark.foreach_batch import guarded

if TYPE_CHECKING:
    from strom.connect.plugins import RunContext

__all__ = ["batch_offsets", "write_source"]


def batch_offsets(checkpoint: str, batch_id: int) -> list[Any]:
    """The end offsets Spark logged for micro-batch ``batch_id`` of the query whose
    checkpoint is ``checkpoint``, one per source in the plan's order (None for a source
    without one)."""
    lines = (Path(checkpoint) / "offsets" / str(batch_id)).read_text().splitlines()
    return [None if line.strip() == "-" else json.loads(line) for line in lines[2:]]


def write_source(
    records: DataFrame,
    context: RunContext,
    partitions: Sequence[Mapping[str, Any] | None] = (),
) -> DataStreamWriter:
    """The streaming write of a source's ``serialized`` records. ``partitions`` names the
    Connect source partition of each of the query's Spark sources in their order (None for
    one whose offsets Connect does not keep, a bulk table): what an exactly-once write
    (``context.transactions``) stores their offsets under."""
    handler = ErrorHandler.of(context.name, context.config)
    tolerant = "error" in records.columns
    prefix = context.transactions
    if not tolerant and prefix is None:
        return records.writeStream.format("strom").options(**context.spark_options)
    failed = F.col("error").isNotNull()

    def write(batch: DataFrame, batch_id: int) -> None:
        keep = tolerant and handler.log_errors
        if keep:
            batch.persist()  # read twice: the failed records, then the others
        try:
            if keep:
                for row in batch.where(failed).select("error").collect():
                    handler.log_source(row.error)
            good = batch.where(~failed).drop("error") if tolerant else batch
            options = dict(context.spark_options)
            if prefix is not None:
                good = good.unionByName(
                    _offset_records(batch, context, partitions, batch_id),
                    allowMissingColumns=True,
                ).repartition(1)  # one Spark task: one transaction
                options.update(
                    {
                        "exactlyOnce": "true",
                        "transactionalIdPrefix": prefix,
                        "kafka.partitioner": "murmur2_random",  # the Java producer's
                    }
                )
            good.write.format("strom").options(**options).mode("append").save()
        finally:
            if keep:
                batch.unpersist()

    return records.writeStream.foreachBatch(guarded(write))


def _offset_records(
    batch: DataFrame,
    context: RunContext,
    partitions: Sequence[Mapping[str, Any] | None],
    batch_id: int,
) -> DataFrame:
    """The offsets topic's records of micro-batch ``batch_id``: each source partition's end."""
    ends = batch_offsets(context.checkpoint, batch_id)
    rows = [
        (offset_key(context.name, dict(partition)), encode(end), context.offsets_topic)
        for partition, end in zip(partitions, ends, strict=False)
        if partition is not None and end is not None
    ]
    return batch.sparkSession.createDataFrame(rows, "key binary, value binary, topic string")
