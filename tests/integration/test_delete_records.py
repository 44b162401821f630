"""DeleteRecords against a real ``strom server``: AdminClient.delete_records, raw errors."""

from __future__ import annotations

import datetime
import signal
import sys
from typing import Any

import pytest
from confluent_kafka import OFFSET_END, TopicPartition
from confluent_kafka.admin import AdminClient
from data_clients import (
    consume,
    consumer,
    create_topic,
    fetch_v4,
    produce_v3,
    records_batch,
    unique_topic,
)
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta, i64
from strom_harness import StartServer, StromServer

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey, request_type


def _fill(server: StromServer, topic: str, batches: int, *, partition: int = 0) -> None:
    with server.connect() as wire:
        for i in range(batches):
            response = wire.request(
                produce_v3({(topic, partition): records_batch([b"%d-a" % i, b"%d-b" % i])})
            )
            assert response.responses[0].partition_responses[0].error_code == ErrorCode.none


def _delete(
    server: StromServer, topic: str, offsets: dict[int, int], *, version: int = 2
) -> dict[int, tuple[int, int]]:
    request_class: Any = request_type(ApiKey.DELETE_RECORDS, version)
    schema: Any = sys.modules[request_class.__module__]
    request = request_class(
        topics=(
            schema.DeleteRecordsTopic(
                name=TopicName(topic),
                partitions=tuple(
                    schema.DeleteRecordsPartition(partition_index=i32(p), offset=i64(o))
                    for p, o in offsets.items()
                ),
            ),
        ),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
    )
    with server.connect() as wire:
        response = wire.request(request)
    return {
        p.partition_index: (p.error_code, p.low_watermark)
        for t in response.topics
        for p in t.partitions
    }


def test_admin_delete_records(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("delete"), partitions=2)
    _fill(strom_server, topic, 5)
    _fill(strom_server, topic, 3, partition=1)
    client = AdminClient({"bootstrap.servers": strom_server.bootstrap})
    futures = client.delete_records(
        [TopicPartition(topic, 0, 4), TopicPartition(topic, 1, OFFSET_END)]
    )
    results = {tp.partition: future.result(10) for tp, future in futures.items()}
    assert results[0].low_watermark == 4
    assert results[1].low_watermark == 6  # -1: up to the high watermark
    reader = consumer(strom_server.bootstrap)
    try:
        assert reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (4, 10)
        assert reader.get_watermark_offsets(TopicPartition(topic, 1), timeout=10) == (6, 6)
    finally:
        reader.close()
    # A consumer reset to the earliest offset starts at the new log start.
    messages = consume(strom_server.bootstrap, topic, count=6, start=-2)
    assert [m.offset() for m in messages] == [4, 5, 6, 7, 8, 9]
    # Reading below it is out of range.
    with strom_server.connect() as wire:
        response = wire.request(fetch_v4({(topic, 0): 1}))
    assert response.responses[0].partitions[0].error_code == ErrorCode.offset_out_of_range


def test_delete_records_errors(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("delete-errors"))
    compacted = create_topic(
        strom_server.bootstrap, unique_topic("compacted"), config={"cleanup.policy": "compact"}
    )
    _fill(strom_server, topic, 2)
    assert _delete(strom_server, topic, {0: 5}) == {0: (ErrorCode.offset_out_of_range, -1)}
    assert _delete(strom_server, topic, {0: -7}) == {0: (ErrorCode.offset_out_of_range, -1)}
    assert _delete(strom_server, topic, {3: 0}) == {3: (ErrorCode.unknown_topic_or_partition, -1)}
    assert _delete(strom_server, compacted, {0: 0}) == {0: (ErrorCode.policy_violation, -1)}
    assert _delete(strom_server, topic, {0: 3}) == {0: (ErrorCode.none, 3)}
    assert _delete(strom_server, topic, {0: 1}) == {0: (ErrorCode.none, 3)}  # never backwards
    strom_server.wait_for_line("deleted records of")  # its log reader may be a moment behind


@pytest.mark.parametrize("version", list(KAFKA_BROKER_VERSIONS[ApiKey.DELETE_RECORDS]))
def test_raw_delete_records_every_version(strom_server: StromServer, version: int) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic(f"delete-v{version}"))
    _fill(strom_server, topic, 3)
    assert _delete(strom_server, topic, {0: 2}, version=version) == {0: (ErrorCode.none, 2)}
    assert _delete(strom_server, topic, {0: -1}, version=version) == {0: (ErrorCode.none, 6)}


def test_deleted_records_stay_deleted_after_kill_9(start_server: StartServer) -> None:
    """DeleteRecords writes the log start checkpoint before it answers: kill -9 right after it
    (no periodic checkpoint in between, no segment deleted) cannot bring the records back."""
    no_periodic_checkpoint = {"log.flush.offset.checkpoint.interval.ms": "3600000"}
    server = start_server(overrides=no_periodic_checkpoint)
    topic = create_topic(server.bootstrap, unique_topic("delete-crash"))
    _fill(server, topic, 4)
    assert _delete(server, topic, {0: 5}) == {0: (ErrorCode.none, 5)}
    server.stop(signal.SIGKILL)
    restarted = start_server(overrides=no_periodic_checkpoint)
    reader = consumer(restarted.bootstrap)
    try:
        # ListOffsets earliest and latest.
        assert reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (5, 8)
    finally:
        reader.close()
    with restarted.connect() as wire:
        below = wire.request(fetch_v4({(topic, 0): 4}))
        at_start = wire.request(fetch_v4({(topic, 0): 5}))
    assert below.responses[0].partitions[0].error_code == ErrorCode.offset_out_of_range
    assert at_start.responses[0].partitions[0].error_code == ErrorCode.none
    messages = consume(restarted.bootstrap, topic, count=3, start=-2)
    assert [m.offset() for m in messages] == [5, 6, 7]
