"""The JDBC sink connector next to a hand-written consumer upserting the same records into
PostgreSQL.

Run: ``.venv/bin/python -m bench.connect_jdbc_sink [--quick]``. Prints one table: records, the
connector's rows/s while running and from its creation, each with its ratio to the baseline's
rows/s (the goal: at least 0.5x).

How it measures:

- One PostgreSQL (``strom.testing.postgres``), one ``strom server`` child process, one Connect
  worker in this process running its connectors in one SparkSession on ``local[2]``.
- One topic of records in JsonConverter's envelope (a struct of ``id int32``, ``name string``,
  ``amount double``, about 200 bytes each with the schema), written once by confluent-kafka.
- The baseline: a confluent-kafka consumer reading the topic in batches of 10,000, each value
  parsed with ``json.loads`` and upserted with psycopg's ``executemany`` (``INSERT ... ON
  CONFLICT (id) DO UPDATE``, pipelined) into a table with ``id`` as its primary key, committed
  per batch. The best of ``RUNS``.
- The connector: ``JdbcSinkConnector`` (``insert.mode=upsert``, ``pk.mode=record_value``,
  ``pk.fields=id``, ``auto.create``) created over the REST API. Two figures: the rows over the
  summed duration of its Spark query's micro-batches that had records (its rate once running;
  Spark's progress reports), and the rows over the time from its creation to its last row in
  the table (``count(*)`` polled every 100 ms: with the query's start). One connector per run,
  a new table each, the best of ``RUNS``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

import httpx
import psycopg
from confluent_kafka import Consumer, Producer
from pyspark.sql import SparkSession

from bench.spark_run import spark_and_scratch
from strom.testing import Broker
from strom.testing.connect import Connect
from strom.testing.postgres import Postgres

RUNS = 2
GOAL = 0.5
FULL, QUICK = 1_000_000, 200_000
TOPIC = "jdbc-sink-bench"
TIMEOUT_S = 900
SCHEMA = {
    "type": "struct",
    "fields": [
        {"field": "id", "type": "int32", "optional": False},
        {"field": "name", "type": "string", "optional": False},
        {"field": "amount", "type": "double", "optional": True},
    ],
    "optional": False,
}


def fill(bootstrap: str, records: int) -> None:
    """``records`` envelopes into ``TOPIC``."""
    head = b'{"schema":' + json.dumps(SCHEMA, separators=(",", ":")).encode() + b',"payload":'
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for n in range(records):
        payload = b'{"id":%d,"name":"customer %d","amount":%d.25}}' % (n, n, n % 1000)
        while True:
            try:
                producer.produce(TOPIC, head + payload)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(120) == 0


def baseline(postgres: Postgres, bootstrap: str, records: int, run: int) -> float:
    """Rows per second of the topic upserted by a consumer and psycopg's executemany."""
    table = f"direct_{run}"
    upsert = (
        f"INSERT INTO {table} (id, name, amount) VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE"
        " SET name = EXCLUDED.name, amount = EXCLUDED.amount"
    )
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-direct-{run}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    with psycopg.connect(postgres.conninfo) as db:
        db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, name text, amount double precision)")
        db.commit()
        consumer.subscribe([TOPIC])
        started, done = time.perf_counter(), 0
        try:
            while done < records:
                messages = consumer.consume(10_000, timeout=1)
                rows = []
                for message in messages:
                    if message.error() is None:
                        value = json.loads(message.value() or b"null")["payload"]
                        rows.append((value["id"], value["name"], value["amount"]))
                with db.cursor() as cursor:
                    cursor.executemany(upsert, rows)
                db.commit()
                if rows:
                    consumer.commit(asynchronous=False)
                done += len(rows)
                assert time.perf_counter() - started < TIMEOUT_S, f"{done} of {records}"
        finally:
            consumer.close()
        return records / (time.perf_counter() - started)


def _count(postgres: Postgres, table: str) -> int:
    with psycopg.connect(postgres.conninfo, autocommit=True) as db:
        if db.execute("SELECT to_regclass(%s)", (table,)).fetchone() == (None,):
            return 0
        found = db.execute(f"SELECT count(*) FROM {table}").fetchone()
        return int(found[0]) if found else 0


def _batches(spark: SparkSession, table: str) -> list[dict[str, Any]]:
    """The progress reports of the connector's micro-batches that had records."""
    return [
        progress
        for query in spark.streams.active
        if query.name == f"connect-{table}"
        for progress in query.recentProgress
        if progress["numInputRows"]
    ]


def connector_run(
    spark: SparkSession, api: httpx.Client, postgres: Postgres, records: int, run: int
) -> tuple[float, float]:
    """(rows per second of the query's micro-batches with records, rows per second from the
    connector's creation to its last row)."""
    table = f"sink_{run}"
    config = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
        "connection.url": postgres.url,
        "connection.user": "postgres",
        "topics": TOPIC,
        "table.name.format": table,
        "insert.mode": "upsert",
        "pk.mode": "record_value",
        "pk.fields": "id",
        "auto.create": "true",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    }
    created = time.perf_counter()
    answer = api.post("/connectors", json={"name": table, "config": config})
    assert answer.status_code == 201, answer.text
    try:
        while (rows := _count(postgres, table)) < records:
            assert time.perf_counter() - created < TIMEOUT_S, f"{rows} of {records} rows"
            time.sleep(0.1)
        done = time.perf_counter()
        batches = _batches(spark, table)
        while sum(b["numInputRows"] for b in batches) < records:
            assert time.perf_counter() - done < 60, "no progress report of the last batch"
            time.sleep(0.1)  # the database has the rows before Spark reports the batch
            batches = _batches(spark, table)
    finally:
        api.delete(f"/connectors/{table}")
    busy_s = sum(b["durationMs"]["triggerExecution"] for b in batches) / 1000
    return records / max(busy_s, 1e-3), records / (done - created)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK:,} records, not {FULL:,}")
    args = parser.parse_args(argv)
    records = QUICK if args.quick else FULL
    started = time.monotonic()
    with (
        spark_and_scratch() as (spark, data),
        Postgres.start() as postgres,
        Broker(process=True, data_dir=data) as broker,
    ):
        bootstrap = broker.bootstrap_servers
        fill(bootstrap, records)
        direct = max(baseline(postgres, bootstrap, records, n) for n in range(RUNS))
        with (
            Connect(bootstrap, spark=lambda: spark) as worker,
            httpx.Client(base_url=worker.url, timeout=60) as api,
        ):
            runs = [connector_run(spark, api, postgres, records, n) for n in range(RUNS)]
    best, whole = max(runs)
    mode = "quick" if args.quick else "full"
    print(f"\n{mode} run, {time.monotonic() - started:.0f} s, Python {sys.version.split()[0]}")
    print(
        "| records | JDBC sink rows/s (its micro-batches) | ratio | with start-up rows/s | ratio"
        " | consumer + executemany rows/s |"
    )
    print("|---|---|---|---|---|---|")
    print(
        f"| {records:,} | {best:,.0f} | {best / direct:.2f} | {whole:,.0f} | {whole / direct:.2f}"
        f" | {direct:,.0f} |"
    )
    print(f"goal: >= {GOAL}x of the baseline")


if __name__ == "__main__":
    main()
