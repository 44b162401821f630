"""What the metrics cost a broker: produce throughput with ``metrics.listener`` on against off
in the same run, and the time of one scrape of a broker holding 10,000 partitions.

**Produce.** Two ``strom server`` child processes (``strom.testing.Broker``), one with a
metrics listener (scraped every ``--scrape-interval`` seconds while it is loaded, as
Prometheus would), one without (nothing is counted then). Each round produces ``--records``
records of 100 B with confluent-kafka (acks=1, linger.ms=1, so that requests are small and
many: the per-request and per-batch counting is what is measured) into an 8-partition topic of
each broker in turn, alternating which goes first; records/s from the first produce to the
last delivery. Prints each round and the ratio of the medians (goal >= 0.97).

**Scrape.** A broker with metrics on, ``--partitions`` partitions over 10 topics, a record in
each, and a consumer group with an offset committed on every partition (so that
``kafka_log_log_*`` and ``kafka_consumergroup_*`` have a series each per partition); times
``--scrapes`` GETs of /metrics with httpx once the broker is idle (goal < 200 ms). A
partition holds three open files: where ``ulimit -n`` cannot be raised for them, the broker
gets the partitions the limit allows, and the node's own share of a scrape
(``NodeCollector.render``) is also timed in this process over ``--partitions`` stand-in
partitions (no files).

Run: ``.venv/bin/python -m bench.metrics_cost [--records 200000] [--rounds 5]
[--partitions 10000] [--scrapes 20]``.
"""

from __future__ import annotations

import argparse
import resource
import socket
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import cast

import httpx
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.common import TopicPartition
from strom.metadata.image import MetadataImage
from strom.server.broker.broker import Broker as BrokerRole
from strom.server.metrics import NodeMetrics
from strom.server.node_metrics import NodeCollector, NodeParts
from strom.testing import Broker

RECORD = b"x" * 100
TOPICS = 10


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def broker(*, metrics: bool) -> Iterator[tuple[Broker, str | None]]:
    """A broker process; its metrics URL when ``metrics``."""
    url = f"http://127.0.0.1:{free_port()}" if metrics else None
    config: dict[str, object] = {"offsets.topic.num.partitions": 1}
    if url is not None:
        config["metrics.listener"] = url
    with Broker(process=True, config=config) as running:
        yield running, None if url is None else url + "/metrics"


def produce_rate(running: Broker, topic: str, records: int) -> float:
    producer = Producer(
        running.producer_config(**{"acks": 1, "linger.ms": 1, "queue.buffering.max.messages": 1e6})
    )
    started = time.monotonic()
    for index in range(records):
        while True:
            try:
                producer.produce(topic, RECORD, partition=index % 8)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(120) == 0
    return records / (time.monotonic() - started)


@contextmanager
def scraping(url: str | None, interval: float) -> Iterator[list[float]]:
    """Scrape ``url`` every ``interval`` seconds meanwhile; the scrape times (ms)."""
    times: list[float] = []
    stop = threading.Event()

    def loop() -> None:
        assert url is not None
        with httpx.Client(timeout=10) as client:
            while not stop.wait(interval):
                started = time.perf_counter()
                client.get(url).raise_for_status()
                times.append((time.perf_counter() - started) * 1000)

    thread = threading.Thread(target=loop, daemon=True) if url is not None else None
    if thread is not None:
        thread.start()
    try:
        yield times
    finally:
        stop.set()
        if thread is not None:
            thread.join()


