"""The SQL server tests' steps: a server of its own service id whose queries run in the
suite's one SparkSession, statements over its REST API (httpx, as ksqlDB's clients send them),
and waits for something to be so."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
from pyspark.sql import SparkSession

from e2e.spark import connect_api
from e2e.spark.clients import unique_topic
from strom.sql.retries import Backoff
from strom.sql.server import SqlServer
from strom.sql.settings import SqlSettings
from strom.web.server import Listener

WAIT_S = float(os.environ.get("SQL_TEST_WAIT_S", "120"))
T = TypeVar("T")


def eventually(check: Callable[[], T | None], what: str, *, within: float = WAIT_S) -> T:
    """``check()``'s first truthy answer, polled for up to ``within`` seconds."""
    return connect_api.eventually(check, what, within=within, every=0.5)


def sql_settings(
    bootstrap: str, service: str, state_dir: Path, values: dict[str, str] | None = None
) -> SqlSettings:
    """A server on a free port of this host, its topics with one replica."""
    return SqlSettings(
        bootstrap_servers=bootstrap,
        service_id=service,
        listener=Listener("http", "127.0.0.1", 0),
        state_dir=state_dir,
        command_topic_replicas=1,
        sink_replicas=1,
        retry_backoff=Backoff(initial_ms=1_000, max_ms=10_000),
        values=values or {},
    )


@contextmanager
def serving(
    spark: SparkSession, bootstrap: str, prefix: str, state_dir: Path
) -> Iterator[httpx.Client]:
    """A SQL server of its own service id (named after ``prefix``) in the suite's SparkSession,
    and an HTTP client of its REST API; the server stops after."""
    server = SqlServer(
        sql_settings(bootstrap, unique_topic(prefix), state_dir), spark=lambda: spark
    )
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            yield client
    finally:
        server.stop()


def ksql(api: httpx.Client, text: str, *, accept: str | None = None, **properties: str) -> Any:
    """The answer of ``POST /ksql`` to ``text`` with these ``streamsProperties`` (and this
    Accept header); 200 or fail."""
    answer = api.post(
        "/ksql",
        json={"ksql": text, "streamsProperties": properties},
        headers=None if accept is None else {"Accept": accept},
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def query_states(api: httpx.Client) -> dict[str, str]:
    """The persistent queries' states by id (`SHOW QUERIES`), for a failure's message."""
    return {q["id"]: q["state"] for q in ksql(api, "SHOW QUERIES;")[0]["queries"]}
