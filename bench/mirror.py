"""MirrorSourceConnector next to a direct consume-and-produce copy between the same clusters.

Run: ``.venv/bin/python -m bench.mirror [--quick] [--lag-only]``. Prints two tables: records, the
mirror's records/s, the direct copy's records/s and the ratio (issue 30's goal: at least 0.8x),
and the mirror's start-up; then the replication lag at a steady 10 MB/s (goal: p99 under 1 s).

How it measures:

- Two ``strom server`` child processes, A and B; one Connect worker in this process on B
  running the connector in one SparkSession on ``local[2]``.
- A topic of 3 partitions on A holding the records (100-byte values, 10-byte keys).
- The baseline: a confluent-kafka consumer of A (``fetch.min.bytes`` 1 MB) handing every message
  to a producer of B (``linger.ms=5``) with its key, value, headers, timestamp and partition,
  flushed at the end; records / (end - its first record). The best of ``RUNS``, a new topic
  each.
- The mirror: ``MirrorSourceConnector`` with ``topics`` the topic, created over the REST API;
  its figure is the records divided by the time from its first record on B to its last (the
  remote topic's high watermarks reaching the count, polled every 50 ms); the time from creation
  to the first record is its start-up, printed apart. The best of ``RUNS``, a new topic each.
- The lag: a mirror of one more topic (3 partitions), running before the load starts; records of
  ``--lag-value-bytes`` produced on A at ``--lag-mb-per-s`` for a warm-up and ``--lag-seconds``,
  each one's arrival on B minus its CreateTime (``bench/mirror_lag.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import httpx
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bench.connector_run import time_connector
from bench.mirror_lag import Lag, measure_lag
from bench.spark_run import spark_and_scratch
from strom.testing import Broker
from strom.testing.connect import Connect

RUNS = 2
GOAL = 0.8
PARTITIONS = 3
FULL, QUICK = 1_000_000, 200_000
TIMEOUT_S = 900


def create(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)


def fill(bootstrap: str, topic: str, records: int) -> None:
    create(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    value = b"x" * 100
    for n in range(records):
        while True:
            try:
                producer.produce(topic, value, b"key-%06d" % (n % 1_000_000), partition=n % 3)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(120) == 0


def direct_copy(source: str, target: str, topic: str, records: int) -> float:
    """Records per second copied from ``source`` to ``target`` by a consumer and a producer."""
    create(target, f"direct.{topic}")
    consumer = Consumer(
        {
            "bootstrap.servers": source,
            "group.id": f"bench-direct-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.min.bytes": 1_000_000,
        }
    )
    producer = Producer({"bootstrap.servers": target, "linger.ms": 5})
    copied, started, first = 0, time.perf_counter(), None
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    try:
        while copied < records:
            for message in consumer.consume(10_000, timeout=1):
                if message.error() is not None:
                    continue
                first = first or time.perf_counter()
                extra: dict[str, Any] = {"partition": message.partition()}
                if message.headers():
                    extra["headers"] = message.headers()
                while True:
                    try:
                        producer.produce(
                            f"direct.{topic}",
                            message.value(),
                            message.key(),
                            timestamp=message.timestamp()[1],
                            **extra,
                        )
                        break
                    except BufferError:
                        producer.poll(0.01)
                copied += 1
            assert time.perf_counter() - started < TIMEOUT_S, f"{copied} of {records}"
        assert producer.flush(120) == 0
        return records / (time.perf_counter() - (first or started))
    finally:
        consumer.close()


def mirror_config(source: str, target: str, topic: str) -> dict[str, str]:
    """A ``MirrorSourceConnector`` of ``topic`` from ``source`` (A) to ``target`` (B)."""
    return {
        "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
        "source.cluster.alias": "A",
        "target.cluster.alias": "B",
        "source.cluster.bootstrap.servers": source,
        "target.cluster.bootstrap.servers": target,
        "topics": topic,
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
    }


def mirror_run(
    api: httpx.Client, source: str, target: str, topic: str, records: int
) -> tuple[float, float]:
    """(records per second from the first record on B to the last, start-up seconds)."""
    return time_connector(
        api,
        f"bench-{topic}",
        mirror_config(source, target, topic),
        bootstrap=target,
        topic=f"A.{topic}",
        partitions=PARTITIONS,
        count=records,
        timeout_s=TIMEOUT_S,
    )


def lag_run(api: httpx.Client, source: str, target: str, args: argparse.Namespace) -> Lag:
    """The mirror's lag at a steady rate: its connector started and the remote topic made
    before the load begins."""
    topic = "bench-lag"
    create(source, topic)
    answer = api.post(
        "/connectors", json={"name": "bench-lag", "config": mirror_config(source, target, topic)}
    )
    assert answer.status_code == 201, answer.text
    admin = AdminClient({"bootstrap.servers": target})
    deadline = time.monotonic() + 120
    while f"A.{topic}" not in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"no A.{topic} on B"
        time.sleep(0.2)
    print(f"lag: {args.lag_mb_per_s} MB/s on A from now", flush=True)
    try:
        return measure_lag(
            source,
            target,
            topic,
            f"A.{topic}",
            partitions=PARTITIONS,
            rate=args.lag_mb_per_s * 1e6,
            value_bytes=args.lag_value_bytes,
            seconds=args.lag_seconds,
            warmup_s=args.lag_warmup_seconds,
        )
    finally:
        api.delete("/connectors/bench-lag")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK:,} records, not {FULL:,}")
    parser.add_argument("--lag-only", action="store_true", help="measure the lag only")
    parser.add_argument("--lag-mb-per-s", type=float, default=10.0, help="steady load, MB/s")
    parser.add_argument("--lag-value-bytes", type=int, default=1000, help="record value size")
    parser.add_argument("--lag-seconds", type=float, default=60.0, help="load counted, seconds")
    parser.add_argument(
        "--lag-warmup-seconds", type=float, default=10.0, help="load first, not counted"
    )
    args = parser.parse_args(argv)
    records = QUICK if args.quick else FULL
    started = time.monotonic()
    runs: list[tuple[float, float]] = []
    with (
        spark_and_scratch() as (spark, base),
        Broker(process=True, data_dir=base / "a") as a,
        Broker(process=True, data_dir=base / "b") as b,
    ):
        source, target = a.bootstrap_servers, b.bootstrap_servers
        topics = [] if args.lag_only else [f"bench-{n}" for n in range(2 * RUNS)]
        for topic in topics:
            fill(source, topic, records)
        direct = max((direct_copy(source, target, t, records) for t in topics[:RUNS]), default=0)
        with (
            Connect(target, spark=lambda: spark) as worker,
            httpx.Client(base_url=worker.url, timeout=60) as api,
        ):
            runs = [mirror_run(api, source, target, t, records) for t in topics[RUNS:]]
            lag = lag_run(api, source, target, args)
    mode = "quick" if args.quick else "full"
    print(f"\n{mode} run, {time.monotonic() - started:.0f} s, Python {sys.version.split()[0]}")
    if runs:
        best, startup = max(runs)
        print("| records | mirror records/s | direct copy records/s | ratio | start-up s |")
        print("|---|---|---|---|---|")
        ratio = best / direct
        print(f"| {records:,} | {best:,.0f} | {direct:,.0f} | {ratio:.2f} | {startup:.1f} |")
        print(f"goal: >= {GOAL}x of the direct copy\n")
    print("| load | value bytes | records counted | lag p50 ms | lag p99 ms | lag max ms |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {lag.mb_per_s:.1f} MB/s | {args.lag_value_bytes} | {lag.records:,} "
        f"| {lag.p50_ms:.0f} | {lag.p99_ms:.0f} | {lag.max_ms:.0f} |"
    )
    print("goal: p99 < 1000 ms")


if __name__ == "__main__":
    main()
