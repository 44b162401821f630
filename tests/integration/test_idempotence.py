"""The idempotent producer against a real server: retries answered once, sequences checked,
confluent-kafka with enable.idempotence, and producer state across a kill -9 restart."""

from __future__ import annotations

import datetime
import signal
import socket
import threading
from pathlib import Path
from typing import Any

from confluent_kafka import Producer, TopicPartition
from data_clients import (
    consume,
    consumer,
    create_topic,
    produce_request,
    records_batch,
    unique_topic,
)
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.types import ProducerId
from kio.static.primitive import i16, i32Timedelta
from strom_harness import KafkaWire, StromServer, strom_server_args

INIT_PRODUCER_ID = InitProducerIdRequest(
    transactional_id=None,
    transaction_timeout=i32Timedelta.parse(datetime.timedelta(seconds=60)),
    producer_id=ProducerId(-1),
    producer_epoch=i16(-1),
)


def _produce(wire: KafkaWire, topic: str, batch: bytes) -> Any:
    response = wire.request(produce_request(9, topic, batch, acks=-1))
    [partition] = response.responses[0].partition_responses
    return partition


def _batch(values: list[bytes], sequence: int, ids: tuple[int, int]) -> bytes:
    return records_batch(values, base_sequence=sequence, producer_id=ids[0], producer_epoch=ids[1])


def _init_producer_id(wire: KafkaWire) -> tuple[int, int]:
    init = wire.request(INIT_PRODUCER_ID)
    assert init.error_code == ErrorCode.none
    return int(init.producer_id), int(init.producer_epoch)


def _log_end(server: StromServer, topic: str) -> int:
    reader = consumer(server.bootstrap)
    try:
        end: int = reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        reader.close()
    return end


def test_a_retried_batch_is_appended_once(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("idempotent-retry"))
    with strom_server.connect() as wire:
        ids = _init_producer_id(wire)
        first = _batch([b"a", b"b", b"c"], 0, ids)
        answers = [_produce(wire, topic, first) for _ in range(2)]
        assert [(a.error_code, a.base_offset) for a in answers] == [(ErrorCode.none, 0)] * 2
        second = _produce(wire, topic, _batch([b"d"], 3, ids))
        assert (second.error_code, second.base_offset) == (ErrorCode.none, 3)
        again = _produce(wire, topic, first)  # still one of the last five batches
        assert (again.error_code, again.base_offset) == (ErrorCode.none, 0)
    messages = consume(strom_server.bootstrap, topic, count=4)
    assert [m.value() for m in messages] == [b"a", b"b", b"c", b"d"]
    assert _log_end(strom_server, topic) == 4


def test_out_of_order_sequence_is_refused(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("idempotent-order"))
    with strom_server.connect() as wire:
        ids = _init_producer_id(wire)
        assert _produce(wire, topic, _batch([b"a"], 0, ids)).error_code == 0
        gap = _produce(wire, topic, _batch([b"c"], 2, ids))
        assert gap.error_code == ErrorCode.out_of_order_sequence_number
        assert (gap.base_offset, gap.log_start_offset) == (-1, 0)  # as Kafka answers
        older = (ids[0], ids[1] - 1)
        stale = _produce(wire, topic, _batch([b"z"], 1, older))
        assert stale.error_code == ErrorCode.invalid_producer_epoch
        assert _produce(wire, topic, _batch([b"b"], 1, ids)).error_code == 0
    messages = consume(strom_server.bootstrap, topic, count=2)
    assert [m.value() for m in messages] == [b"a", b"b"]


def _idempotent_producer(bootstrap: str) -> Any:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 50,
            "message.timeout.ms": 60_000,
            "reconnect.backoff.max.ms": 200,
        }
    )


def test_confluent_kafka_idempotent_producer(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("idempotent-confluent"))
    producer = _idempotent_producer(strom_server.bootstrap)
    errors: list[Any] = []
    for i in range(2000):
        producer.produce(
            topic, value=b"v%d" % i, on_delivery=lambda e, _: errors.append(e) if e else None
        )
        if i % 200 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []
    messages = consume(strom_server.bootstrap, topic, count=2000)
    assert [m.value() for m in messages] == [b"v%d" % i for i in range(2000)]
    assert _log_end(strom_server, topic) == 2000


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_idempotent_producer_survives_a_broker_kill_9(tmp_path: Path) -> None:
    listener = f"127.0.0.1:{_free_port()}"
    data_dir = tmp_path / "data"

    def start() -> StromServer:
        server = StromServer(strom_server_args(data_dir=data_dir, listener=listener), cwd=tmp_path)
        server.wait_ready(timeout=15)
        return server

    server = start()
    restarted: StromServer | None = None
    try:
        topic = create_topic(server.bootstrap, unique_topic("idempotent-restart"))
        producer = _idempotent_producer(server.bootstrap)
        errors: list[Any] = []
        lock = threading.Lock()

        def report(error: Any, _: Any) -> None:
            if error is not None:
                with lock:
                    errors.append(error)

        for i in range(1000):
            producer.produce(topic, value=b"v%d" % i, on_delivery=report)
        assert producer.flush(30) == 0
        for i in range(1000, 1500):  # in flight while the server dies
            producer.produce(topic, value=b"v%d" % i, on_delivery=report)
        producer.poll(0.01)
        server.stop(signal.SIGKILL)
        restarted = start()
        for i in range(1500, 2000):
            producer.produce(topic, value=b"v%d" % i, on_delivery=report)
        assert producer.flush(60) == 0
        assert errors == []
        messages = consume(restarted.bootstrap, topic, count=2000)
        assert [m.value() for m in messages] == [b"v%d" % i for i in range(2000)]
        assert _log_end(restarted, topic) == 2000
    finally:
        for running in (server, restarted):
            if running is not None and running.process.poll() is None:
                running.stop(signal.SIGKILL)
