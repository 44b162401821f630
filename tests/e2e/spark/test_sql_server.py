"""A SQL server (ksqlDB's REST API) on a real `strom server`, driven with httpx as ksqlDB's
clients drive it, its queries in the suite's one SparkSession; input produced and output read
with confluent-kafka. One stream, a filter-and-project stream and an aggregate table, a pull
and a push query, ksqlDB's errors, and a restarted server that rebuilds everything from its
command topic and resumes its queries from their checkpoints: nothing lost, nothing twice."""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from confluent_kafka.cimpl import NewTopic
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import Record, admin, consume_all, produce, unique_topic
from e2e.spark.sql_api import eventually, ksql, query_states, sql_settings
from strom.sql.server import SqlServer

pytestmark = pytest.mark.timeout(600)  # several Spark queries, a restart: slow when loaded
WAIT_S = float(os.environ.get("SQL_TEST_WAIT_S", "240"))
EARLIEST = {"ksql.streams.auto.offset.reset": "earliest"}
T = TypeVar("T")


def _eventually(check: Callable[[], T | None], what: str) -> T:
    return eventually(check, what, within=WAIT_S)


def _ksql(api: httpx.Client, text: str, **properties: str) -> Any:
    return ksql(api, text, accept="application/vnd.ksql.v1+json", **properties)


def _error(api: httpx.Client, text: str) -> dict[str, Any]:
    answer = api.post("/ksql", json={"ksql": text, "streamsProperties": {}})
    assert answer.status_code == 400, answer.text
    body: dict[str, Any] = answer.json()
    assert body["@type"] == "statement_error"
    return body


def _order(order_id: int, name: str, amount: float, region: str) -> Record:
    value = {"name": name, "amount": amount, "region": region}
    return Record(json.dumps(value).encode(), struct.pack(">i", order_id))


def _values(bootstrap: str, topic: str) -> list[tuple[bytes | None, Any]]:
    return [
        (r.key, json.loads(r.value) if r.value else None) for r in consume_all(bootstrap, topic)
    ]


