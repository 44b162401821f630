"""``write_stream``: a streaming write to strom in any output mode, update included.

Spark's Kafka sink takes ``outputMode("update")``, the usual mode for a streaming aggregation.
A Python data source cannot: PySpark's Python sinks lack ``SupportsStreamingUpdateAsAppend``.
``write_stream`` writes each micro-batch with ``foreachBatch`` as a batch write of the ``strom``
format. With ``exactly_once`` the batch write is transactional, with the micro-batch's id, as
the streaming sink's ``exactlyOnce`` is: its tasks run inside the micro-batch, so they know the
query and batch ids, and a replayed micro-batch finds its marker and writes nothing twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pyspark.sql import DataFrame
from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["write_stream"]

OUTPUT_MODES: Final = ("append", "update", "complete")


def write_stream(
    df: DataFrame,
    *,
    checkpoint: str,
    topic: str | None = None,
    output_mode: str = "update",
    exactly_once: bool = False,
    trigger: Mapping[str, Any] | None = None,
    query_name: str | None = None,
    **options: str,
) -> StreamingQuery:
    """Start writing the streaming ``df`` to strom; the running query.

    ``options`` are the ``strom`` sink's (``kafka.bootstrap.servers`` and the rest, named with
    underscores or as Spark names them); ``topic`` is the ``topic`` option. ``trigger`` is what
    ``DataStreamWriter.trigger`` takes, e.g. ``{"availableNow": True}``.
    """
    if output_mode not in OUTPUT_MODES:
        raise ValueError(
            f"output_mode must be one of {', '.join(OUTPUT_MODES)}, not {output_mode!r}"
        )
    sink = {name.replace("_", "."): str(value) for name, value in options.items()}
    if topic is not None:
        sink["topic"] = topic
    if exactly_once:
        sink["exactlyOnce"] = "true"

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        batch.write.format("strom").options(**sink).mode("append").save()

    writer = (
        df.writeStream.outputMode(output_mode)
        .option("checkpointLocation", checkpoint)
        .foreachBatch(write_batch)
    )
    if trigger is not None:
        writer = writer.trigger(**trigger)
    if query_name is not None:
        writer = writer.queryName(query_name)
    return writer.start()
