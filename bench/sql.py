"""strom's SQL engine measured: persistent queries next to the same query in PySpark's DataFrame
API, pull query latency, and a push query's delay.

Run: ``.venv/bin/python -m bench.sql [--quick]``. Prints three tables (issue 28, "Measured"):

- Persistent queries: a filter-and-project ``CREATE STREAM AS SELECT`` and a windowed
  ``CREATE TABLE AS SELECT ... GROUP BY``, records/s, beside the same query written directly
  with PySpark's DataFrame API on the ``strom`` source and sink (``strom.spark.write_stream``,
  exactly-once, as the engine writes), in the same SparkSession of the same run (goal: 0.9x).
  Both read the same topic of ``RECORDS`` JSON orders from the earliest offset; a figure is the
  records over the time of the micro-batches that read them (``durationMs.triggerExecution`` of
  the query's progress), the best of ``RUNS`` queries (each a new CSAS/CTAS, or a new
  checkpoint for the DataFrame query); the query's start-up is left out and printed apart.
- Pull queries: ``SELECT * FROM users WHERE id = '...'`` on ``POST /query-stream`` against a
  ``CREATE SOURCE TABLE`` of ``KEYS`` keys, sent open-loop at ``PULL_RATE`` queries/s from one
  HTTP connection (keep-alive, as ksqlDB's clients); a latency runs from the moment its query
  was due to its last byte, so a slow answer also delays the ones behind it (goal: p99 < 20 ms).
- Push query: ``SELECT ... EMIT CHANGES`` on ``POST /query-stream``; records produced at
  ``PUSH_RATE``/s, each carrying its send time; a delay is from that send to its row read by
  the client (same process, same clock).

The SQL server runs in this process (``SqlServer``, its REST API on a free port) with its
queries in the bench's SparkSession (``local[PARTITIONS]``); the broker is a ``strom server``
child process.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx
from confluent_kafka import Producer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from bench.spark_run import spark_and_scratch
from strom.cli.perf import ensure_topic
from strom.spark.foreach_batch import write_stream
from strom.sql.retries import Backoff
from strom.sql.server import SqlServer
from strom.sql.settings import SqlSettings
from strom.testing import Broker
from strom.web.server import Listener

PARTITIONS = 2
RUNS = 2
GOAL = 0.9
PULL_GOAL_MS = 20.0
SHOPS = 50
ORDER_DDL = "ID BIGINT, SHOP STRING, CENTS BIGINT, NOTE STRING"


@dataclass(frozen=True)
class Sizes:
    records: int
    keys: int
    pull_s: float
    push_s: float


FULL = Sizes(records=500_000, keys=100_000, pull_s=30, push_s=30)
QUICK = Sizes(records=100_000, keys=100_000, pull_s=10, push_s=10)
PULL_RATE = 200
PUSH_RATE = 1000


@dataclass(frozen=True)
class Throughput:
    name: str
    sql_rps: float
    frame_rps: float
    sql_startup_s: float
    frame_startup_s: float

    @property
    def ratio(self) -> float:
        return self.sql_rps / self.frame_rps


@dataclass(frozen=True)
class Latency:
    name: str
    rate: float
    count: int
    p50_ms: float
    p99_ms: float
    max_ms: float


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency(name: str, rate: float, samples_ms: Sequence[float]) -> Latency:
    return Latency(
        name,
        rate,
        len(samples_ms),
        statistics.median(samples_ms),
        percentile(samples_ms, 0.99),
        max(samples_ms),
    )


def produce(bootstrap: str, topic: str, records: Sequence[tuple[bytes | None, bytes]]) -> None:
    ensure_topic(topic=topic, partitions=PARTITIONS, bootstrap_server=bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for key, value in records:
        while True:
            try:
                producer.produce(topic, value, key)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60):
        raise RuntimeError(f"{topic}: records not delivered")


def orders(count: int) -> list[tuple[bytes | None, bytes]]:
    rng = random.Random(7)
    return [
        (
            None,
            json.dumps(
                {
                    "ID": n,
                    "SHOP": f"shop-{rng.randrange(SHOPS)}",
                    "CENTS": rng.randrange(100_000),
                    "NOTE": "".join(rng.choices("abcdefghij", k=40)),
                }
            ).encode(),
        )
        for n in range(count)
    ]


# -- persistent queries -------------------------------------------------------------------------


def finish(query: StreamingQuery, records: int, started: float) -> tuple[float, float]:
    """Records/s of the query's micro-batches once they have read `records`, and its start-up
    (wall time to the end less those batches); the query is stopped."""
    deadline = time.monotonic() + 600
    while True:
        batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
        read = sum(p["numInputRows"] for p in batches)
        if read >= records:
            break
        if query.exception() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"query read {read} of {records}: {query.exception()}")
        time.sleep(0.2)
    wall = time.monotonic() - started
    query.stop()
    busy = sum(p["durationMs"]["triggerExecution"] for p in batches) / 1000
    return read / busy, wall - busy


def ksql(api: httpx.Client, text: str) -> object:
    answer = api.post(
        "/ksql", json={"ksql": text, "streamsProperties": {"auto.offset.reset": "earliest"}}
    )
    if answer.status_code != 200:
        raise RuntimeError(f"{text}: {answer.text}")
    return answer.json()


def run_sql(
    spark: SparkSession, api: httpx.Client, statement: str, records: int
) -> tuple[float, float]:
    """One CSAS/CTAS of the engine, measured; its StreamingQuery is the one it added."""
    before = {q.id for q in spark.streams.active}
    started = time.monotonic()
    ksql(api, statement)
    added = [q for q in spark.streams.active if q.id not in before]
    if len(added) != 1:
        raise RuntimeError(f"{statement}: {len(added)} new Spark queries")
    return finish(added[0], records, started)


def run_frame(
    spark: SparkSession,
    bootstrap: str,
    source: str,
    build: Callable[[DataFrame], DataFrame],
    *,
    topic: str,
    mode: str,
    records: int,
) -> tuple[float, float]:
    """The DataFrame API version: the same source, `build`'s key/value columns to `topic`."""
    checkpoint = tempfile.mkdtemp(prefix="strom-bench-sql-cp-")
    try:
        started = time.monotonic()
        raw = (
            spark.readStream.format("strom")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", source)
            .option("startingOffsets", "earliest")
            .load()
        )
        query = write_stream(
            build(raw),
            checkpoint=checkpoint,
            topic=topic,
            output_mode=mode,
            exactly_once=True,
            kafka_bootstrap_servers=bootstrap,
            kafka_partitioner="murmur2_random",
        )
        return finish(query, records, started)
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)


