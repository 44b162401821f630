"""The log side of transactions over the wire, without a transaction coordinator: transactional
batches produced raw (with a transactional id), WriteTxnMarkers commit/abort, and real
read_committed consumers (confluent-kafka, kafka-python, kcat) that see only committed records
and stop at the last stable offset while a transaction is open; a kill -9 keeps it all.

No transactional client talks to these servers, so no ``__transaction_state`` exists and the
transaction coordinator verifies no produce (KIP-890): the raw batches go straight to the log.
"""

from __future__ import annotations

import datetime
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition
from data_clients import consume, consumer, create_topic, produce_v3, records_batch, unique_topic
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaPythonPartition
from kio.schema.api_versions.v3 import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.types import ProducerId, TopicName
from kio.schema.write_txn_markers.v1.request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from kio.static.primitive import i16, i32, i32Timedelta
from strom_harness import KafkaWire, StartServer, StromServer

READ_COMMITTED = {"isolation.level": "read_committed"}
READ_UNCOMMITTED = {"isolation.level": "read_uncommitted"}
KCAT = ("kcat", "-C", "-e", "-q", "-f", "%s\n")


class RawTxnProducer:
    """A producer id with its own sequence, writing transactional batches over ``wire``."""

    def __init__(self, wire: KafkaWire, topic: str, transactional_id: str) -> None:
        init = wire.request(
            InitProducerIdRequest(
                transactional_id=None,
                transaction_timeout=i32Timedelta.parse(datetime.timedelta(seconds=60)),
                producer_id=ProducerId(-1),
                producer_epoch=i16(-1),
            )
        )
        assert init.error_code == ErrorCode.none
        self.wire, self.topic, self.transactional_id = wire, topic, transactional_id
        self.producer_id, self.epoch = int(init.producer_id), int(init.producer_epoch)
        self.sequence = 0

    def send(self, *values: bytes) -> int:
        batch = records_batch(
            list(values),
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
            is_transactional=True,
        )
        response = self.wire.request(
            produce_v3({(self.topic, 0): batch}, acks=-1, transactional_id=self.transactional_id)
        )
        [answer] = response.responses[0].partition_responses
        assert answer.error_code == ErrorCode.none
        self.sequence += len(values)
        return int(answer.base_offset)

    def end(self, *, commit: bool, coordinator_epoch: int = 0) -> ErrorCode:
        response = self.wire.request(
            WriteTxnMarkersRequest(
                markers=(
                    WritableTxnMarker(
                        producer_id=ProducerId(self.producer_id),
                        producer_epoch=i16(self.epoch),
                        transaction_result=commit,
                        topics=(
                            WritableTxnMarkerTopic(
                                name=TopicName(self.topic), partition_indexes=(i32(0),)
                            ),
                        ),
                        coordinator_epoch=i32(coordinator_epoch),
                    ),
                )
            )
        )
        [marker] = response.markers
        assert int(marker.producer_id) == self.producer_id
        [topic] = marker.topics
        [partition] = topic.partitions
        return ErrorCode(partition.error_code)


def plain(wire: KafkaWire, topic: str, *values: bytes) -> None:
    response = wire.request(produce_v3({(topic, 0): records_batch(list(values))}))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.none


def values(bootstrap: str, topic: str, count: int, *, timeout: float, **settings: Any) -> list[Any]:
    return [m.value() for m in consume(bootstrap, topic, count=count, timeout=timeout, **settings)]


def stable_end(bootstrap: str, topic: str) -> int:
    """The end offset a read_committed consumer sees (ListOffsets isolation 1)."""
    reader = consumer(bootstrap, **READ_COMMITTED)
    try:
        high: int = reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        reader.close()
    return high


def kafka_python_values(bootstrap: str, topic: str) -> list[bytes]:
    """What a read_committed kafka-python consumer reads from the start: until its position is
    the last stable offset, then one more poll for anything handed out past it."""
    stable = stable_end(bootstrap, topic)
    reader = KafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed", enable_auto_commit=False
    )
    try:
        tp = KafkaPythonPartition(topic, 0)
        reader.assign([tp])
        reader.seek(tp, 0)
        got: list[bytes] = []
        polls_after_stable = 0
        for _ in range(10):
            for batch in reader.poll(timeout_ms=500).values():
                got.extend(record.value for record in batch)
            if reader.position(tp) >= stable:
                polls_after_stable += 1
                if polls_after_stable == 2:
                    break
        return got
    finally:
        reader.close()


