"""Bad produce requests on a raw socket: each fails its partition with the specific error, the
server logs who sent what, and the connection, the other partitions and other clients go on."""

from __future__ import annotations

import struct
from collections.abc import Callable

import crc32c
import pytest
from confluent_kafka import Producer
from data_clients import consume, create_topic, produce_v3, records_batch, unique_topic
from kio.schema.errors import ErrorCode
from strom_harness import StromServer

from strom.protocol.records import ControlRecordType, build_control_batch


def _recrc(data: bytearray) -> bytes:
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def wrong_crc() -> bytes:
    data = bytearray(records_batch([b"payload"]))
    data[-3] ^= 0x55
    return bytes(data)


def truncated() -> bytes:
    return records_batch([b"payload" * 10])[:-20]


def short_header() -> bytes:
    return records_batch([b"x"])[:30]


def oversized() -> bytes:
    return records_batch([b"z" * 3000])


def unknown_codec() -> bytes:
    data = bytearray(records_batch([b"x"]))
    data[22] = (data[22] & 0xF8) | 0x06
    return _recrc(data)


def magic_v1() -> bytes:
    data = bytearray(records_batch([b"x"]))
    data[16] = 1
    return bytes(data)


def two_batches() -> bytes:
    return records_batch([b"a"]) + records_batch([b"b"])


def count_mismatch() -> bytes:
    data = bytearray(records_batch([b"a", b"b"]))
    struct.pack_into(">i", data, 57, 5)
    return _recrc(data)


def control_batch() -> bytes:
    return build_control_batch(
        ControlRecordType.ABORT, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp=1
    )


def garbage() -> bytes:
    return b"\xde\xad\xbe\xef" * 40


CASES: list[tuple[str, Callable[[], bytes | None], ErrorCode]] = [
    ("wrong-crc", wrong_crc, ErrorCode.corrupt_message),
    ("truncated", truncated, ErrorCode.corrupt_message),
    ("short-header", short_header, ErrorCode.corrupt_message),
    ("garbage", garbage, ErrorCode.corrupt_message),
    ("oversized", oversized, ErrorCode.message_too_large),
    ("unknown-codec", unknown_codec, ErrorCode.unsupported_compression_type),
    ("magic-v1", magic_v1, ErrorCode.invalid_record),
    ("two-batches", two_batches, ErrorCode.invalid_record),
    ("count-mismatch", count_mismatch, ErrorCode.invalid_record),
    ("control-batch", control_batch, ErrorCode.invalid_record),
    ("empty", lambda: b"", ErrorCode.invalid_record),
    ("null", lambda: None, ErrorCode.invalid_record),
]


@pytest.fixture(scope="module")
def topic(strom_server: StromServer) -> str:
    return create_topic(
        strom_server.bootstrap,
        unique_topic("bad-produce"),
        partitions=2,
        config={"max.message.bytes": "2000"},
    )


@pytest.mark.parametrize(("name", "make", "error"), CASES, ids=[c[0] for c in CASES])
def test_bad_partition_fails_alone(
    strom_server: StromServer,
    topic: str,
    name: str,
    make: Callable[[], bytes | None],
    error: ErrorCode,
) -> None:
    with strom_server.connect() as wire:
        response = wire.request(
            produce_v3({(topic, 0): make(), (topic, 1): records_batch([name.encode()])})
        )
        answers = {p.index: p for p in response.responses[0].partition_responses}
        assert answers[0].error_code == error
        assert answers[0].base_offset == -1
        assert answers[1].error_code == ErrorCode.none
        # The same connection keeps working.
        again = wire.request(produce_v3({(topic, 0): records_batch([b"fine"])}))
        assert again.responses[0].partition_responses[0].error_code == ErrorCode.none
    line = strom_server.wait_for_line(
        rf"produce to {topic}-0 from 127\.0\.0\.1:\d+ .*{error.name.upper()}"
    )
    assert "strom-test" in line  # the client id


def test_missing_partition_and_topic(strom_server: StromServer, topic: str) -> None:
    with strom_server.connect() as wire:
        response = wire.request(
            produce_v3(
                {
                    (topic, 2): records_batch([b"x"]),
                    ("no-such-topic-anywhere", 0): records_batch([b"x"]),
                }
            )
        )
    errors = {
        (t.name, p.index): p.error_code for t in response.responses for p in t.partition_responses
    }
    assert errors == {
        (topic, 2): ErrorCode.unknown_topic_or_partition,
        ("no-such-topic-anywhere", 0): ErrorCode.unknown_topic_or_partition,
    }


def test_invalid_acks(strom_server: StromServer, topic: str) -> None:
    with strom_server.connect() as wire:
        response = wire.request(produce_v3({(topic, 0): records_batch([b"x"])}, acks=2))
    assert response.responses[0].partition_responses[0].error_code == (
        ErrorCode.invalid_required_acks
    )


def test_acks_zero_failure_closes_the_connection(strom_server: StromServer, topic: str) -> None:
    with strom_server.connect() as wire:
        wire.send(produce_v3({(topic, 0): wrong_crc()}, acks=0))
        assert wire.is_closed_by_peer(timeout=5)
    # Good acks=0 requests leave the connection open.
    with strom_server.connect() as wire:
        wire.send(produce_v3({(topic, 1): records_batch([b"quiet"])}, acks=0))
        assert not wire.is_closed_by_peer(timeout=0.5)


def test_normal_clients_work_after_bad_input(strom_server: StromServer) -> None:
    fresh = create_topic(
        strom_server.bootstrap, unique_topic("after-bad"), config={"max.message.bytes": "2000"}
    )
    with strom_server.connect() as wire:
        for _, make, _ in CASES:
            wire.request(produce_v3({(fresh, 0): make()}))
    producer = Producer({"bootstrap.servers": strom_server.bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce(fresh, value=b"%d" % i)
    assert producer.flush(20) == 0
    messages = consume(strom_server.bootstrap, fresh, count=10)
    assert [m.value() for m in messages] == [b"%d" % i for i in range(10)]
    assert [m.offset() for m in messages] == list(range(10))  # nothing bad was appended
    assert strom_server.process.poll() is None