def parsed(raw: DataFrame) -> DataFrame:
    row = F.from_json(F.col("value").cast("string"), ORDER_DDL).alias("o")
    return raw.select(row, "timestamp").select("o.*", "timestamp")


def filter_project(raw: DataFrame) -> DataFrame:
    rows = parsed(raw).where(F.col("CENTS") > 50_000)
    value = F.struct(F.col("ID"), F.col("SHOP"), (F.col("CENTS") * 2).alias("DOUBLED"))
    return rows.select(F.lit(None).cast("binary").alias("key"), F.to_json(value).alias("value"))


def windowed_count(raw: DataFrame) -> DataFrame:
    rows = parsed(raw).groupBy(F.window("timestamp", "1 minute"), "SHOP")
    totals = rows.agg(F.count(F.lit(1)).alias("N"), F.sum("CENTS").alias("TOTAL"))
    start = F.unix_millis(F.col("window.start"))
    key = F.concat(F.encode("SHOP", "UTF-8"), F.unhex(F.lpad(F.hex(start), 16, "0")))
    return totals.select(key.alias("key"), F.to_json(F.struct("N", "TOTAL")).alias("value"))


def persistent(
    spark: SparkSession, api: httpx.Client, bootstrap: str, records: int
) -> list[Throughput]:
    topic = "bench-sql-orders"
    produce(bootstrap, topic, orders(records))
    ksql(
        api,
        f"CREATE STREAM orders ({ORDER_DDL}) WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON');",
    )
    cases = [
        (
            "filter and project (CSAS)",
            "CREATE STREAM big{n} AS SELECT id, shop, cents * 2 AS doubled FROM orders "
            "WHERE cents > 50000 EMIT CHANGES;",
            filter_project,
            "append",
        ),
        (
            "tumbling window count and sum (CTAS)",
            "CREATE TABLE per_shop{n} AS SELECT shop, COUNT(*) AS n, SUM(cents) AS total "
            "FROM orders WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY shop EMIT CHANGES;",
            windowed_count,
            "update",
        ),
    ]
    rows = []
    for c, (name, statement, build, mode) in enumerate(cases):
        sql_runs, frame_runs = [], []
        for n in range(RUNS + 1):  # the first of each is a warm-up
            sql_runs.append(run_sql(spark, api, statement.format(n=f"_{c}_{n}"), records))
            frame_runs.append(
                run_frame(
                    spark,
                    bootstrap,
                    topic,
                    build,
                    topic=f"bench-sql-frame-{c}-{n}",
                    mode=mode,
                    records=records,
                )
            )
        sql, frame = max(sql_runs[1:]), max(frame_runs[1:])
        row = Throughput(name, sql[0], frame[0], sql[1], frame[1])
        print(
            f"  {name}: SQL {row.sql_rps:,.0f}/s, DataFrame {row.frame_rps:,.0f}/s, "
            f"ratio {row.ratio:.2f}",
            flush=True,
        )
        rows.append(row)
    return rows


