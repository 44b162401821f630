"""Every acknowledged record survives kill -9 of the server (acks=1 and acks=all)."""

from __future__ import annotations

import signal
import threading
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from data_clients import consume, consumer, create_topic, produce_v3, records_batch, unique_topic
from kio.schema.errors import ErrorCode
from strom_harness import StartServer


@pytest.mark.parametrize("acks", ["1", "all"])
def test_acknowledged_records_survive_kill_9(start_server: StartServer, acks: str) -> None:
    server = start_server()
    topic = create_topic(server.bootstrap, unique_topic(f"durable-{acks}"), partitions=3)
    producer = Producer(
        {"bootstrap.servers": server.bootstrap, "acks": acks, "linger.ms": 1, "retries": 0}
    )
    acknowledged: list[tuple[int, int, bytes]] = []
    lock = threading.Lock()

    def report(error: Any, message: Any) -> None:
        if error is None:
            with lock:
                acknowledged.append((message.partition(), message.offset(), message.value()))

    for i in range(3000):
        producer.produce(topic, value=b"value-%d" % i, partition=i % 3, on_delivery=report)
        if i % 100 == 0:
            producer.poll(0)
    producer.flush(30)
    # Keep producing while the server dies: whatever was acknowledged must be there after.
    for i in range(3000, 4000):
        producer.produce(topic, value=b"value-%d" % i, partition=i % 3, on_delivery=report)
    producer.poll(0.01)
    server.stop(signal.SIGKILL)
    producer.flush(5)
    with lock:
        expected = sorted(acknowledged)
    assert len(expected) >= 3000

    restarted = start_server()
    assert any("unclean" in line for line in restarted.lines)
    # Records whose acknowledgement the kill cut off may be there too: read everything.
    reader = consumer(restarted.bootstrap)
    try:
        ends = [
            reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(3)
        ]
    finally:
        reader.close()
    messages = consume(restarted.bootstrap, topic, partitions=3, count=sum(ends), timeout=60)
    assert len(messages) == sum(ends)
    stored = {(m.partition(), m.offset()): m.value() for m in messages}
    for partition, offset, value in expected:
        assert stored.get((partition, offset)) == value, (partition, offset)
    # And the partitions keep going after the recovered end.
    with restarted.connect() as wire:
        response = wire.request(produce_v3({(topic, 0): records_batch([b"after"])}))
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.none
    assert answer.base_offset >= max(o for p, o, _ in expected if p == 0) + 1


def test_raw_acks_survive_kill_9(start_server: StartServer) -> None:
    """Each answered produce (acks=-1) is there after kill -9, at the offset it was given."""
    server = start_server()
    topic = create_topic(server.bootstrap, unique_topic("durable-raw"))
    given: list[tuple[int, bytes]] = []
    with server.connect() as wire:
        for i in range(200):
            value = b"raw-%d" % i
            response = wire.request(produce_v3({(topic, 0): records_batch([value])}, acks=-1))
            answer = response.responses[0].partition_responses[0]
            assert answer.error_code == ErrorCode.none
            given.append((answer.base_offset, value))
    server.stop(signal.SIGKILL)
    restarted = start_server()
    messages = consume(restarted.bootstrap, topic, count=200)
    assert [(m.offset(), m.value()) for m in messages] == given
