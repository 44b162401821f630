"""Exactly once across crashes: a transactional consume-transform-produce loop (``txn_loop.py``)
is killed with SIGKILL at random points, restarted each time, and a read_committed consumer of
its output must see every input record exactly once.

The crash points come from a seed, printed with any failure; ``TXN_LOOP_SEED=<seed>`` replays
them."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Producer, TopicPartition
from data_clients import consumer, create_topic, unique_topic
from strom_harness import StromServer
from txn_loop import STEPS

LOOP = Path(__file__).with_name("txn_loop.py")
RECORDS = 1_000
PARTITIONS = 3
KILLS = 10


class LoopProcess:
    """One run of the loop, crashing itself at ``crash`` (``<transactions>:<step>``) if given."""

    def __init__(
        self, bootstrap: str, source: str, sink: str, group: str, crash: str | None = None
    ) -> None:
        args = [sys.executable, str(LOOP), bootstrap, source, sink, group, f"{group}-txn"]
        self.process = subprocess.Popen([*args, *([crash] if crash else [])])

    def wait(self, *, timeout: float = 120) -> int:
        return self.process.wait(timeout=timeout)


def crash_points(seed: int) -> list[str]:
    """``KILLS`` crash points: after 0 to 3 committed transactions, at any step of the next."""
    chooser = random.Random(seed)
    return [f"{chooser.randint(0, 3)}:{chooser.choice(STEPS)}" for _ in range(KILLS)]


def _fill(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, value=f"value-{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def _read_all(bootstrap: str, topic: str, isolation: str) -> list[Any]:
    """Everything ``topic`` holds for a consumer in ``isolation``: read until every partition's
    end (its end of partition event: the high watermark, or read_committed's last stable
    offset; no loop runs any more, so no transaction is open)."""
    reader = consumer(bootstrap, **{"isolation.level": isolation, "enable.partition.eof": True})
    try:
        reader.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        messages: list[Any] = []
        ended: set[int] = set()
        deadline = time.monotonic() + 60
        while len(ended) < PARTITIONS:
            assert time.monotonic() < deadline, f"no end of {topic} within 60 s"
            message = reader.poll(0.2)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    ended.add(message.partition())
                continue
            messages.append(message)
        return messages
    finally:
        reader.close()


def test_killed_loop_outputs_each_input_exactly_once(strom_server: StromServer) -> None:
    bootstrap = strom_server.bootstrap
    source = create_topic(bootstrap, unique_topic("loop-in"), partitions=PARTITIONS)
    sink = create_topic(bootstrap, unique_topic("loop-out"), partitions=PARTITIONS)
    _fill(bootstrap, source)
    group = unique_topic("loop-group")
    seed = int(os.environ.get("TXN_LOOP_SEED") or random.randrange(2**32))
    replay = f"crash points {crash_points(seed)} (replay: TXN_LOOP_SEED={seed})"
    for crash in crash_points(seed):
        code = LoopProcess(bootstrap, source, sink, group, crash).wait()
        assert code in (-signal.SIGKILL, 0), f"{replay}: the loop exited with {code}"
    assert LoopProcess(bootstrap, source, sink, group).wait() == 0, replay

    committed = _read_all(bootstrap, sink, "read_committed")
    keys = Counter(message.key() for message in committed)
    duplicates = {key: n for key, n in keys.items() if n > 1}
    assert not duplicates, f"{replay}: outputs written more than once: {duplicates}"
    expected = {f"{i % PARTITIONS}:{i // PARTITIONS}".encode() for i in range(RECORDS)}
    assert set(keys) == expected, f"{replay}: {len(expected - set(keys))} inputs lack output"
    assert all(m.value().startswith(b"VALUE-") for m in committed)
    assert len(_read_all(bootstrap, sink, "read_uncommitted")) >= RECORDS
