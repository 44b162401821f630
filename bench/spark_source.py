"""The ``strom`` Spark source next to a plain confluent-kafka consumer reading the same topic.

Run: ``.venv/bin/python -m bench.spark_source [--quick]``. Prints one table: record size,
records, the source's records/s, the direct consumer's records/s, and their ratio (the goal:
at least 0.9x, issue 26).

How it measures:

- One ``strom server`` child process with its log in a temporary directory; per record size, a
  topic of ``PARTITIONS`` partitions filled by ``strom perf``'s producer (random letters).
- The source: a streaming query, ``readStream.format("strom")`` from the earliest offsets into
  Spark's ``noop`` sink with ``Trigger.AvailableNow``, on ``local[PARTITIONS]`` (one task per
  partition, all at once). Its figure is the records divided by the time of the micro-batches
  that read them (``durationMs.triggerExecution`` of the query's progress: planning the batch,
  running its tasks, committing it), the best of ``RUNS`` queries after one warm-up query;
  the query's start-up (the first source call, the checkpoint) is excluded and printed apart.
- The direct consumer: confluent-kafka with the settings the source's readers use
  (``strom.spark.cluster.consumer_settings``, and the readers' Fetch size
  ``max.partition.fetch.bytes``), one consumer assigned every partition from
  offset 0, ``consume()`` in batches of ``kafka.max.poll.records`` (10,000) until each
  partition's end, touching each record's value (its length is summed) as the source's Arrow
  conversion does; the best of ``RUNS`` reads.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition
from pyspark.sql import SparkSession

from bench.spark_run import spark_and_scratch
from strom.cli.client_common import ClientConfig
from strom.cli.perf import ProduceSpec, ensure_topic, perf_producer_settings, run_produce
from strom.cli.produce import PRODUCER_DEFAULTS
from strom.spark.cluster import consumer_settings
from strom.spark.fetch import DEFAULT_PARTITION_FETCH_BYTES
from strom.spark.options import DEFAULT_FETCH_RECORDS
from strom.testing import Broker

PARTITIONS = 2
RUNS = 2
GOAL = 0.9


@dataclass(frozen=True)
class Workload:
    record_size: int
    records: int


FULL = (Workload(1024, 1_000_000), Workload(100, 4_000_000))
QUICK = (Workload(1024, 250_000), Workload(100, 1_000_000))


@dataclass(frozen=True)
class Row:
    workload: Workload
    source_rps: float
    direct_rps: float
    startup_s: float

    @property
    def ratio(self) -> float:
        return self.source_rps / self.direct_rps


def fill(bootstrap: str, topic: str, workload: Workload) -> None:
    ensure_topic(topic=topic, partitions=PARTITIONS, bootstrap_server=bootstrap)
    config = ClientConfig.build(
        bootstrap_server=bootstrap,
        command_config=None,
        defaults=PRODUCER_DEFAULTS,
        overrides=perf_producer_settings(acks="1", compression_type="none", linger_ms=None),
    )
    result = run_produce(config, ProduceSpec(topic, workload.records, workload.record_size))
    if result.failed or result.records != workload.records:
        raise RuntimeError(f"{topic}: {result.failed} records not delivered")


def read_direct(bootstrap: str, topic: str, records: int) -> float:
    """Records/s of one consumer, with the source's settings, reading the whole topic."""
    consumer = Consumer(
        consumer_settings(
            {
                "bootstrap.servers": bootstrap,
                "max.partition.fetch.bytes": str(DEFAULT_PARTITION_FETCH_BYTES),
            }
        )
    )
    consumer.assign([KafkaTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    count = value_bytes = 0
    ended: set[int] = set()
    started = time.monotonic()
    try:
        while len(ended) < PARTITIONS:
            for message in consumer.consume(DEFAULT_FETCH_RECORDS, 0.2):
                error = message.error()
                if error is None:
                    count += 1
                    value_bytes += len(message.value() or b"")
                elif error.code() == KafkaError._PARTITION_EOF:
                    partition = message.partition()
                    assert partition is not None
                    ended.add(partition)
                else:
                    raise RuntimeError(error.str())
        elapsed = time.monotonic() - started
    finally:
        consumer.close()
    if count != records:
        raise RuntimeError(f"direct consumer read {count} of {records} records")
    return count / elapsed


def read_spark(
    spark: SparkSession, bootstrap: str, topic: str, records: int
) -> tuple[float, float]:
    """Records/s of the source's micro-batches into the noop sink, and the query's start-up."""
    checkpoint = tempfile.mkdtemp(prefix="strom-bench-cp-")
    try:
        started = time.monotonic()
        query = (
            spark.readStream.format("strom")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        wall = time.monotonic() - started
        batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)
    read = sum(p["numInputRows"] for p in batches)
    if read != records:
        raise RuntimeError(f"the source read {read} of {records} records")
    busy = sum(p["durationMs"]["triggerExecution"] for p in batches) / 1000
    return read / busy, wall - busy


def measure(spark: SparkSession, bootstrap: str, workload: Workload) -> Row:
    topic = f"spark-source-{workload.record_size}"
    fill(bootstrap, topic, workload)
    read_spark(spark, bootstrap, topic, workload.records)  # warm-up: JIT, Python workers
    spark_runs = [read_spark(spark, bootstrap, topic, workload.records) for _ in range(RUNS)]
    direct = max(read_direct(bootstrap, topic, workload.records) for _ in range(RUNS))
    best = max(spark_runs)
    row = Row(workload, best[0], direct, best[1])
    print(
        f"  {workload.record_size:>5} B: source {row.source_rps:,.0f}/s, "
        f"direct {row.direct_rps:,.0f}/s, ratio {row.ratio:.2f}",
        flush=True,
    )
    return row


def render(rows: Sequence[Row]) -> str:
    lines = [
        "| record | records | strom source (records/s) | direct consumer (records/s) "
        "| ratio | goal | query start-up (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        goal = f">= {GOAL}x"
        lines.append(
            f"| {row.workload.record_size} B | {row.workload.records:,} | "
            f"{row.source_rps:,.0f} | {row.direct_rps:,.0f} | {row.ratio:.2f} | {goal} | "
            f"{row.startup_s:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the records")
    args = parser.parse_args(argv)
    workloads = QUICK if args.quick else FULL
    started = time.monotonic()
    with (
        spark_and_scratch(PARTITIONS) as (spark, data),
        Broker(process=True, data_dir=data) as broker,
    ):
        rows = [measure(spark, broker.bootstrap_servers, w) for w in workloads]
    mode = "quick" if args.quick else "full"
    print(f"\n{mode} run, {time.monotonic() - started:.0f} s, Python {sys.version.split()[0]}")
    print(render(rows))


if __name__ == "__main__":
    main()
