"""Push queries (`SELECT ... EMIT CHANGES`): a transient Spark streaming query whose micro-batches
are handed, row by row, to the HTTP response that follows it, until the client closes it, its
LIMIT is reached or `/close-query` ends it."""

from __future__ import annotations

import contextlib
import json
import queue
import shutil
import threading
import uuid
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from strom.spark.foreach_batch import guarded
from strom.sql import entities
from strom.sql.analyzer import OutputColumn
from strom.sql.compiler import column
from strom.sql.planner import HAVING, Plan

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from strom.sql.joins import JoinQuery

__all__ = ["PushQuery"]

_END = object()


class PushQuery:
    """One running push query; `rows` yields its rows (lists of JSON values) as they come."""

    def __init__(
        self,
        source: str,
        plan: Plan,
        limit: int | None,
        checkpoint: str,
        join: tuple[SparkSession, JoinQuery] | None = None,
    ) -> None:
        """`join`: a stream-table join's, whose micro-batches are each joined with the table
        as it is then (`joins`), as a persistent join query's."""
        self.id = f"transient_{source}_{uuid.uuid4().int % 10**19}"
        self.columns: tuple[OutputColumn, ...] = plan.columns
        self.limit = limit
        self.final_message = "Limit Reached" if limit is not None else None
        self._checkpoint = checkpoint
        self._rows: queue.Queue[object] = queue.Queue()
        self._closed = threading.Event()
        names = [c.name for c in plan.columns]
        as_json = F.to_json(F.struct(*[column(n) for n in names]), {"ignoreNullFields": "false"})

        def deliver(batch: DataFrame, _batch_id: int) -> None:
            if join is not None:
                batch = join[1].plan(join[0], batch).frame
            for row in batch.select(as_json.alias("row")).toLocalIterator():
                fields = json.loads(row["row"])
                self._rows.put([fields.get(n) for n in names])

        frame = plan.frame if join is None else join[1].stream(join[0])
        if HAVING in frame.columns:  # a push query shows the rows that pass only
            frame = frame.filter(F.col(HAVING))
        writer = frame.writeStream.outputMode(
            "update" if plan.aggregate and not plan.final else "append"
        )
        self._query: StreamingQuery = (
            writer.option("checkpointLocation", checkpoint).foreachBatch(guarded(deliver)).start()
        )

    def header(self) -> Mapping[str, Any]:
        return entities.stream_header(self.id, self.columns)

    def schema(self) -> str:
        return entities.query_schema(self.columns)

    def rows(self, poll: float = 0.5) -> Iterator[list[Any] | None]:
        """Rows as they come; None every `poll` seconds without one (so the caller can check
        its client); ends at the LIMIT, on `close`, or when the Spark query fails."""
        sent = 0
        while self.limit is None or sent < self.limit:
            if self._closed.is_set() or not self._query.isActive:
                return
            try:
                row = self._rows.get(timeout=poll)
            except queue.Empty:
                yield None
                continue
            if row is _END:
                return
            assert isinstance(row, list)
            sent += 1
            yield row

    def close(self) -> None:
        self._closed.set()
        self._rows.put(_END)
        with contextlib.suppress(Exception):
            self._query.stop()
        shutil.rmtree(self._checkpoint, ignore_errors=True)