def test_read_committed_sees_committed_records_only(strom_server: StromServer) -> None:
    bootstrap = strom_server.bootstrap
    topic = create_topic(bootstrap, unique_topic("txn-log"))
    with strom_server.connect() as wire:
        aborted = RawTxnProducer(wire, topic, "txn-log-a")
        committed = RawTxnProducer(wire, topic, "txn-log-b")
        assert aborted.send(b"a1", b"a2") == 0
        plain(wire, topic, b"p1")  # 2
        assert committed.send(b"b1") == 3
        # Both transactions are open: nothing is stable yet.
        assert stable_end(bootstrap, topic) == 0
        assert values(bootstrap, topic, 1, timeout=2, **READ_COMMITTED) == []
        assert aborted.end(commit=False) == ErrorCode.none  # 4
        assert stable_end(bootstrap, topic) == 3  # b's transaction from 3 is still open
        assert committed.end(commit=True) == ErrorCode.none  # 5
        assert stable_end(bootstrap, topic) == 6
        # A third transaction stays open: read_committed stops at its first offset.
        assert aborted.send(b"a3") == 6
        plain(wire, topic, b"p2")  # 7
        assert stable_end(bootstrap, topic) == 6

        expected = [b"p1", b"b1"]
        assert values(bootstrap, topic, 3, timeout=3, **READ_COMMITTED) == expected
        everything = [b"a1", b"a2", b"p1", b"b1", b"a3", b"p2"]
        assert values(bootstrap, topic, 6, timeout=10, **READ_UNCOMMITTED) == everything
        assert kafka_python_values(bootstrap, topic) == expected

        assert aborted.end(commit=True) == ErrorCode.none  # 8
        expected += [b"a3", b"p2"]
        assert values(bootstrap, topic, 4, timeout=10, **READ_COMMITTED) == expected
        assert kafka_python_values(bootstrap, topic) == expected
        if shutil.which("kcat") is not None:
            output = subprocess.run(
                [*KCAT, "-b", bootstrap, "-t", topic, "-X", "isolation.level=read_committed"],
                capture_output=True,
                check=True,
                timeout=30,
                text=True,
            ).stdout
            assert output.split() == [v.decode() for v in expected]


def test_marker_errors_over_the_wire(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("txn-markers"))
    with strom_server.connect() as wire:
        versions = wire.request(
            ApiVersionsRequest(client_software_name="strom-tests", client_software_version="1")
        )
        [markers] = [k for k in versions.api_keys if k.api_key == 27]  # WriteTxnMarkers
        assert (markers.min_version, markers.max_version) == (1, 1)
        producer = RawTxnProducer(wire, topic, "txn-markers")
        producer.send(b"x")
        assert producer.end(commit=True, coordinator_epoch=3) == ErrorCode.none
        producer.send(b"y")
        assert producer.end(commit=False, coordinator_epoch=2) == (
            ErrorCode.transaction_coordinator_fenced
        )
        producer.topic = "no-such-topic"
        assert producer.end(commit=True) == ErrorCode.unknown_topic_or_partition


def test_a_kill_9_keeps_the_txn_index_and_the_last_stable_offset(
    start_server: StartServer, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    server = start_server(data_dir=data_dir)
    topic = create_topic(server.bootstrap, unique_topic("txn-crash"))
    with server.connect() as wire:
        aborted = RawTxnProducer(wire, topic, "txn-crash-a")
        ongoing = RawTxnProducer(wire, topic, "txn-crash-b")
        aborted.send(b"a1", b"a2")  # 0..1
        plain(wire, topic, b"p1")  # 2
        assert aborted.end(commit=False) == ErrorCode.none  # 3
        assert ongoing.send(b"o1") == 4
        plain(wire, topic, b"p2")  # 5
    server.stop(signal.SIGKILL)
    [index] = (data_dir / f"{topic}-0").glob("*.txnindex")
    index.unlink()  # lost with the page cache: recovery must rebuild it

    restarted = start_server(data_dir=data_dir)
    bootstrap = restarted.bootstrap
    assert index.stat().st_size == 34
    assert stable_end(bootstrap, topic) == 4
    assert values(bootstrap, topic, 2, timeout=3, **READ_COMMITTED) == [b"p1"]
    with restarted.connect() as wire:
        ongoing.wire = wire
        assert ongoing.end(commit=True) == ErrorCode.none
    assert values(bootstrap, topic, 3, timeout=10, **READ_COMMITTED) == [b"p1", b"o1", b"p2"]
    assert kafka_python_values(bootstrap, topic) == [b"p1", b"o1", b"p2"]
