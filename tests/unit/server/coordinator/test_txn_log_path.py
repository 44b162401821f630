"""The log side of transactions in the replica manager: markers, the last stable offset,
read_committed reads with their aborted transactions, ListOffsets, marker listeners and the
read_committed long poll."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from data_path_harness import NODE_ID, DataPath, registration

from strom.common import ErrorCode, TopicPartition
from strom.protocol.batch import scan_batches
from strom.protocol.records import Record, build_batch, iter_records
from strom.server.replica.delayed_fetch import DelayedFetch, FetchPartitionStatus
from strom.server.replica.replica_manager import READ_COMMITTED, READ_UNCOMMITTED
from strom.storage.txn_index import AbortedTxn

T0 = TopicPartition("orders", 0)


@pytest.fixture
def data(tmp_path: Path) -> Iterator[DataPath]:
    path = DataPath(tmp_path)
    yield path
    path.close()


def txn_batch(producer_id: int, sequence: int, *values: bytes) -> bytes:
    return build_batch(
        [Record(i, 1_000, None, value) for i, value in enumerate(values)],
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=sequence,
        is_transactional=True,
    )


def produce(data: DataPath, records: bytes, tp: TopicPartition = T0) -> int:
    [(_, result)] = data.replica_manager.append_to_local_log([(tp, records)], required_acks=1)
    assert result.error == ErrorCode.none
    return result.base_offset


def marker(data: DataPath, producer_id: int, *, commit: bool, epoch: int = 0) -> ErrorCode:
    return data.replica_manager.write_txn_marker(
        T0, producer_id=producer_id, producer_epoch=epoch, commit=commit, coordinator_epoch=0
    )


def read_values(data: DataPath, isolation: int, offset: int = 0) -> tuple[list[bytes], object]:
    read = data.replica_manager.read(
        T0, fetch_offset=offset, max_bytes=1 << 20, min_one_message=True, isolation_level=isolation
    )
    try:
        assert read.error == ErrorCode.none
        raw = b"".join(region.read() for region in read.regions)
        found, _ = scan_batches(raw)
        values = [
            r.value
            for position, header in found
            if not header.is_control
            for r in iter_records(raw[position : position + header.size])
            if r.value is not None
        ]
    finally:
        read.close()
    return values, read


def done(operation: DelayedFetch) -> bool:
    return operation.completed


def test_read_committed_stops_at_the_last_stable_offset(data: DataPath) -> None:
    data.create({"orders": 1})
    rm = data.replica_manager
    produce(data, build_batch([Record(0, 1_000, None, b"plain")]))
    produce(data, txn_batch(7, 0, b"t1", b"t2"))  # 1..2
    partition = rm.partition(T0)
    assert (partition.log.high_watermark, partition.log.last_stable_offset) == (3, 1)
    values, read = read_values(data, READ_COMMITTED)
    assert values == [b"plain"]
    assert (read.high_watermark, read.last_stable_offset) == (3, 1)  # type: ignore[attr-defined]
    assert read.aborted_transactions == ()  # type: ignore[attr-defined]
    uncommitted, read = read_values(data, READ_UNCOMMITTED)
    assert uncommitted == [b"plain", b"t1", b"t2"]
    assert read.aborted_transactions is None  # type: ignore[attr-defined]
    assert rm.list_offset(T0, timestamp=-1, isolation_level=READ_COMMITTED).offset == 1
    assert rm.list_offset(T0, timestamp=-1, isolation_level=READ_UNCOMMITTED).offset == 3

    assert marker(data, 7, commit=True) == ErrorCode.none
    assert (partition.log.high_watermark, partition.log.last_stable_offset) == (4, 4)
    values, _ = read_values(data, READ_COMMITTED)
    assert values == [b"plain", b"t1", b"t2"]
    assert rm.list_offset(T0, timestamp=-1, isolation_level=READ_COMMITTED).offset == 4


def test_read_committed_returns_the_aborted_transactions(data: DataPath) -> None:
    data.create({"orders": 1})
    produce(data, txn_batch(7, 0, b"a"))  # 0
    produce(data, txn_batch(8, 0, b"b"))  # 1
    assert marker(data, 7, commit=False) == ErrorCode.none  # 2
    assert marker(data, 8, commit=True) == ErrorCode.none  # 3
    _, read = read_values(data, READ_COMMITTED)
    assert read.aborted_transactions == (AbortedTxn(7, 0, 2, 1),)  # type: ignore[attr-defined]
    _, later = read_values(data, READ_COMMITTED, offset=3)
    assert later.aborted_transactions == ()  # type: ignore[attr-defined]


def test_marker_errors(data: DataPath) -> None:
    data.create({"orders": 1, "elsewhere": {0: registration(leader=2, isr=(2,))}})
    rm = data.replica_manager
    produce(data, txn_batch(7, 0, b"a"))
    assert (
        rm.write_txn_marker(
            TopicPartition("nope", 0),
            producer_id=7,
            producer_epoch=0,
            commit=True,
            coordinator_epoch=0,
        )
        == ErrorCode.unknown_topic_or_partition
    )
    assert (
        rm.write_txn_marker(
            TopicPartition("elsewhere", 0),
            producer_id=7,
            producer_epoch=0,
            commit=True,
            coordinator_epoch=0,
        )
        == ErrorCode.not_leader_or_follower
    )
    produce(
        data,
        build_batch(
            [Record(0, 1, None, b"x")],
            producer_id=9,
            producer_epoch=4,
            base_sequence=0,
            is_transactional=True,
        ),
    )
    assert marker(data, 9, commit=True, epoch=3) == ErrorCode.invalid_producer_epoch
    assert (
        rm.write_txn_marker(T0, producer_id=7, producer_epoch=0, commit=True, coordinator_epoch=5)
        == ErrorCode.none
    )
    produce(data, txn_batch(7, 1, b"b"))
    assert (
        rm.write_txn_marker(T0, producer_id=7, producer_epoch=0, commit=True, coordinator_epoch=4)
        == ErrorCode.transaction_coordinator_fenced
    )
    assert rm.partition(T0).log.last_stable_offset == 1  # pid 9's transaction from 1 is open


def test_markers_go_to_internal_topics_and_listeners_hear_of_them(data: DataPath) -> None:
    offsets = TopicPartition("__consumer_offsets", 0)
    data.create({"__consumer_offsets": 1, "orders": 1})
    heard: list[tuple[TopicPartition, int, int, bool]] = []
    data.replica_manager.add_txn_marker_listener(
        lambda tp, pid, epoch, commit: heard.append((tp, pid, epoch, commit))
    )
    assert (
        data.replica_manager.write_txn_marker(
            offsets, producer_id=3, producer_epoch=1, commit=True, coordinator_epoch=0
        )
        == ErrorCode.none
    )
    assert marker(data, 3, commit=False, epoch=1) == ErrorCode.none
    assert heard == [(offsets, 3, 1, True), (T0, 3, 1, False)]
    assert data.replica_manager.partition(offsets).log.high_watermark == 1
    assert marker(data, 3, commit=False, epoch=0) == ErrorCode.invalid_producer_epoch
    assert len(heard) == 2  # nothing appended, nobody told


def test_last_stable_offset_is_bounded_by_the_high_watermark(data: DataPath) -> None:
    data.create({"orders": {0: registration(isr=(NODE_ID, 2))}})
    rm = data.replica_manager
    produce(data, build_batch([Record(0, 1, None, b"x")] * 1))
    produce(data, txn_batch(7, 0, b"a"))
    partition = rm.partition(T0)
    assert (partition.log.high_watermark, partition.log.last_stable_offset) == (0, 0)
    rm.record_follower_fetch(T0, replica_id=2, log_end_offset=2)
    assert (partition.log.high_watermark, partition.log.last_stable_offset) == (2, 1)


def test_a_read_committed_long_poll_wakes_when_the_marker_lands(data: DataPath) -> None:
    data.create({"orders": 1})
    fetch = data.replica_manager.fetch_purgatory

    async def scenario() -> None:
        operation = DelayedFetch(
            timeout_ms=5000,
            min_bytes=1,
            partitions={T0: FetchPartitionStatus(fetch_offset=0, max_bytes=1 << 20)},
            replica_manager=data.replica_manager,
            isolation_level=READ_COMMITTED,
        )
        assert not fetch.try_complete_else_watch(operation, [T0])
        produce(data, txn_batch(7, 0, b"a", b"b"))
        assert not done(operation)  # the high watermark moved, the last stable offset not
        assert marker(data, 7, commit=True) == ErrorCode.none
        assert done(operation) and not operation.expired
        assert operation.readable > 0
        await operation.wait()

    asyncio.run(asyncio.wait_for(scenario(), timeout=10))
