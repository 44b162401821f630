"""Exactly once across crashes: a transactional consume-transform-produce loop (``txn_loop.py``)
is killed with SIGKILL at random points, restarted each time, and a read_committed consumer of
its output must see every input record exactly once."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from confluent_kafka import Producer, TopicPartition
from data_clients import consumer, create_topic, unique_topic
from strom_harness import StromServer

LOOP = Path(__file__).with_name("txn_loop.py")
RECORDS = 1_000
PARTITIONS = 3
KILLS = 10


class LoopProcess:
    """One run of the loop; counts the transactions it reports committed."""

    def __init__(self, bootstrap: str, source: str, sink: str, group: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(LOOP), bootstrap, source, sink, group, f"{group}-txn"],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.commits = 0
        self._reader = threading.Thread(target=self._count, daemon=True)
        self._reader.start()

    def _count(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("committed"):
                self.commits += 1

    def kill_after_commits(self, commits: int, extra_delay: float, *, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.commits < commits and self.process.poll() is None:
            assert time.monotonic() < deadline, "the loop made no progress"
            time.sleep(0.005)
        time.sleep(extra_delay)
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def wait(self, *, timeout: float = 120) -> int:
        return self.process.wait(timeout=timeout)


def _fill(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, value=f"value-{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def _read_all(bootstrap: str, topic: str, isolation: str) -> list[Any]:
    """Everything ``topic`` holds for a consumer in ``isolation``, read until idle."""
    reader = consumer(bootstrap, **{"isolation.level": isolation})
    try:
        reader.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        messages: list[Any] = []
        idle_since = time.monotonic()
        while time.monotonic() - idle_since < 3:
            message = reader.poll(0.2)
            if message is None or message.error():
                continue
            messages.append(message)
            idle_since = time.monotonic()
        return messages
    finally:
        reader.close()


def test_killed_loop_outputs_each_input_exactly_once(strom_server: StromServer) -> None:
    bootstrap = strom_server.bootstrap
    source = create_topic(bootstrap, unique_topic("loop-in"), partitions=PARTITIONS)
    sink = create_topic(bootstrap, unique_topic("loop-out"), partitions=PARTITIONS)
    _fill(bootstrap, source)
    group = unique_topic("loop-group")
    seed = random.randrange(2**32)
    chooser = random.Random(seed)
    for _ in range(KILLS):
        loop = LoopProcess(bootstrap, source, sink, group)
        loop.kill_after_commits(chooser.randint(0, 3), chooser.uniform(0, 0.05))
    assert LoopProcess(bootstrap, source, sink, group).wait() == 0

    committed = _read_all(bootstrap, sink, "read_committed")
    keys = Counter(message.key() for message in committed)
    duplicates = {key: n for key, n in keys.items() if n > 1}
    assert not duplicates, f"seed {seed}: outputs written more than once: {duplicates}"
    expected = {f"{i % PARTITIONS}:{i // PARTITIONS}".encode() for i in range(RECORDS)}
    assert set(keys) == expected, f"seed {seed}: {len(expected - set(keys))} inputs lack output"
    assert all(m.value().startswith(b"VALUE-") for m in committed)
    assert len(_read_all(bootstrap, sink, "read_uncommitted")) >= RECORDS