def test_streams_tables_push_queries_and_a_restart(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap
    orders, service = unique_topic("sql-orders"), unique_topic("sql")
    settings = sql_settings(bootstrap, service, tmp_path / "state", {"ksql.service.id": service})
    server = SqlServer(settings, spark=lambda: spark)
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as api:
            info = api.get("/info").json()["KsqlServerInfo"]
            assert info["ksqlServiceId"] == service and info["serverStatus"] == "RUNNING"
            created = _ksql(
                api,
                "CREATE STREAM orders (id INT KEY, name STRING, amount DOUBLE, region STRING) "
                f"WITH (KAFKA_TOPIC='{orders}', VALUE_FORMAT='JSON', PARTITIONS=1);",
            )
            assert created[0]["@type"] == "currentStatus"
            assert created[0]["commandStatus"]["message"] == "Stream created"
            assert created[0]["commandId"] == "stream/`ORDERS`/create"
            produce(
                bootstrap,
                orders,
                [
                    _order(1, "ann", 25.0, "eu"),
                    _order(2, "bob", 5.0, "eu"),
                    _order(3, "cy", 40.0, "us"),
                ],
            )

            syntax = _error(api, "CREATE STREAM x AS SELEC * FROM orders;")
            assert syntax["error_code"] == 40001
            assert syntax["message"].startswith("line 1:")
            unknown = _error(api, "CREATE STREAM x AS SELECT nope FROM orders;")
            assert unknown["message"] == "SELECT column 'NOPE' cannot be resolved."
            missing = _error(
                api, "CREATE STREAM y (a INT) WITH (KAFKA_TOPIC='nope-x', VALUE_FORMAT='JSON');"
            )
            assert missing["message"].startswith("Topic 'nope-x' does not exist.")

            big = _ksql(
                api,
                "CREATE STREAM big AS SELECT id, UCASE(name) AS who, amount * 2 AS doubled "
                "FROM orders WHERE amount > 10 EMIT CHANGES;",
                **EARLIEST,
            )[0]
            big_query = big["commandStatus"]["queryId"]
            assert big_query.startswith("CSAS_BIG_")
            totals = _ksql(
                api,
                "CREATE TABLE totals AS SELECT region, COUNT(*) AS n, SUM(amount) AS total "
                "FROM orders GROUP BY region EMIT CHANGES;",
                **EARLIEST,
            )[0]
            assert totals["commandStatus"]["queryId"].startswith("CTAS_TOTALS_")

            expected_big = [
                (struct.pack(">i", 1), {"WHO": "ANN", "DOUBLED": 50.0}),
                (struct.pack(">i", 3), {"WHO": "CY", "DOUBLED": 80.0}),
            ]
            assert _eventually(
                lambda: (found := _values(bootstrap, "BIG")) == expected_big and found,
                "filtered stream",
            )

            def latest_totals() -> dict[bytes | None, Any]:
                return dict(_values(bootstrap, "TOTALS"))

            assert _eventually(
                lambda: (
                    (t := latest_totals())
                    == {b"eu": {"N": 2, "TOTAL": 30.0}, b"us": {"N": 1, "TOTAL": 40.0}}
                    and t
                ),
                "aggregate table",
            )

            listed = _ksql(api, "SHOW STREAMS; SHOW TABLES; SHOW QUERIES;")
            assert {s["name"] for s in listed[0]["streams"]} == {"ORDERS", "BIG"}
            assert listed[1]["tables"][0]["name"] == "TOTALS"
            assert {q["state"] for q in listed[2]["queries"]} == {"RUNNING"}
            described = _ksql(api, "DESCRIBE big;")[0]["sourceDescription"]
            assert [(f["name"], f["schema"]["type"]) for f in described["fields"]] == [
                ("ID", "INTEGER"),
                ("WHO", "STRING"),
                ("DOUBLED", "DOUBLE"),
            ]
            assert described["writeQueries"][0]["id"] == big_query
            assert (described["partitions"], described["replication"]) == (1, 1)
            topics = _ksql(api, "SHOW TOPICS;")[0]["topics"]
            assert {"name": orders, "replicaInfo": [1]} in topics
            assert not [t for t in topics if t["name"].startswith("_")]
            busy = _error(api, "DROP STREAM orders;")
            assert busy["message"].startswith("Cannot drop ORDERS.")

            def pull() -> list[Any]:  # the table's state follows its topic: soon there
                pulled = api.post(
                    "/query-stream",
                    json={"sql": "SELECT region, total FROM totals WHERE region = 'eu';"},
                )
                assert pulled.headers["content-type"] == "application/vnd.ksqlapi.delimited.v1"
                header, *pulled_rows = [json.loads(line) for line in pulled.text.splitlines()]
                assert header["columnNames"] == ["REGION", "TOTAL"]
                return pulled_rows

            assert _eventually(lambda: (rows := pull()) == [["eu", 30.0]] and rows, "pulled")
            on_stream = api.post("/query-stream", json={"sql": "SELECT * FROM orders;"})
            assert on_stream.status_code == 400
            assert on_stream.json()["message"].startswith("Pull queries read tables;")

            with api.stream(
                "POST",
                "/query",
                json={
                    "ksql": "SELECT id, name FROM orders WHERE region = 'eu' EMIT CHANGES LIMIT 2;",
                    "streamsProperties": {"auto.offset.reset": "earliest"},
                },
            ) as pushed:
                pushed_rows = json.loads(pushed.read())  # the chunks make one JSON array
            assert pushed_rows[0]["header"]["schema"] == "`ID` INTEGER KEY, `NAME` STRING"
            assert sorted(r["row"]["columns"] for r in pushed_rows[1:-1]) == [
                [1, "ann"],
                [2, "bob"],
            ]
            assert pushed_rows[-1] == {"finalMessage": "Limit Reached"}
            unknown_push = api.post("/close-query", json={"queryId": "transient_X_1"})
            assert unknown_push.status_code == 400
            assert unknown_push.json()["message"] == "No query with id transient_X_1"
    finally:
        server.stop()

    produce(bootstrap, orders, [_order(4, "dee", 100.0, "us")])
    restarted = SqlServer(settings, spark=lambda: spark)
    restarted.start()
    try:
        with httpx.Client(base_url=restarted.url, timeout=60) as api:
            queries = _ksql(api, "SHOW QUERIES;")[0]["queries"]
            assert big_query in {q["id"] for q in queries}
            assert _eventually(
                lambda: (
                    (found := _values(bootstrap, "BIG"))
                    == [*expected_big, (struct.pack(">i", 4), {"WHO": "DEE", "DOUBLED": 200.0})]
                    and found
                ),
                "the restarted query's output",
            )
            assert _eventually(
                lambda: (t := latest_totals())[b"us"] == {"N": 2, "TOTAL": 140.0} and t,
                "the restarted aggregate",
            )
            terminated = _ksql(api, f"TERMINATE {big_query};")[0]
            assert terminated["commandStatus"]["message"] == "Query terminated."
    finally:
        restarted.stop()


def test_a_stream_table_join_meets_the_table_as_it_is_now(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap
    service = unique_topic("sql-join")
    settings = sql_settings(bootstrap, service, tmp_path / "state")
    customers, payments = unique_topic("sql-customers"), unique_topic("sql-payments")
    server = SqlServer(settings, spark=lambda: spark)
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as api:
            _ksql(
                api,
                "CREATE TABLE customers (id INT PRIMARY KEY, name STRING) "
                f"WITH (KAFKA_TOPIC='{customers}', VALUE_FORMAT='JSON', PARTITIONS=1);"
                "CREATE STREAM payments (pid STRING KEY, customer INT, amount DOUBLE) "
                f"WITH (KAFKA_TOPIC='{payments}', KEY_FORMAT='KAFKA', VALUE_FORMAT='JSON', "
                "PARTITIONS=1);"
                "INSERT INTO customers (id, name) VALUES (1, 'ann');"
                "INSERT INTO payments (pid, customer, amount) VALUES ('p1', 1, 5.0);"
                "INSERT INTO payments (pid, customer, amount) VALUES ('p2', 9, 6.0);",
            )
            refused = _error(
                api,
                "CREATE STREAM bad AS SELECT * FROM customers c "
                "JOIN payments p ON c.id = p.customer;",
            )
            assert refused["message"].startswith("Only stream-table joins")
            joined = _ksql(
                api,
                "CREATE STREAM enriched AS SELECT p.customer, p.amount, c.name FROM payments p "
                "LEFT JOIN customers c ON p.customer = c.id EMIT CHANGES;",
                **EARLIEST,
            )[0]
            assert joined["commandStatus"]["queryId"].startswith("CSAS_ENRICHED_")
            first = [
                (struct.pack(">i", 1), {"AMOUNT": 5.0, "NAME": "ann"}),
                (struct.pack(">i", 9), {"AMOUNT": 6.0, "NAME": None}),
            ]
            assert _eventually(
                lambda: (found := _values(bootstrap, "ENRICHED")) == first and found,
                "joined records",
            )
            _ksql(
                api,
                "INSERT INTO customers (id, name) VALUES (1, 'anna');"
                "INSERT INTO payments (pid, customer, amount) VALUES ('p3', 1, 7.0);",
            )
            assert _eventually(
                lambda: (
                    (found := _values(bootstrap, "ENRICHED"))
                    == [*first, (struct.pack(">i", 1), {"AMOUNT": 7.0, "NAME": "anna"})]
                    and found
                ),
                "a record joined with the table's new row",
            )
            # the same join as a push query: each record joined with the table's row now
            push = {
                "sql": "SELECT p.pid, c.name FROM payments p LEFT JOIN customers c "
                "ON p.customer = c.id EMIT CHANGES LIMIT 3;",
                "properties": {"auto.offset.reset": "earliest"},
            }
            with api.stream("POST", "/query-stream", json=push) as pushed:
                header, *rows = [json.loads(line) for line in pushed.read().splitlines()]
            assert header["columnNames"] == ["PID", "NAME"]
            assert sorted(rows) == [["p1", "anna"], ["p2", None], ["p3", "anna"]]
    finally:
        server.stop()


def test_a_failed_query_starts_again_from_its_checkpoint(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    """Its source topic deleted, a query fails (ERROR); the topic made again with the same
    first record, it starts again on its own from its checkpoint (offset 1): the record after
    it is copied, the first is not copied twice."""
    bootstrap, readings = broker.bootstrap, unique_topic("sql-readings")
    settings = sql_settings(bootstrap, unique_topic("sql-retry"), tmp_path)
    server = SqlServer(settings, spark=lambda: spark)
    server.start()
    client = admin(bootstrap)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as api:
            _ksql(
                api,
                "CREATE STREAM readings (id STRING KEY, v INT) "
                f"WITH (KAFKA_TOPIC='{readings}', VALUE_FORMAT='JSON', PARTITIONS=1);"
                "INSERT INTO readings (id, v) VALUES ('a', 1);",
            )
            query = _ksql(api, "CREATE STREAM copied AS SELECT id, v FROM readings;", **EARLIEST)
            query_id = query[0]["commandStatus"]["queryId"]
            _eventually(lambda: _values(bootstrap, "COPIED"), "the first row copied")
            client.delete_topics([readings])[readings].result(15)
            _eventually(lambda: query_states(api)[query_id] == "ERROR", "a failed query")
            client.create_topics([NewTopic(readings, 1, 1)])[readings].result(15)
            _ksql(
                api,
                "INSERT INTO readings (id, v) VALUES ('a', 1);"
                "INSERT INTO readings (id, v) VALUES ('b', 2);",
            )
            _eventually(lambda: query_states(api)[query_id] == "RUNNING", "the query again")
            both = [(b"a", {"V": 1}), (b"b", {"V": 2})]
            assert _eventually(
                lambda: (found := _values(bootstrap, "COPIED")) == both and found,
                "the row written while it was down",
            )
    finally:
        server.stop()
