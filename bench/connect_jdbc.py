"""The JDBC source connector next to psycopg's ``COPY`` reading the same PostgreSQL table.

Run: ``.venv/bin/python -m bench.connect_jdbc [--quick]``. Prints one table: rows, the
connector's rows/s, each baseline's rows/s and the connector's ratio to it (the goal: at least
0.5x), and the connector's start-up.

How it measures:

- One PostgreSQL (``strom.testing.postgres``), one ``strom server`` child process, one Connect
  worker in this process running its connectors in one SparkSession on ``local[2]``.
- A table of ``id serial, name text, amount numeric(10,2), at timestamp`` filled by
  ``generate_series`` (rows of about 60 bytes of CSV).
- The baselines: psycopg 3 ``COPY (SELECT * FROM table) TO STDOUT (FORMAT csv)``, every chunk
  read and its bytes counted (what the connector's executors do before Arrow parses them); and
  the hand-written pipeline, that COPY with each CSV line produced as a record by a
  confluent-kafka producer (``linger.ms=5``, flushed at the end). Each the best of ``RUNS``.
- The connector: ``JdbcSourceConnector`` (``mode=incrementing``, JsonConverter with schemas)
  created over the REST API; its figure is the rows divided by the time from its first record
  in the topic to its last (the topic's high watermark reaching the row count, polled every
  50 ms); the time from creation to the first record is its start-up (the Spark query, the
  first plan), printed apart. One connector per run, a new topic each, the best of ``RUNS``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator, Sequence

import httpx
import psycopg
from confluent_kafka import Producer

from bench.connector_run import time_connector
from bench.spark_run import spark_and_scratch
from strom.testing import Broker
from strom.testing.connect import Connect
from strom.testing.postgres import Postgres

RUNS = 2
GOAL = 0.5
FULL, QUICK = 1_000_000, 200_000
TIMEOUT_S = 600


def fill(postgres: Postgres, rows: int) -> None:
    with psycopg.connect(postgres.conninfo, autocommit=True) as db:
        db.execute(
            "CREATE TABLE bench (id serial PRIMARY KEY, name text NOT NULL,"
            " amount numeric(10,2), at timestamp)"
        )
        db.execute(
            "INSERT INTO bench (name, amount, at) SELECT 'customer ' || n, n / 100.0,"
            " timestamp '2024-01-01' + n * interval '1 second' FROM generate_series(1, %s) n",
            (rows,),
        )
        db.execute("VACUUM ANALYZE bench")


def copy_baseline(postgres: Postgres, rows: int) -> float:
    """Rows per second of one COPY of the table."""
    with psycopg.connect(postgres.conninfo) as db, db.cursor() as cursor:
        started = time.perf_counter()
        size = 0
        with cursor.copy("COPY (SELECT * FROM bench) TO STDOUT (FORMAT csv)") as copy:
            for chunk in copy:
                size += len(chunk)
        elapsed = time.perf_counter() - started
    assert size > 0
    return rows / elapsed


def copy_and_produce(postgres: Postgres, bootstrap: str, rows: int, run: int) -> float:
    """Rows per second of the table copied into a topic by psycopg and confluent-kafka."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    topic = f"bench-direct-{run}"
    with psycopg.connect(postgres.conninfo) as db, db.cursor() as cursor:
        started = time.perf_counter()
        with cursor.copy("COPY (SELECT * FROM bench) TO STDOUT (FORMAT csv)") as copy:
            for row in _lines(copy):
                while True:
                    try:
                        producer.produce(topic, row)
                        break
                    except BufferError:
                        producer.poll(0.01)
        assert producer.flush(120) == 0
        return rows / (time.perf_counter() - started)


def _lines(copy: psycopg.Copy) -> Iterator[bytes]:
    left = b""
    for chunk in copy:
        lines = (left + bytes(chunk)).split(b"\n")
        left = lines.pop()
        yield from lines


def connector_run(
    api: httpx.Client, postgres: Postgres, bootstrap: str, run: int, rows: int
) -> tuple[float, float]:
    """(rows per second from the first record to the last, start-up seconds)."""
    prefix = f"bench{run}-"
    config = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "connection.url": postgres.url,
        "connection.user": "postgres",
        "table.whitelist": "bench",
        "mode": "incrementing",
        "incrementing.column.name": "id",
        "topic.prefix": prefix,
        "poll.interval.ms": "200",
        "tasks.max": "2",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    }
    return time_connector(
        api,
        f"bench-{run}",
        config,
        bootstrap=bootstrap,
        topic=f"{prefix}bench",
        partitions=1,
        count=rows,
        timeout_s=TIMEOUT_S,
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK:,} rows, not {FULL:,}")
    args = parser.parse_args(argv)
    rows = QUICK if args.quick else FULL
    started = time.monotonic()
    with (
        spark_and_scratch() as (spark, data),
        Postgres.start() as postgres,
        Broker(process=True, data_dir=data) as broker,
    ):
        fill(postgres, rows)
        baseline = max(copy_baseline(postgres, rows) for _ in range(RUNS))
        bootstrap = broker.bootstrap_servers
        direct = max(copy_and_produce(postgres, bootstrap, rows, n) for n in range(RUNS))
        with (
            Connect(bootstrap, spark=lambda: spark) as worker,
            httpx.Client(base_url=worker.url, timeout=60) as api,
        ):
            runs = [connector_run(api, postgres, bootstrap, n, rows) for n in range(RUNS)]
    best, startup = max(runs)
    mode = "quick" if args.quick else "full"
    print(f"\n{mode} run, {time.monotonic() - started:.0f} s, Python {sys.version.split()[0]}")
    print(
        "| rows | JDBC source rows/s | COPY rows/s | ratio | COPY + producer rows/s | ratio"
        " | start-up s |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {rows:,} | {best:,.0f} | {baseline:,.0f} | {best / baseline:.2f} | {direct:,.0f} | "
        f"{best / direct:.2f} | {startup:.1f} |"
    )
    print(f"goal: >= {GOAL}x of the baselines")


if __name__ == "__main__":
    main()
