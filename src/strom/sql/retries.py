"""Failed persistent queries started again, as ksqlDB retries them.

A persistent query whose Spark streaming query stopped with an error (a broker that did not
answer in time, a lost executor) is started again from its checkpoint, so it neither loses nor
doubles a row. The wait before each start doubles with each failure of that query, from
`ksql.query.retry.backoff.initial.ms` up to `ksql.query.retry.backoff.max.ms`; meanwhile the
query's state is ERROR. A query stopped on purpose (TERMINATE, a server stop) is left alone.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["Backoff", "Retried", "summary"]

log = logging.getLogger(__name__)
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception)\b.*: \S")


def summary(error: str) -> str:
    """The line of a query's error that says what went wrong: the Python exception raised in
    a data source (Spark wraps it with a traceback), else the first line."""
    lines = error.splitlines()
    raised = [line for line in lines if _RAISED.match(line)]
    return raised[-1] if raised else (lines[0] if lines else "")


@dataclass(frozen=True)
class Backoff:
    initial_ms: int = 15_000
    max_ms: int = 900_000

    def delay(self, failures: int) -> float:
        """Seconds to wait before starting a query again after its ``failures``-th failure."""
        wait_ms: int = min(self.initial_ms << (failures - 1), self.max_ms)
        return wait_ms / 1000


@dataclass
class Retried:
    """A streaming query and how to start it again; `check` is called now and then."""

    name: str
    start: Callable[[], StreamingQuery]
    query: StreamingQuery
    failures: int = 0
    retry_at: float | None = None
    """When the failed query is due to start again (None: it has not failed)."""
    error: str = ""

    @property
    def failed(self) -> bool:
        return self.retry_at is not None or (
            not self.query.isActive and self.query.exception() is not None
        )

    def check(self, now: float, backoff: Backoff) -> None:
        """Notice a failure and schedule a start, or start the query when it is due."""
        if self.retry_at is None:
            if self.query.isActive or (error := self.query.exception()) is None:
                return
            self._failed(now, backoff, summary(str(error)))
        elif now >= self.retry_at:
            try:
                self.query = self.start()
            except Exception as error:  # the cause may still be there: wait longer
                self._failed(now, backoff, f"{type(error).__name__}: {error}")
            else:
                self.retry_at = None
                log.info("query %s started again", self.name)

    def _failed(self, now: float, backoff: Backoff, error: str) -> None:
        self.failures += 1
        self.error = error
        wait = backoff.delay(self.failures)
        self.retry_at = now + wait
        log.warning("query %s failed (%s); starting it again in %.1f s", self.name, error, wait)