# -- pull and push ------------------------------------------------------------------------------


def pull(api: httpx.Client, sql: str) -> list[object]:
    answer = api.post("/query-stream", json={"sql": sql})
    if answer.status_code != 200:
        raise RuntimeError(f"{sql}: {answer.text}")
    return [json.loads(line) for line in answer.text.splitlines()[1:]]


def pulls(api: httpx.Client, bootstrap: str, sizes: Sizes) -> list[Latency]:
    topic = "bench-sql-users"
    produce(
        bootstrap,
        topic,
        [
            (f"k{n}".encode(), json.dumps({"NAME": f"user {n}", "SCORE": n % 1000}).encode())
            for n in range(sizes.keys)
        ],
    )
    ksql(
        api,
        "CREATE SOURCE TABLE users (ID STRING PRIMARY KEY, NAME STRING, SCORE INT) "
        f"WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON');",
    )
    last = f"SELECT * FROM users WHERE id = 'k{sizes.keys - 1}';"
    deadline = time.monotonic() + 300
    while not pull(api, last):  # the table's state has read the whole topic
        if time.monotonic() > deadline:
            raise RuntimeError("the table's state never held the last key")
        time.sleep(0.5)
    rng = random.Random(11)
    count = int(sizes.pull_s * PULL_RATE)
    samples: list[float] = []
    service: list[float] = []  # from the request's send, not from when it was due
    start = time.perf_counter()
    for i in range(count):
        due = start + i / PULL_RATE
        wait = due - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        key = rng.randrange(sizes.keys)
        sent = time.perf_counter()
        rows = pull(api, f"SELECT * FROM users WHERE id = 'k{key}';")
        samples.append((time.perf_counter() - due) * 1000)
        service.append((time.perf_counter() - sent) * 1000)
        if len(rows) != 1:
            raise RuntimeError(f"k{key}: {rows}")
    rate = count / (time.perf_counter() - start)
    return [
        latency(f"pull, {sizes.keys:,} keys, from when due", rate, samples),
        latency(f"pull, {sizes.keys:,} keys, from its send", rate, service),
    ]


