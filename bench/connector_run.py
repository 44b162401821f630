"""Timing one connector run through Connect's REST API: what the Connect benchmarks share."""

from __future__ import annotations

import time
from typing import Any

import httpx
from confluent_kafka import Consumer, TopicPartition


def topic_end(consumer: Consumer, topic: str, partitions: int) -> int:
    """The records ``topic`` holds (its partitions' end offsets summed); 0 before it exists."""
    try:
        return sum(
            int(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[1])
            for p in range(partitions)
        )
    except Exception:  # the topic is not there yet
        return 0


def time_connector(
    api: httpx.Client,
    name: str,
    config: dict[str, Any],
    *,
    bootstrap: str,
    topic: str,
    partitions: int,
    count: int,
    timeout_s: float,
) -> tuple[float, float]:
    """Create connector ``name``, wait until ``topic`` on ``bootstrap`` holds ``count``
    records, delete it: (records per second from the first record to the last, start-up
    seconds)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermarks"})
    created = time.perf_counter()
    answer = api.post("/connectors", json={"name": name, "config": config})
    assert answer.status_code == 201, answer.text
    first = None
    try:
        while (end := topic_end(consumer, topic, partitions)) < count:
            if first is None and end > 0:
                first = time.perf_counter()
            assert time.perf_counter() - created < timeout_s, f"{end} of {count} records"
            time.sleep(0.05)
        done = time.perf_counter()
    finally:
        consumer.close()
        api.delete(f"/connectors/{name}")
    first = first or done
    return count / max(done - first, 1e-3), first - created