def bench_produce(records: int, rounds: int, interval: float) -> None:
    with broker(metrics=False) as (off, _), broker(metrics=True) as (on, url):
        topics = {
            name: (running, running.create_topic(partitions=8), scrape_url)
            for name, running, scrape_url in (("off", off, None), ("on", on, url))
        }
        for running, topic, _ in topics.values():
            produce_rate(running, topic, records // 10)  # warm up
        rates: dict[str, list[float]] = {"off": [], "on": []}
        print(f"{'round':<6} {'metrics off rec/s':>18} {'metrics on rec/s':>18} {'ratio':>7}")
        for round_number in range(rounds):
            order = ("off", "on") if round_number % 2 == 0 else ("on", "off")
            for name in order:
                running, topic, scrape_url = topics[name]
                with scraping(scrape_url, interval):
                    rates[name].append(produce_rate(running, topic, records))
            off_rate, on_rate = rates["off"][-1], rates["on"][-1]
            print(
                f"{round_number + 1:<6} {off_rate:>18,.0f} {on_rate:>18,.0f} "
                f"{on_rate / off_rate:>7.3f}"
            )
        off_median, on_median = statistics.median(rates["off"]), statistics.median(rates["on"])
        print(
            f"{'median':<6} {off_median:>18,.0f} {on_median:>18,.0f} {on_median / off_median:>7.3f}"
        )


def open_files_for(partitions: int) -> int:
    """How many partitions the broker child may hold: a partition keeps three files open (log,
    offset and time index), so ``ulimit -n`` is raised for them when allowed (Kafka's guides
    ask 100,000), else the partitions are cut to what the limit allows."""
    wanted = 3 * partitions + 2048
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= wanted:
        return partitions
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, max(hard, wanted)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        allowed = (hard - 2048) // 3 // 1000 * 1000
        print(f"ulimit -n is at most {hard} here: {allowed} partitions, not {partitions}")
        return allowed
    return partitions


def render_ms(partitions: int, scrapes: int) -> list[float]:
    """The node's own work of a scrape (``NodeCollector.render``, what stalls its loop) over
    ``partitions`` stand-in partitions and a group with an offset on each: no files, so any
    count fits under ``ulimit -n``."""
    per_topic = partitions // TOPICS
    log = SimpleNamespace(size=4096, log_end_offset=1, log_start_offset=0, high_watermark=1)
    local = {
        TopicPartition(f"scrape-{topic}", index): SimpleNamespace(
            replication=SimpleNamespace(isr=(1,), replicas=(1,)), log=log
        )
        for topic in range(TOPICS)
        for index in range(per_topic)
    }
    group = SimpleNamespace(
        offsets={(tp.topic, tp.partition): SimpleNamespace(offset=1) for tp in local}
    )
    broker = SimpleNamespace(
        replica_manager=SimpleNamespace(local_partitions=local),
        group_coordinator=SimpleNamespace(core=SimpleNamespace(groups={"scrape-bench": group})),
        txn_coordinator=SimpleNamespace(core=SimpleNamespace(transactions={})),
    )
    collector = NodeCollector(
        NodeParts(
            metrics=NodeMetrics(),
            image=MetadataImage.empty,
            raft=lambda: None,
            broker=lambda: cast(BrokerRole, broker),
            controller=lambda: None,
            listeners=list,
        )
    )
    times = []
    for _ in range(scrapes):
        begun = time.perf_counter()
        collector.render()
        times.append((time.perf_counter() - begun) * 1000)
    return times


def bench_scrape(partitions: int, scrapes: int) -> None:
    rendered = render_ms(partitions, scrapes)
    print(
        f"render of {partitions} stand-in partitions: median {statistics.median(rendered):.0f} "
        f"ms, max {max(rendered):.0f} ms over {scrapes}"
    )
    partitions = open_files_for(partitions)
    with broker(metrics=True) as (running, url):
        assert url is not None
        admin = AdminClient(running.admin_config())
        per_topic = partitions // TOPICS
        names = [f"scrape-{index}" for index in range(TOPICS)]
        started = time.monotonic()
        for name in names:  # one a request: Kafka caps an operation at 10,000 records
            futures = admin.create_topics(
                [NewTopic(name, num_partitions=per_topic)], operation_timeout=300
            )
            futures[name].result(timeout=600)
        created = time.monotonic() - started
        producer = Producer(running.producer_config(**{"linger.ms": 50}))
        for name in names:
            for partition in range(per_topic):
                producer.produce(name, RECORD, partition=partition)
        assert producer.flush(300) == 0
        consumer = Consumer({**running.consumer_config(), "group.id": "scrape-bench"})
        consumer.commit(
            offsets=[
                KafkaPartition(name, partition, 1)
                for name in names
                for partition in range(per_topic)
            ],
            asynchronous=False,
        )
        consumer.close()
        with httpx.Client(timeout=30) as client:
            body = client.get(url).text
            times = []
            for _ in range(scrapes):
                begun = time.perf_counter()
                client.get(url).raise_for_status()
                times.append((time.perf_counter() - begun) * 1000)
        series = sum(1 for line in body.splitlines() if line and not line.startswith("#"))
        print(
            f"{partitions} partitions (created in {created:.0f} s), {series:,} series, "
            f"{len(body) / 1e6:.1f} MB: scrape median {statistics.median(times):.0f} ms, "
            f"min {min(times):.0f} ms, max {max(times):.0f} ms over {scrapes}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scrape-interval", type=float, default=5.0)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--scrapes", type=int, default=20)
    parser.add_argument("--skip-produce", action="store_true")
    parser.add_argument("--skip-scrape", action="store_true")
    args = parser.parse_args()
    if not args.skip_produce:
        bench_produce(args.records, args.rounds, args.scrape_interval)
    if not args.skip_scrape:
        bench_scrape(args.partitions, args.scrapes)


if __name__ == "__main__":
    main()