def pushes(api: httpx.Client, bootstrap: str, sizes: Sizes) -> Latency:
    topic = "bench-sql-ticks"
    ensure_topic(topic=topic, partitions=PARTITIONS, bootstrap_server=bootstrap)
    ksql(
        api,
        "CREATE STREAM ticks (N BIGINT, SENT_US BIGINT) "
        f"WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON');",
    )
    delays: dict[int, float] = {}
    stop = threading.Event()
    failure: list[BaseException] = []

    def read() -> None:
        body = {"sql": "SELECT n, sent_us FROM ticks EMIT CHANGES;", "properties": {}}
        try:
            with (
                httpx.Client(base_url=str(api.base_url), timeout=None) as client,
                client.stream("POST", "/query-stream", json=body) as answer,
            ):
                lines = answer.iter_lines()
                next(lines)  # the header
                for line in lines:
                    n, sent_us = json.loads(line)
                    delays[n] = time.time() * 1000 - sent_us / 1000
                    if stop.is_set():
                        return
        except BaseException as error:
            failure.append(error)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})

    def send(n: int) -> None:
        value = {"N": n, "SENT_US": time.time_ns() // 1000}
        producer.produce(topic, json.dumps(value).encode())
        producer.poll(0)

    n = -1  # warm-up records (negative) until the push query answers
    deadline = time.monotonic() + 300
    while not delays:
        if failure or time.monotonic() > deadline:
            raise RuntimeError(f"the push query answered nothing: {failure}")
        send(n)
        n -= 1
        time.sleep(0.2)
    time.sleep(2)
    count = int(sizes.push_s * PUSH_RATE)
    start = time.perf_counter()
    for i in range(count):
        wait = start + i / PUSH_RATE - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        send(i)
    rate = count / (time.perf_counter() - start)
    producer.flush(30)
    deadline = time.monotonic() + 60
    while sum(1 for k in delays if k >= 0) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    stop.set()
    got = [delays[i] for i in range(count) if i in delays]
    if len(got) != count:
        raise RuntimeError(f"push query delivered {len(got)} of {count} rows")
    return latency("push, produce to row", rate, got)


# -- output -------------------------------------------------------------------------------------


def render(throughput: Sequence[Throughput], latencies: Sequence[Latency], records: int) -> str:
    lines = [
        f"| query ({records:,} records) | SQL (records/s) | DataFrame API (records/s) | ratio "
        "| goal | start-up SQL / DataFrame (s) |",
        "|---|---|---|---|---|---|",
    ]
    for t in throughput:
        lines.append(
            f"| {t.name} | {t.sql_rps:,.0f} | {t.frame_rps:,.0f} | {t.ratio:.2f} | >= {GOAL}x "
            f"| {t.sql_startup_s:.1f} / {t.frame_startup_s:.1f} |"
        )
    lines += ["", "| latency | rate (/s) | samples | p50 (ms) | p99 (ms) | max (ms) |"]
    lines.append("|---|---|---|---|---|---|")
    for item in latencies:
        lines.append(
            f"| {item.name} | {item.rate:,.0f} | {item.count:,} | {item.p50_ms:.1f} "
            f"| {item.p99_ms:.1f} | {item.max_ms:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer records, shorter runs")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    started = time.monotonic()
    with (
        spark_and_scratch(PARTITIONS, "strom-bench-sql") as (spark, data),
        Broker(process=True, data_dir=data / "broker") as broker,
    ):
        bootstrap = broker.bootstrap_servers
        settings = SqlSettings(
            bootstrap_servers=bootstrap,
            service_id="bench_sql",
            listener=Listener("http", "127.0.0.1", 0),
            state_dir=data / "sql",
            command_topic_replicas=1,
            sink_replicas=1,
            retry_backoff=Backoff(initial_ms=1_000, max_ms=10_000),
            values={},
        )
        server = SqlServer(settings, spark=lambda: spark)
        server.start()
        try:
            with httpx.Client(base_url=server.url, timeout=120) as api:
                throughput = persistent(spark, api, bootstrap, sizes.records)
                latencies = pulls(api, bootstrap, sizes)
                print(f"  {latencies}", flush=True)
                latencies.append(pushes(api, bootstrap, sizes))
                print(f"  {latencies[-1]}", flush=True)
        finally:
            server.stop()
    mode = "quick" if args.quick else "full"
    print(f"\n{mode} run, {time.monotonic() - started:.0f} s, Python {sys.version.split()[0]}")
    print(render(throughput, latencies, sizes.records))


if __name__ == "__main__":
    main()
