"""Kafka Connect's retries of a connector's transient failures: ``errors.retry.timeout`` and
``errors.retry.delay.max.ms``, and which database failures are transient."""

from __future__ import annotations

from strom.connect.connectors.jdbc.database import unreachable
from strom.connect.retries import RetryPolicy


def test_the_timeout_and_the_delays() -> None:
    kafka_default = RetryPolicy.of({}, 0)
    assert kafka_default.gives_up(0.0)  # 0: the failure is the task's at once
    waits = RetryPolicy.of({}, None)
    assert not waits.gives_up(1e9)
    assert [waits.delay_s(n) for n in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    retried = RetryPolicy.of({"errors.retry.timeout": "600000"}, 0)
    assert [retried.delay_s(n) for n in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
    bounded = RetryPolicy.of(
        {"errors.retry.timeout": "5000", "errors.retry.delay.max.ms": "1500"}, 0
    )
    assert (bounded.gives_up(4.9), bounded.gives_up(5.0)) == (False, True)
    assert [bounded.delay_s(n) for n in range(3)] == [1, 1.5, 1.5]
    assert not RetryPolicy.of({"errors.retry.timeout": "-1"}, 0).gives_up(1e9)


def test_a_database_that_cannot_be_reached_is_transient() -> None:
    refused = (
        "Traceback (most recent call last):\n  ...\npsycopg.OperationalError: connection failed:"
        ' connection to server at "127.0.0.1", port 5432 failed: Connection refused\n'
        "\tIs the server running on that host and accepting TCP/IP connections?"
    )
    reason = unreachable(RuntimeError(refused))
    assert reason is not None and "Connection refused" in reason
    assert (
        unreachable(RuntimeError('psycopg.errors.UndefinedTable: relation "t" does not exist'))
        is None
    )
    assert unreachable(ValueError("Connection refused")) is None  # not the database's
