"""Pull queries from a table's materialized state, over ksqlDB's REST API (httpx, as ksqlDB's
clients), on a real `strom server`, the aggregate's query in the suite's one SparkSession: key
lookups, key ranges and filtered table scans on `/query-stream` and `/query`, the state
following the topic (updates, tombstones), and ksqlDB's errors for the pull queries it
refuses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import Record, consume_all, produce, unique_topic
from e2e.spark.sql_api import eventually, ksql, serving

pytestmark = pytest.mark.timeout(300)  # a Spark query: slow when loaded


@pytest.fixture
def api(spark: SparkSession, broker: StromServer, tmp_path: Path) -> Iterator[httpx.Client]:
    with serving(spark, broker.bootstrap, "sql-pull", tmp_path / "state") as client:
        yield client


def _pull(api: httpx.Client, sql: str, **properties: str) -> list[Any]:
    """The rows of `/query-stream` (its delimited form: the header line, then a row a line)."""
    answer = api.post("/query-stream", json={"sql": sql, "properties": properties})
    assert answer.status_code == 200, answer.text
    header, *rows = [json.loads(line) for line in answer.text.splitlines()]
    assert "queryId" in header
    return rows


def _refused(api: httpx.Client, sql: str, **properties: str) -> str:
    answer = api.post("/query-stream", json={"sql": sql, "properties": properties})
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert (body["@type"], body["error_code"]) == ("statement_error", 40001)
    return str(body["message"])


def test_pull_queries_read_the_state_of_an_aggregate(api: httpx.Client) -> None:
    orders, totals = unique_topic("sql-pull-orders"), unique_topic("sql-pull-totals")
    ksql(
        api,
        "CREATE STREAM orders (id STRING KEY, item STRING, amount DOUBLE) "
        f"WITH (KAFKA_TOPIC='{orders}', VALUE_FORMAT='JSON', PARTITIONS=2);"
        "INSERT INTO orders (id, item, amount) VALUES ('o1', 'apple', 3.5);"
        "INSERT INTO orders (id, item, amount) VALUES ('o2', 'pear', 7.5);"
        "INSERT INTO orders (id, item, amount) VALUES ('o3', 'apple', 12.0);",
    )
    ksql(
        api,
        # a topic of its own: the default (TOTALS) is on the suite's one broker, where another
        # test's rows in it would be this table's rows too
        f"CREATE TABLE totals WITH (KAFKA_TOPIC='{totals}') AS SELECT item, COUNT(*) AS n, "
        "SUM(amount) AS total FROM orders GROUP BY item EMIT CHANGES;",
        **{"ksql.streams.auto.offset.reset": "earliest"},
    )
    apple = "SELECT * FROM totals WHERE item = 'apple';"
    assert eventually(lambda: _pull(api, apple) == [["apple", 2, 15.5]], "apple's row")
    rows = [["apple", 2, 15.5], ["pear", 1, 7.5]]
    assert eventually(lambda: sorted(_pull(api, "SELECT * FROM totals;")) == rows, "a scan")
    assert sorted(_pull(api, "SELECT total, item FROM totals WHERE item IN ('pear', 'fig');")) == [
        [7.5, "pear"]
    ]
    assert len(_pull(api, "SELECT * FROM totals LIMIT 1;")) == 1
    assert _pull(api, "SELECT item FROM totals WHERE total > 10;") == [["apple"]]
    assert _pull(api, "SELECT item FROM totals WHERE item > 'b' AND item < 'q';") == [["pear"]]
    assert _pull(api, "SELECT * FROM totals WHERE item = 'apple' AND n > 5;") == []

    with api.stream(
        "POST", "/query", json={"ksql": "SELECT item, n FROM totals WHERE item = 'pear';"}
    ) as answer:
        chunks = json.loads(answer.read())
    assert chunks[0]["header"]["schema"] == "`ITEM` STRING KEY, `N` BIGINT"
    assert chunks[1:] == [{"row": {"columns": ["pear", 1]}}]

    ksql(api, "INSERT INTO orders (id, item, amount) VALUES ('o4', 'pear', 0.5);")
    assert eventually(
        lambda: _pull(api, "SELECT n, total FROM totals WHERE item = 'pear';") == [[2, 8.0]],
        "the state following the table's topic",
    )

    off = {"ksql.query.pull.table.scan.enabled": "false"}
    assert _refused(api, "SELECT * FROM totals;", **off) == (
        "Query requires table scan to be enabled. Table scans can be enabled by setting "
        "ksql.query.pull.table.scan.enabled=true"
    )
    assert _pull(api, apple, **off) == [["apple", 2, 15.5]]  # a key lookup is no scan
    assert _refused(api, "SELECT * FROM totals WHERE item > 'b';", **off).startswith(
        "Query requires table scan to be enabled."
    )
    assert _refused(api, "SELECT * FROM totals WHERE item LIKE 'p%';") == (
        "Unsupported pull query WHERE: (ITEM LIKE 'p%') is not supported in pull queries yet."
    )
    assert _refused(api, "SELECT * FROM orders;").startswith("Pull queries read tables;")


def test_a_declared_table_is_queryable_as_a_source_table_only(
    api: httpx.Client, broker: StromServer
) -> None:
    prices, plain = unique_topic("sql-pull-prices"), unique_topic("sql-pull-plain")
    ksql(
        api,
        "CREATE SOURCE TABLE prices (item STRING PRIMARY KEY, price DOUBLE) "
        f"WITH (KAFKA_TOPIC='{prices}', VALUE_FORMAT='JSON', PARTITIONS=1);"
        "CREATE TABLE plain (item STRING PRIMARY KEY, price DOUBLE) "
        f"WITH (KAFKA_TOPIC='{plain}', VALUE_FORMAT='JSON', PARTITIONS=1);",
    )
    assert _refused(api, "SELECT * FROM plain WHERE item = 'fig';") == (
        "The `PLAIN` table isn't queryable. To derive a queryable table, you can do "
        "'CREATE TABLE QUERYABLE_PLAIN AS SELECT * FROM PLAIN'. See https://cnfl.io/queries "
        "for more info.\nAdd EMIT CHANGES if you intended to issue a push query."
    )
    produce(
        broker.bootstrap,
        prices,
        [
            Record(b'{"price": 1.0}', b"fig"),
            Record(b'{"price": 2.0}', b"kiwi"),
            Record(b'{"price": 1.5}', b"fig"),
        ],
    )
    scan = "SELECT * FROM prices;"
    assert eventually(lambda: sorted(_pull(api, scan)) == [["fig", 1.5], ["kiwi", 2.0]], "rows")
    produce(broker.bootstrap, prices, [Record(None, b"kiwi")])  # a tombstone
    assert eventually(lambda: _pull(api, scan) == [["fig", 1.5]], "the key deleted")
    assert _pull(api, "SELECT * FROM prices WHERE item = 'kiwi';") == []
    ksql(api, "DROP TABLE prices;")
    assert _refused(api, scan) == "PRICES does not exist."


def test_a_row_that_stops_passing_having_is_deleted(api: httpx.Client, broker: StromServer) -> None:
    """ksqlDB's `udafs only in having`: a key whose row no longer passes the HAVING gets a
    tombstone (and leaves the pull query's state); a key that never passed writes nothing."""
    orders, big = unique_topic("sql-having-orders"), unique_topic("sql-having-big")
    ksql(
        api,
        "CREATE STREAM orders (id STRING KEY, item STRING, amount DOUBLE) "
        f"WITH (KAFKA_TOPIC='{orders}', VALUE_FORMAT='JSON', PARTITIONS=1);"
        "INSERT INTO orders (id, item, amount) VALUES ('o1', 'apple', 3.5);"
        "INSERT INTO orders (id, item, amount) VALUES ('o2', 'pear', 1.0);"
        "INSERT INTO orders (id, item, amount) VALUES ('o3', 'apple', 12.0);",
    )
    ksql(
        api,
        f"CREATE TABLE big WITH (KAFKA_TOPIC='{big}') AS SELECT item, SUM(amount) AS total "
        "FROM orders GROUP BY item HAVING SUM(amount) > 5 EMIT CHANGES;",
        **{"ksql.streams.auto.offset.reset": "earliest"},
    )
    apple = "SELECT * FROM big WHERE item = 'apple';"
    assert eventually(lambda: _pull(api, apple) == [["apple", 15.5]], "apple's row")
    ksql(api, "INSERT INTO orders (id, item, amount) VALUES ('o4', 'apple', -20.0);")
    assert eventually(lambda: _pull(api, "SELECT * FROM big;") == [], "apple's row deleted")
    written = [(r.key, r.value) for r in consume_all(broker.bootstrap, big)]
    assert written == [(b"apple", b'{"TOTAL":15.5}'), (b"apple", None)]


def test_pull_queries_on_windowed_and_multi_key_tables(api: httpx.Client) -> None:
    """ksqlDB's pull queries on a windowed table (its rows per window, `*` with WINDOWSTART and
    WINDOWEND, bounds in the WHERE) and on a table of two key columns (a lookup names both)."""
    clicks = unique_topic("sql-pull-clicks")
    per_minute, pairs = unique_topic("sql-pull-minute"), unique_topic("sql-pull-pairs")
    ksql(
        api,
        "CREATE STREAM clicks (id STRING KEY, page STRING, user STRING) "
        f"WITH (KAFKA_TOPIC='{clicks}', VALUE_FORMAT='JSON', PARTITIONS=1);"
        "INSERT INTO clicks (ROWTIME, id, page, user) VALUES (1000, 'c1', 'home', 'ann');"
        "INSERT INTO clicks (ROWTIME, id, page, user) VALUES (2000, 'c2', 'home', 'bob');"
        "INSERT INTO clicks (ROWTIME, id, page, user) VALUES (61000, 'c3', 'home', 'ann');"
        "INSERT INTO clicks (ROWTIME, id, page, user) VALUES (5000, 'c4', 'cart', 'ann');",
    )
    earliest = {"ksql.streams.auto.offset.reset": "earliest"}
    ksql(
        api,
        f"CREATE TABLE per_minute WITH (KAFKA_TOPIC='{per_minute}') AS SELECT page, COUNT(*) AS n "
        "FROM clicks WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY page EMIT CHANGES;"
        f"CREATE TABLE pairs WITH (KAFKA_TOPIC='{pairs}', KEY_FORMAT='JSON') AS SELECT page, "
        "user, COUNT(*) AS n FROM clicks GROUP BY page, user EMIT CHANGES;",
        **earliest,
    )
    home = "SELECT * FROM per_minute WHERE page = 'home';"
    assert eventually(
        lambda: _pull(api, home) == [["home", 0, 60000, 2], ["home", 60000, 120000, 1]],
        "home's windows",
    )
    later = "SELECT page, n FROM per_minute WHERE page = 'home' AND WINDOWSTART >= 60000;"
    off = {"ksql.query.pull.table.scan.enabled": "false"}
    assert _pull(api, later, **off) == [["home", 1]]
    answer = api.post("/query-stream", json={"sql": home}).text.splitlines()[0]
    assert json.loads(answer)["columnNames"] == ["PAGE", "WINDOWSTART", "WINDOWEND", "N"]

    ann_home = "SELECT n FROM pairs WHERE page = 'home' AND user = 'ann';"
    assert eventually(lambda: _pull(api, ann_home, **off) == [[2]], "ann's home clicks")
    both = "SELECT user, n FROM pairs WHERE page IN ('home', 'cart') AND user = 'ann';"
    assert sorted(_pull(api, both, **off)) == [["ann", 1], ["ann", 2]]
    assert _refused(api, "SELECT * FROM pairs WHERE page = 'home';", **off).startswith(
        "Query requires table scan to be enabled."
    )
