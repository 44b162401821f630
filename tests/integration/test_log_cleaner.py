"""The log cleaner of a running ``strom server`` compacts ``cleanup.policy=compact`` topics."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Producer, TopicPartition
from data_clients import admin, consumer, create_topic, unique_topic
from strom_harness import StartServer, StromServer

from strom.storage.checkpoint import read_offset_checkpoint
from strom.storage.cleaner_checkpoint import CLEANER_OFFSET_CHECKPOINT

KEYS = 8
ROUNDS = 30
DELETED = {b"key-0", b"key-1"}


def _produce(bootstrap: str, topic: str) -> dict[bytes, bytes | None]:
    """ROUNDS updates of KEYS keys, tombstones for DELETED, then more updates of the others
    (so that the tombstones leave the active segment); the latest value of each key."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 4, "acks": 1}
    )
    latest: dict[bytes, bytes | None] = {}

    def send(key: bytes, value: bytes | None) -> None:
        producer.produce(topic, key=key, value=value)
        producer.poll(0)
        latest[key] = value

    for round_ in range(ROUNDS):
        for k in range(KEYS):
            send(b"key-%d" % k, b"value-%d-%d" % (k, round_))
    for key in sorted(DELETED):
        send(key, None)
    for round_ in range(ROUNDS, 2 * ROUNDS):
        for k in range(len(DELETED), KEYS):
            send(b"key-%d" % k, b"value-%d-%d" % (k, round_))
    assert producer.flush(30) == 0
    return latest


def _read_all(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record from the log start to the high watermark."""
    reader = consumer(bootstrap)
    try:
        partition = TopicPartition(topic, 0)
        _, high = reader.get_watermark_offsets(partition, timeout=10)
        reader.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 30
        while (not out or out[-1][0] < high - 1) and time.monotonic() < deadline:
            message: Any = reader.poll(0.5)
            if message is None:
                continue
            assert not message.error(), message.error()
            out.append((message.offset(), message.key(), message.value()))
        return out
    finally:
        reader.close()


def _first_dirty_offset(server: StromServer, topic: str) -> int:
    """The cleaner checkpoint of partition 0 (-1 before the first pass)."""
    path = server.data_dir / CLEANER_OFFSET_CHECKPOINT
    if not path.exists():
        return -1
    offsets = read_offset_checkpoint(path)
    return next((o for tp, o in offsets.items() if tp.topic == topic and tp.partition == 0), -1)


def test_compacted_topic_keeps_the_latest_value_per_key(start_server: StartServer) -> None:
    server = start_server(overrides={"log.cleaner.backoff.ms": "100"})
    topic = create_topic(
        server.bootstrap,
        unique_topic("compacted"),
        config={
            "cleanup.policy": "compact",
            "segment.bytes": "1024",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "500",
        },
    )
    latest = _produce(server.bootstrap, topic)
    produced = ROUNDS * KEYS + len(DELETED) + ROUNDS * (KEYS - len(DELETED))

    # Wait for a pass past the tombstones, then for one after their delete horizon.
    deadline = time.monotonic() + 60
    while True:
        clean_end = _first_dirty_offset(server, topic)
        records = _read_all(server.bootstrap, topic)
        cleaned = [r for r in records if r[0] < clean_end]
        if clean_end > ROUNDS * KEYS + len(DELETED) and not any(r[1] in DELETED for r in records):
            break
        assert time.monotonic() < deadline, f"not compacted: checkpoint {clean_end}, {records}"
        time.sleep(0.5)

    assert len(records) < produced / 2
    # Below the cleaner checkpoint each key is left once at most.
    keys = [key for _, key, _ in cleaned]
    assert len(keys) == len(set(keys))
    # Every key's latest value survives (from the cleaned part or the active segment's).
    seen: dict[bytes | None, bytes | None] = {}
    for _, key, value in records:
        seen[key] = value
    assert seen == {key: value for key, value in latest.items() if value is not None}
    assert "cleaned [" in server.output

    # Deleting the topic drops its cleaner checkpoint entry (a new topic of that name starts dirty).
    client = admin(server.bootstrap)
    client.delete_topics([topic], operation_timeout=10)[topic].result(timeout=15)
    assert _first_dirty_offset(server, topic) == -1
