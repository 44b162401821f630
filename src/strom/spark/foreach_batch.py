"""``write_stream``: a streaming write to strom in any output mode, update included; ``guarded``,
what every ``foreachBatch`` function of strom goes through.

Spark's Kafka sink takes ``outputMode("update")``, the usual mode for a streaming aggregation.
A Python data source cannot: PySpark's Python sinks lack ``SupportsStreamingUpdateAsAppend``.
``write_stream`` writes each micro-batch with ``foreachBatch`` as a batch write of the ``strom``
format. With ``exactly_once`` the batch write is transactional, with the micro-batch's id, as
the streaming sink's ``exactlyOnce`` is: its tasks run inside the micro-batch, so they know the
query and batch ids, and a replayed micro-batch finds its marker and writes nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.sql import DataFrame
from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["BatchFunction", "BatchFunctionError", "guarded", "write_stream"]

OUTPUT_MODES: Final = ("append", "update", "complete")

BatchFunction = Callable[[DataFrame, int], None]

INTERRUPTIONS: Final = (
    "java.lang.InterruptedException",
    "java.io.InterruptedIOException",
    "java.nio.channels.ClosedByInterruptException",
)
"""What Java throws in a thread that ``StreamingQuery.stop`` interrupts (Spark's list)."""

_PY4J_ERROR: Final = "py4j.protocol.Py4JJavaError"
"""The error's name as Py4J's text gives it, which Spark looks for."""


class BatchFunctionError(RuntimeError):
    """A JVM call of a ``foreachBatch`` function failed; Py4J's error, retold by ``guarded``."""


def guarded(func: BatchFunction) -> BatchFunction:
    """``func`` as a ``foreachBatch`` function whose failures Spark can read.

    When a Python ``foreachBatch`` function fails, Py4J hands the JVM the traceback as text;
    for a JVM call that failed (a ``Py4JJavaError``) that holds the whole Java stack trace.
    When the query is being stopped, Spark (4.x, ``StreamExecution.isInterruptionException``)
    scans that text with a regex that recurses once per character after the words
    ``Py4JJavaError: An error occurred while calling``, and a text of a few thousand characters
    overflows the stream thread's stack: a ``StackOverflowError`` of ``java.util.regex``
    frames kills the thread instead of the stop being recognised. So a ``Py4JJavaError`` leaves
    here as a ``BatchFunctionError``: with the same text (the Java stack trace, the causes'
    messages) when something failed, and with Py4J's short form naming the interruption (which
    Spark takes for a stop) when the stop interrupted the call.
    """

    def call(batch: DataFrame, batch_id: int) -> None:
        try:
            func(batch, batch_id)
        except Py4JJavaError as error:
            raise BatchFunctionError(_retold(error)).with_traceback(error.__traceback__) from None

    return call


def _retold(error: Py4JJavaError) -> str:
    """``error``'s text without Py4J's words (Spark then never scans it), or when a stop
    interrupted the call, Py4J's words and the interruption alone."""
    interruption = _interruption(error.java_exception)
    if interruption is not None:
        return f"{_PY4J_ERROR}: {error.errmsg}\n: {interruption}"
    return str(error)


def _interruption(throwable: Any) -> str | None:
    """The class of the first of ``throwable`` and its causes that is an interruption."""
    try:
        for _ in range(32):
            if throwable is None:
                return None
            name = str(throwable.getClass().getName())
            if name in INTERRUPTIONS:
                return name
            throwable = throwable.getCause()
    except Py4JError:  # the JVM is going away
        return None
    return None


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
        .foreachBatch(guarded(write_batch))
    )
    if trigger is not None:
        writer = writer.trigger(**trigger)
    if query_name is not None:
        writer = writer.queryName(query_name)
    return writer.start()
