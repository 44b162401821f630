"""A failed persistent query is started again after a backoff that doubles, a query stopped on
purpose is left alone, and a start that fails waits longer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from strom.sql.retries import Backoff, Retried, summary

BACKOFF = Backoff(initial_ms=1_000, max_ms=3_000)


@dataclass
class _Query:
    """What `Retried` reads of a Spark StreamingQuery."""

    isActive: bool = True  # Spark's name
    error: str | None = None

    def exception(self) -> Any:
        return self.error


def streaming(active: bool = True, error: str | None = None) -> Any:
    """A stand-in for a StreamingQuery, typed as one."""
    return _Query(active, error)


def retried(first: Any, *later: Any) -> Retried:
    starts = iter(later)

    def start() -> Any:
        nxt = next(starts)
        if isinstance(nxt, Exception):
            raise nxt
        return nxt

    return Retried("CSAS_X_1", start, first)


def test_backoff_doubles_up_to_its_maximum() -> None:
    assert [BACKOFF.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 3.0, 3.0]
    assert Backoff().delay(1) == 15.0  # ksqlDB's default initial backoff


def test_a_running_or_stopped_query_is_left_alone() -> None:
    for query in (streaming(), streaming(active=False)):
        run = retried(query)
        run.check(100.0, BACKOFF)
        assert run.query is query
        assert (run.failed, run.retry_at) == (False, None)


def test_a_failed_query_starts_again_once_its_backoff_passed() -> None:
    second = streaming()
    run = retried(streaming(active=False, error="TimeoutException: no answer\nat ..."), second)
    run.check(100.0, BACKOFF)
    assert (run.failed, run.retry_at, run.error) == (True, 101.0, "TimeoutException: no answer")
    run.check(100.5, BACKOFF)
    assert run.query is not second
    run.check(101.0, BACKOFF)
    assert run.query is second
    assert (run.failed, run.failures) == (False, 1)


def test_each_failure_waits_longer_and_a_failed_start_counts_as_one() -> None:
    third = streaming()
    run = retried(streaming(active=False, error="e1"), RuntimeError("broker gone"), third)
    run.check(0.0, BACKOFF)
    run.check(1.0, BACKOFF)  # the start fails: two failures, 2 s more
    assert (run.failures, run.retry_at, run.error) == (2, 3.0, "RuntimeError: broker gone")
    run.check(2.9, BACKOFF)
    assert run.failed
    run.check(3.0, BACKOFF)
    assert run.query is third
    assert not run.failed


@pytest.mark.parametrize("failures", [1, 2, 10, 60])
def test_the_wait_never_passes_the_maximum(failures: int) -> None:
    assert 0 < BACKOFF.delay(failures) <= 3.0


def test_the_summary_of_a_data_source_failure_is_the_python_exception() -> None:
    spark = (
        "[PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when Python streaming data source "
        "perform latestOffset: Traceback (most recent call last):\n"
        '  File "x.py", line 1, in latest\n'
        "strom.spark.cluster.ClusterError: cannot list offsets: no leaders\n"
        "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.x(QueryExecutionErrors.scala:1)"
    )
    assert summary(spark) == "strom.spark.cluster.ClusterError: cannot list offsets: no leaders"
    assert summary("TimeoutException: no answer\nmore") == "TimeoutException: no answer"
    assert summary("something odd\nhappened") == "something odd"
    assert summary("") == ""
