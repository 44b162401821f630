"""strom's tagged fields (:mod:`strom.protocol.strom_fields`): Kafka's clients' bytes decode
and re-encode unchanged with strom's classes, and strom's fields round-trip."""

from __future__ import annotations

import io
from typing import Any

from kio.schema.broker_heartbeat.v1.request import BrokerHeartbeatRequest as KioHeartbeat
from kio.schema.describe_log_dirs.v4 import request as kio_log_dirs
from kio.schema.types import BrokerId, TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import f64, i32, i64

from strom.protocol.api import request_type
from strom.protocol.strom_fields import (
    BrokerHeartbeatRequest,
    DescribeLogDirsRequest,
    PartitionLoad,
)


def _bytes(body: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(body))(buffer, body)
    return buffer.getvalue()


def test_servers_decode_the_two_requests_with_stroms_classes() -> None:
    assert request_type(63, 1) is BrokerHeartbeatRequest
    assert request_type(35, 4) is DescribeLogDirsRequest
    assert request_type(35, 3).__module__.startswith("kio.")


def test_kafkas_requests_read_the_same_and_encode_byte_for_byte() -> None:
    beat = KioHeartbeat(
        broker_id=BrokerId(3),
        broker_epoch=i64(7),
        current_metadata_offset=i64(99),
        want_fence=False,
        want_shut_down=True,
    )
    wire = _bytes(beat)
    ours, size = entity_reader(BrokerHeartbeatRequest)(wire, 0)
    assert size == len(wire) and ours.partition_loads == () and _bytes(ours) == wire
    topics = (kio_log_dirs.DescribableLogDirTopic(topic=TopicName("t"), partitions=(i32(1),)),)
    wire = _bytes(kio_log_dirs.DescribeLogDirsRequest(topics=topics))
    asked, _ = entity_reader(DescribeLogDirsRequest)(wire, 0)
    assert not asked.include_partition_loads and _bytes(asked) == wire


def test_stroms_fields_round_trip() -> None:
    load = PartitionLoad(
        topic="orders",
        partition=i32(4),
        size=i64(1 << 40),
        bytes_in_rate=f64(1234.5),
        bytes_out_rate=f64(0.25),
    )
    beat = BrokerHeartbeatRequest(
        broker_id=BrokerId(3),
        current_metadata_offset=i64(1),
        want_fence=False,
        want_shut_down=False,
        partition_loads=(load,),
    )
    assert entity_reader(BrokerHeartbeatRequest)(_bytes(beat), 0)[0] == beat
    ask = DescribeLogDirsRequest(topics=None, include_partition_loads=True)
    assert entity_reader(DescribeLogDirsRequest)(_bytes(ask), 0)[0] == ask
