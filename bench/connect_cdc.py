"""Change data capture latency: from a committed ``UPDATE`` in PostgreSQL to its event in the
topic, at a steady rate of changes.

Run: ``.venv/bin/python -m bench.connect_cdc [--rate 1000] [--seconds 30] [--poll-ms 100]``.
Prints one table: the changes made and seen, the rate reached, and the latency's p50, p99 and
maximum (the goal: p99 < 1 s at 1,000 changes/s).

How it measures:

- One PostgreSQL (``strom.testing.postgres``, ``wal_level=logical``), one ``strom server``
  child process, one Connect worker in this process on ``local[2]``; Debezium's
  ``PostgresConnector`` (``pgoutput``, ``snapshot.mode=never``) on a table of 1,000 rows.
- A writer thread commits one ``UPDATE`` per change, paced to ``--rate`` per second, each
  setting ``changed_ns`` to the wall clock just before its commit; a consumer
  (confluent-kafka) reads the topic and takes, for each update event, its arrival time minus
  ``after.changed_ns``. Both clocks are this machine's one clock.
- The clock starts once a first change's event is in the topic (the Spark query is running);
  the first 3 s of changes after that are a warm-up, left out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import httpx
import psycopg
from confluent_kafka import Consumer

from bench.spark_run import spark_and_scratch
from strom.testing import Broker
from strom.testing.connect import Connect
from strom.testing.postgres import Postgres

GOAL_P99_S = 1.0
ROWS = 1000
WARM_UP_S = 3.0


def _writer(postgres: Postgres, rate: float, seconds: float, made: list[int]) -> None:
    """``rate`` updates per second for ``seconds``, one commit each; their count in ``made``."""
    with psycopg.connect(postgres.conninfo, autocommit=True) as db:
        started = time.monotonic()
        n = 0
        while (elapsed := time.monotonic() - started) < seconds:
            ahead = n / rate - elapsed
            if ahead > 0:
                time.sleep(ahead)
            db.execute(
                "UPDATE bench_cdc SET changed_ns = %s WHERE id = %s", (time.time_ns(), n % ROWS)
            )
            n += 1
        made.append(n)


def _first_event(postgres: Postgres, consumer: Consumer) -> None:
    """Change one row every second until its event is in the topic (the query is running)."""
    deadline = time.monotonic() + 180
    with psycopg.connect(postgres.conninfo, autocommit=True) as db:
        while time.monotonic() < deadline:
            db.execute("UPDATE bench_cdc SET changed_ns = 0 WHERE id = 0")
            until = time.monotonic() + 1
            while time.monotonic() < until:
                message: Any = consumer.poll(0.1)
                if message is not None and message.error() is None and message.value():
                    return
    raise SystemExit("no change event within 180 s of the connector's creation")


def _percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run(rate: float, seconds: float, poll_ms: int) -> dict[str, Any]:
    with (
        spark_and_scratch() as (spark, data),
        Postgres.start() as postgres,
        Broker(process=True, data_dir=data) as broker,
    ):
        with psycopg.connect(postgres.conninfo, autocommit=True) as db:
            db.execute("CREATE TABLE bench_cdc (id int PRIMARY KEY, changed_ns bigint)")
            db.execute("INSERT INTO bench_cdc SELECT n, 0 FROM generate_series(0, %s) n", (ROWS,))
        topic = "cdc.public.bench_cdc"
        config = {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": postgres.host,
            "database.port": str(postgres.port),
            "database.user": "postgres",
            "database.password": "",
            "database.dbname": postgres.database,
            "topic.prefix": "cdc",
            "table.include.list": "public.bench_cdc",
            "snapshot.mode": "never",
            "poll.interval.ms": str(poll_ms),
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
        }
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "bench-cdc",
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 10,
            }
        )
        consumer.subscribe([topic])
        with (
            Connect(broker.bootstrap_servers, spark=lambda: spark) as worker,
            httpx.Client(base_url=worker.url, timeout=60) as api,
        ):
            answer = api.post("/connectors", json={"name": "cdc", "config": config})
            assert answer.status_code == 201, answer.text
            _first_event(postgres, consumer)  # the query runs before the clock does
            made: list[int] = []
            writer = threading.Thread(target=_writer, args=(postgres, rate, seconds, made))
            started_ns = time.time_ns()
            writer.start()
            latencies: list[float] = []
            seen = 0
            deadline = time.monotonic() + seconds + 30
            while time.monotonic() < deadline and (writer.is_alive() or seen < made[0]):
                message: Any = consumer.poll(0.1)
                if message is None or message.error() is not None or message.value() is None:
                    continue
                arrived = time.time_ns()
                event = json.loads(message.value())
                if event.get("op") != "u":
                    continue
                seen += 1
                changed = int(event["after"]["changed_ns"])
                if changed - started_ns > WARM_UP_S * 1e9:
                    latencies.append((arrived - changed) / 1e9)
            writer.join()
            consumer.close()
            batches = [
                progress
                for query in spark.streams.active
                for progress in query.recentProgress
                if progress["numInputRows"]
            ]
    return {
        "made": made[0],
        "seen": seen,
        "latencies": latencies,
        "seconds": seconds,
        "batches": batches,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000, help="changes per second")
    parser.add_argument("--seconds", type=float, default=30, help="how long changes are made")
    parser.add_argument(
        "--poll-ms", type=int, default=500, help="the connector's poll.interval.ms (Debezium's 500)"
    )
    args = parser.parse_args(argv)
    found = run(args.rate, args.seconds, args.poll_ms)
    latencies = found["latencies"]
    if not latencies:
        raise SystemExit(f"no update event seen ({found['made']} changes made)")
    print(f"\nPython {sys.version.split()[0]}, poll.interval.ms {args.poll_ms}")
    print("| changes made | events seen | changes/s | p50 s | p99 s | max s |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {found['made']:,} | {found['seen']:,} | {found['made'] / found['seconds']:,.0f} |"
        f" {statistics.median(latencies):.3f} | {_percentile(latencies, 0.99):.3f} |"
        f" {max(latencies):.3f} |"
    )
    print(f"goal: p99 < {GOAL_P99_S} s at 1,000 changes/s")
    batches = found["batches"]
    if batches:  # where a micro-batch's time goes (Spark's progress, the last 100 batches)
        parts = ("triggerExecution", "latestOffset", "queryPlanning", "addBatch", "commitOffsets")
        means = {
            part: statistics.mean(b["durationMs"].get(part, 0) for b in batches) for part in parts
        }
        rows = statistics.mean(b["numInputRows"] for b in batches)
        shown = ", ".join(f"{part} {ms:.0f}" for part, ms in means.items())
        print(f"micro-batches: {len(batches)} with changes, {rows:.0f} rows each; ms: {shown}")


if __name__ == "__main__":
    main()
