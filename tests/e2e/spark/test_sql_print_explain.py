"""PRINT and EXPLAIN over ksqlDB's REST API (httpx, as ksqlDB's clients) on a real `strom
server`: a topic's records as ksqlDB prints them on `/query` and `/query-stream` (FROM
BEGINNING, INTERVAL, LIMIT), and the `queryDescription` of a statement and of a running query,
with Spark's plans where ksqlDB shows its topology."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import unique_topic
from e2e.spark.sql_api import eventually, ksql, serving

pytestmark = pytest.mark.timeout(300)  # a Spark query: slow when loaded


@pytest.fixture
def api(spark: SparkSession, broker: StromServer, tmp_path: Path) -> Iterator[httpx.Client]:
    with serving(spark, broker.bootstrap, "sql-print", tmp_path / "state") as client:
        yield client


def _orders(api: httpx.Client) -> str:
    topic = unique_topic("sql_print_orders").replace("-", "_")  # a name PRINT can take bare
    ksql(
        api,
        "CREATE STREAM orders (id STRING KEY, item STRING, amount DOUBLE) "
        f"WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON', PARTITIONS=1);"
        "INSERT INTO orders (id, item, amount) VALUES ('o1', 'apple', 3.5);"
        "INSERT INTO orders (id, item, amount) VALUES ('o2', 'pear', 7.5);"
        "INSERT INTO orders (id, item, amount) VALUES ('o3', 'fig', 1.0);",
    )
    return topic


def _printed(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return answer.text.splitlines()


def test_print_shows_a_topics_records_as_ksqldb_does(api: httpx.Client) -> None:
    topic = _orders(api)
    lines = _printed(api.post("/query", json={"ksql": f"PRINT '{topic}' FROM BEGINNING LIMIT 2;"}))
    assert lines[:2] == ["Key format: KAFKA_STRING", "Value format: JSON"]
    assert [line.split(", ")[1] for line in lines[2:]] == ["key: o1", "key: o2"]
    assert lines[2].startswith("rowtime: ") and lines[2].endswith(", partition: 0")
    assert json.loads(lines[2].split("value: ")[1].rsplit(", partition", 1)[0]) == {
        "ITEM": "apple",
        "AMOUNT": 3.5,
    }

    every_other = f"PRINT {topic.upper()} FROM BEGINNING INTERVAL 2 LIMIT 2;"  # any case
    lines = _printed(api.post("/query-stream", json={"sql": every_other}))
    assert [line.split(", ")[1] for line in lines[2:]] == ["key: o1", "key: o3"]

    missing = api.post("/query", json={"ksql": "PRINT 'nope-topic';"})
    assert missing.status_code == 400
    assert missing.json()["message"] == (
        "Could not find topic 'nope-topic', or the KSQL user does not have permissions to list "
        "the topic. Topic names are case-sensitive."
    )


def test_explain_describes_a_statement_and_a_running_query(api: httpx.Client) -> None:
    _orders(api)
    big = unique_topic("sql-print-big")
    statement = (
        f"CREATE STREAM big WITH (KAFKA_TOPIC='{big}') AS SELECT id, UCASE(item) AS what "
        "FROM orders WHERE amount > 2 EMIT CHANGES;"
    )
    (planned,) = ksql(api, f"EXPLAIN {statement}")
    assert planned["@type"] == "queryDescription"
    description = planned["queryDescription"]
    assert description["statementText"] == statement
    assert (description["sources"], description["sinks"], description["state"]) == (
        ["ORDERS"],
        ["BIG"],
        None,
    )
    assert [(f["name"], f["schema"]["type"], f.get("type")) for f in description["fields"]] == [
        ("ID", "STRING", "KEY"),
        ("WHAT", "STRING", None),
    ]
    assert "== Physical Plan ==" in description["executionPlan"]
    assert "Filter" in description["topology"]
    (push,) = ksql(api, "EXPLAIN SELECT item FROM orders EMIT CHANGES;")
    assert (push["queryDescription"]["queryType"], push["queryDescription"]["sinks"]) == (
        "PUSH",
        [],
    )

    created = ksql(api, statement, **{"ksql.streams.auto.offset.reset": "earliest"})
    query_id = created[0]["commandStatus"]["queryId"]
    (running,) = ksql(api, f"EXPLAIN {query_id};")
    description = running["queryDescription"]
    assert description["id"] == query_id
    assert description["statementText"] == statement
    assert (description["sources"], description["sinks"]) == (["ORDERS"], ["BIG"])
    assert description["queryType"] == "PERSISTENT"
    assert eventually(
        lambda: ksql(api, f"EXPLAIN {query_id};")[0]["queryDescription"]["state"] == "RUNNING",
        "the query running",
    )

    unknown = api.post("/ksql", json={"ksql": "EXPLAIN CSAS_NOPE_1;"})
    assert unknown.status_code == 400
    assert unknown.json()["message"] == (
        "Query with id:CSAS_NOPE_1 does not exist, use SHOW QUERIES to view the full set of "
        "running queries."
    )
    ksql(api, f"TERMINATE {query_id};")
