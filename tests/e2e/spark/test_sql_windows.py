"""Windows over time: SESSION windows with EMIT FINAL, and stream-stream joins WITHIN a window,
over ksqlDB's REST API (httpx) on a real `strom server`, the queries in the suite's one
SparkSession, their output read with confluent-kafka. A session closes when the watermark (the
latest record's time less the grace period) passes it, and is written once, keyed as ksqlDB
keys sessions (the key, then the window's end and start, 8 bytes each); a LEFT join writes a
match at once, and a record without one, NULLs for the other side, once its window closed."""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import consume_all, unique_topic
from e2e.spark.sql_api import WAIT_S, ksql, query_states, serving

pytestmark = pytest.mark.timeout(300)  # a Spark query: slow when loaded


@pytest.fixture
def api(spark: SparkSession, broker: StromServer, tmp_path: Path) -> Iterator[httpx.Client]:
    with serving(spark, broker.bootstrap, "sql-windows", tmp_path / "state") as client:
        yield client


def _error(api: httpx.Client, text: str) -> str:
    answer = api.post("/ksql", json={"ksql": text})
    assert answer.status_code == 400, answer.text
    return str(answer.json()["message"])


def _session_key(user: str, start: int, end: int) -> bytes:
    return user.encode() + struct.pack(">qq", end, start)


def test_session_windows_emit_each_closed_session_once(
    api: httpx.Client, broker: StromServer
) -> None:
    clicks = unique_topic("sql-clicks")
    ksql(
        api,
        "CREATE STREAM clicks (user STRING KEY, page STRING) "
        f"WITH (KAFKA_TOPIC='{clicks}', VALUE_FORMAT='JSON', PARTITIONS=1);",
    )
    window = "WINDOW SESSION (5 SECONDS, GRACE PERIOD 1 SECOND)"
    assert _error(
        api, f"CREATE TABLE s AS SELECT user, COUNT(*) AS n FROM clicks {window} GROUP BY user;"
    ).startswith("SESSION windows need EMIT FINAL on Spark")
    assert (
        _error(
            api,
            "CREATE TABLE f AS SELECT user, COUNT(*) AS n FROM clicks GROUP BY user EMIT FINAL;",
        )
        == "EMIT FINAL is only supported for windowed aggregations."
    )
    inserts = [("a", "p1", 1_000), ("a", "p2", 3_000), ("b", "p1", 4_000), ("a", "p3", 20_000)]
    ksql(
        api,
        "".join(
            f"INSERT INTO clicks (user, page, ROWTIME) VALUES ('{u}', '{p}', {t});"
            for u, p, t in inserts
        ),
    )
    ksql(
        api,
        "CREATE TABLE sessions AS SELECT user, COUNT(*) AS n, "
        "WINDOWSTART AS first_ms, WINDOWEND AS last_ms "
        f"FROM clicks {window} GROUP BY user EMIT FINAL;",
        **{"ksql.streams.auto.offset.reset": "earliest"},
    )
    described = ksql(api, "DESCRIBE sessions;")[0]["sourceDescription"]
    assert (described["windowType"], described["type"]) == ("SESSION", "TABLE")  # as ksqlDB's
    # The watermark is 19 s: a's first session (1-3 s, closing at 8 s) and b's (4 s) are
    # final; a's second (20 s) is open until a record of 26 s or later.
    closed = {
        _session_key("a", 1_000, 3_000): {"N": 2, "FIRST_MS": 1_000, "LAST_MS": 3_000},
        _session_key("b", 4_000, 4_000): {"N": 1, "FIRST_MS": 4_000, "LAST_MS": 4_000},
    }

    def output() -> dict[bytes | None, Any]:
        return {
            r.key: json.loads(r.value or b"null") for r in consume_all(broker.bootstrap, "SESSIONS")
        }

    deadline = time.monotonic() + WAIT_S
    while output() != closed:
        assert time.monotonic() < deadline, f"sessions: {output()}, queries: {query_states(api)}"
        time.sleep(0.5)
    ksql(api, "INSERT INTO clicks (user, page, ROWTIME) VALUES ('c', 'p9', 40000);")
    closed[_session_key("a", 20_000, 20_000)] = {"N": 1, "FIRST_MS": 20_000, "LAST_MS": 20_000}
    while output() != closed:
        assert time.monotonic() < deadline, f"sessions: {output()}, queries: {query_states(api)}"
        time.sleep(0.5)
    assert len(consume_all(broker.bootstrap, "SESSIONS")) == 3  # each session once


def test_a_stream_stream_join_within_a_window(api: httpx.Client, broker: StromServer) -> None:
    shown, clicks = unique_topic("sql-shown"), unique_topic("sql-clicked")
    ksql(
        api,
        "CREATE STREAM shown (id STRING KEY, ad STRING) "
        f"WITH (KAFKA_TOPIC='{shown}', VALUE_FORMAT='JSON', PARTITIONS=1);"
        "CREATE STREAM clicks (id STRING KEY, ad STRING) "
        f"WITH (KAFKA_TOPIC='{clicks}', VALUE_FORMAT='JSON', PARTITIONS=1);"
        "CREATE TABLE ads (ad STRING PRIMARY KEY, name STRING) "
        f"WITH (KAFKA_TOPIC='{unique_topic('sql-ads')}', VALUE_FORMAT='JSON', PARTITIONS=1);",
    )
    assert _error(
        api, "CREATE STREAM j AS SELECT s.id, s.ad FROM shown s JOIN clicks c ON s.id = c.id;"
    ).startswith("Stream-Stream joins must have a WITHIN clause specified.")
    assert _error(
        api, "CREATE TABLE t AS SELECT a.ad, b.name FROM ads a JOIN ads b ON a.ad = b.ad;"
    ).startswith("Table-table joins are not supported on Spark")
    rows = [
        ("shown", "i1", "ad1", 1_000),
        ("shown", "i2", "ad2", 2_000),
        ("clicks", "i1", "ad1", 1_500),  # 0.5 s after: a match
        ("clicks", "i2", "ad2", 60_000),  # a minute after: too late for i2
        ("shown", "z", "adz", 100_000),  # both streams move the watermark on
        ("clicks", "x", "adx", 100_000),
    ]
    ksql(
        api,
        "".join(
            f"INSERT INTO {s} (id, ad, ROWTIME) VALUES ('{i}', '{a}', {t});" for s, i, a, t in rows
        ),
    )
    ksql(
        api,
        "CREATE STREAM clicked AS SELECT s.id, s.ad, c.ad AS clicked_ad FROM shown s "
        "LEFT JOIN clicks c WITHIN 10 SECONDS GRACE PERIOD 1 SECOND ON s.id = c.id "
        "EMIT CHANGES;",
        **{"ksql.streams.auto.offset.reset": "earliest"},
    )
    expected = [
        (b"i1", {"AD": "ad1", "CLICKED_AD": "ad1"}),
        (b"i2", {"AD": "ad2", "CLICKED_AD": None}),
    ]

    def output() -> list[tuple[bytes | None, Any]]:
        found = consume_all(broker.bootstrap, "CLICKED")
        return sorted((r.key, json.loads(r.value or b"null")) for r in found)

    deadline = time.monotonic() + WAIT_S
    while output() != expected:
        assert time.monotonic() < deadline, f"joined: {output()}, queries: {query_states(api)}"
        time.sleep(0.5)
