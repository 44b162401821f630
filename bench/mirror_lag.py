"""Replication lag of a running mirror: records produced at a steady rate on A, read on B.

A child process (so the bench process's GIL, where the Connect worker's driver runs, is not
shared) runs two threads: a confluent-kafka producer of A sending ``value_bytes``-byte records at
``rate`` bytes/s in 10 ms ticks (each record's CreateTime is its produce call), and a consumer of
the remote topic on B. Each record's lag is its arrival at the consumer minus its timestamp;
records produced in the first ``warmup_s`` are not counted. The figures: p50, p99 and max of the
lags, and the rate reached.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from dataclasses import dataclass
from queue import Empty

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

TICK_S = 0.01


@dataclass(frozen=True)
class Lag:
    records: int
    mb_per_s: float
    p50_ms: float
    p99_ms: float
    max_ms: float


def _produce(
    bootstrap: str, topic: str, rate: float, value_bytes: int, seconds: float, sent: list[int]
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    value = b"x" * value_bytes
    started = time.perf_counter()
    n = 0
    while (now := time.perf_counter() - started) < seconds:
        while n < now * rate / value_bytes:
            while True:
                try:
                    producer.produce(topic, value, b"%08d" % n)
                    break
                except BufferError:
                    producer.poll(0.001)
            n += 1
        producer.poll(0)
        time.sleep(max(0.0, (int(now / TICK_S) + 1) * TICK_S - (time.perf_counter() - started)))
    assert producer.flush(60) == 0
    sent.append(n)


def _probe(
    source: str,
    target: str,
    topic: str,
    remote: str,
    partitions: int,
    rate: float,
    value_bytes: int,
    seconds: float,
    warmup_s: float,
    out: multiprocessing.Queue,  # type: ignore[type-arg]
) -> None:
    consumer = Consumer(
        {"bootstrap.servers": target, "group.id": f"bench-lag-{remote}", "fetch.wait.max.ms": 50}
    )
    consumer.assign([TopicPartition(remote, p, OFFSET_BEGINNING) for p in range(partitions)])
    sent: list[int] = []
    counted_from = (time.time() + warmup_s) * 1000
    producer = threading.Thread(
        target=_produce, args=(source, topic, rate, value_bytes, warmup_s + seconds, sent)
    )
    producer.start()
    lags: list[float] = []
    received = 0
    deadline = time.monotonic() + warmup_s + seconds + 120
    while (not sent or received < sent[0]) and time.monotonic() < deadline:
        for message in consumer.consume(10_000, timeout=0.1):
            if message.error() is not None:
                continue
            now = time.time() * 1000
            received += 1
            stamp = message.timestamp()[1]
            if stamp >= counted_from:
                lags.append(now - stamp)
    producer.join()
    consumer.close()
    out.put((sent[0] if sent else 0, received, lags))


def measure_lag(
    source: str,
    target: str,
    topic: str,
    remote: str,
    *,
    partitions: int,
    rate: float,
    value_bytes: int,
    seconds: float,
    warmup_s: float,
) -> Lag:
    """Produce to ``topic`` on ``source`` at ``rate`` bytes/s for ``warmup_s + seconds``, read
    ``remote`` on ``target`` until every record arrived: the lags of the records after the
    warm-up."""
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    child = context.Process(
        target=_probe,
        args=(source, target, topic, remote, partitions, rate, value_bytes, seconds, warmup_s, out),
    )
    child.start()
    try:
        sent, received, lags = out.get(timeout=warmup_s + seconds + 240)
    except Empty as timed_out:
        raise AssertionError("the lag probe gave no answer") from timed_out
    finally:
        child.join(30)
    assert received >= sent, f"{received} of {sent} records arrived on B"
    lags.sort()
    counted = len(lags)
    assert counted, "no record after the warm-up arrived"
    return Lag(
        records=counted,
        mb_per_s=counted * value_bytes / seconds / 1e6,
        p50_ms=lags[counted // 2],
        p99_ms=lags[min(counted - 1, counted * 99 // 100)],
        max_ms=lags[-1],
    )
