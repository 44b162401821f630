"""The replica manager's Kafka-shaped entry points: ``append_records`` (appends, then the
acks=all wait in its produce purgatory) and ``fetch_messages`` (the byte budget, answering at
once or parking in its consumer or follower fetch purgatory), with the handlers out of the way."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from data_path_harness import NODE_ID, DataPath, batch, image_of, registration, run

from strom.common import ErrorCode, TopicPartition
from strom.protocol.batch import scan_batches
from strom.protocol.records import iter_records
from strom.server.replica.fetch_session import PartitionFetch, SessionPartition
from strom.server.replica.replica_manager import (
    READ_LOG_END,
    AppendResult,
    FetchParams,
    ReadResultInfo,
)
from strom.server.replica.replica_results import ACKS_TIMED_OUT_MESSAGE

T0 = TopicPartition("orders", 0)
T1 = TopicPartition("orders", 1)
FOLLOWER = 2


@pytest.fixture
def data(tmp_path: Path) -> Iterator[DataPath]:
    path = DataPath(tmp_path)
    yield path
    path.close()


def with_follower(data: DataPath, partitions: int = 1) -> None:
    data.create({"orders": {p: registration(isr=(NODE_ID, FOLLOWER)) for p in range(partitions)}})


async def produce(
    data: DataPath,
    tp: TopicPartition,
    *,
    acks: int = -1,
    timeout_ms: int = 5000,
    value: bytes = b"v",
) -> AppendResult:
    [(_, result)] = await data.replica_manager.append_records(
        [(tp, batch(value=value))], required_acks=acks, timeout_ms=timeout_ms
    )
    return result


def values(data: DataPath, tp: TopicPartition) -> list[bytes]:
    partition_log = data.log_manager.get(tp)
    assert partition_log is not None
    raw = partition_log.read_bytes(0, max_bytes=1 << 20)
    found, _ = scan_batches(raw)
    return [next(iter_records(raw[position:])).value or b"" for position, _ in found]


# --- append_records ----------------------------------------------------------------------


def test_acks_all_on_one_node_answers_without_waiting(data: DataPath) -> None:
    data.create({"orders": 2})

    async def scenario() -> None:
        results = await data.replica_manager.append_records(
            [(T0, batch(3)), (T1, batch())], required_acks=-1, timeout_ms=5000
        )
        assert [(tp, r.error, r.base_offset) for tp, r in results] == [
            (T0, ErrorCode.none, 0),
            (T1, ErrorCode.none, 0),
        ]
        assert len(data.replica_manager.produce_purgatory) == 0

    run(scenario)


def test_acks_all_waits_until_the_follower_has_the_batch(data: DataPath) -> None:
    with_follower(data)
    manager = data.replica_manager

    async def scenario() -> None:
        waiting = asyncio.ensure_future(produce(data, T0))
        await asyncio.sleep(0)
        assert manager.partition(T0).log_end_offset == 1  # appended before waiting
        assert not waiting.done() and len(manager.produce_purgatory) == 1
        manager.record_follower_fetch(T0, replica_id=FOLLOWER, log_end_offset=1)
        result = await waiting
        assert (result.error, result.base_offset, result.message) == (ErrorCode.none, 0, None)

    run(scenario)


def test_acks_one_and_zero_do_not_wait(data: DataPath) -> None:
    with_follower(data)

    async def scenario() -> None:
        for acks in (1, 0):
            result = await produce(data, T0, acks=acks)
            assert result.error == ErrorCode.none
        assert len(data.replica_manager.produce_purgatory) == 0

    run(scenario)


def test_acks_all_times_out_with_the_batch_in_the_log(data: DataPath) -> None:
    with_follower(data)

    async def scenario() -> None:
        result = await produce(data, T0, timeout_ms=30)
        assert result.error == ErrorCode.request_timed_out
        assert result.message == ACKS_TIMED_OUT_MESSAGE
        assert result.appended and result.base_offset == 0

    run(scenario)


def test_acks_all_fails_when_leadership_moves(data: DataPath) -> None:
    with_follower(data)
    manager = data.replica_manager

    async def scenario() -> None:
        waiting = asyncio.ensure_future(produce(data, T0))
        await asyncio.sleep(0)
        data.metadata.image = image_of({"orders": {0: registration(leader=FOLLOWER)}})
        manager.produce_purgatory.check_and_complete(T0)  # as the leadership listener does
        result = await waiting
        assert result.error == ErrorCode.not_leader_or_follower
        assert result.appended and result.message is None

    run(scenario)


def test_failed_appends_are_not_waited_for(data: DataPath) -> None:
    with_follower(data)

    async def scenario() -> None:
        results = await data.replica_manager.append_records(
            [(T0, b"garbage"), (TopicPartition("nowhere", 0), batch())],
            required_acks=-1,
            timeout_ms=5000,
        )
        assert [r.error for _, r in results] == [
            ErrorCode.corrupt_message,
            ErrorCode.unknown_topic_or_partition,
        ]
        assert not any(r.appended for _, r in results)
        assert len(data.replica_manager.produce_purgatory) == 0

    run(scenario)


def test_pipelined_acks_all_appends_keep_their_order(data: DataPath) -> None:
    """Requests of one connection run as tasks in order; each appends before it waits."""
    with_follower(data)
    manager = data.replica_manager

    async def scenario() -> None:
        tasks = [asyncio.ensure_future(produce(data, T0, value=v)) for v in (b"a", b"b", b"c")]
        await asyncio.sleep(0)
        assert values(data, T0) == [b"a0", b"b0", b"c0"]
        assert not any(task.done() for task in tasks)
        manager.record_follower_fetch(T0, replica_id=FOLLOWER, log_end_offset=3)
        results = await asyncio.gather(*tasks)
        assert [r.base_offset for r in results] == [0, 1, 2]

    run(scenario)


def test_when_acknowledged_answers_at_once_or_from_the_purgatory(data: DataPath) -> None:
    with_follower(data)
    manager = data.replica_manager
    heard: list[dict[TopicPartition, ErrorCode]] = []

    async def scenario() -> None:
        [(_, result)] = manager.append_to_local_log([(T0, batch())], required_acks=-1)
        assert result.last_offset + 1 == 1
        manager.when_acknowledged({T0: 1}, timeout_ms=5000, callback=heard.append)
        assert heard == []
        manager.record_follower_fetch(T0, replica_id=FOLLOWER, log_end_offset=1)
        assert heard == [{T0: ErrorCode.none}]
        manager.when_acknowledged({T0: 1}, timeout_ms=5000, callback=heard.append)
        assert heard[-1] == {T0: ErrorCode.none}  # decided: no operation, no await
        assert await manager.wait_for_acks({T0: 1}, timeout_ms=5000) == {T0: ErrorCode.none}

    run(scenario)


# --- fetch_messages ----------------------------------------------------------------------


def fetch_of(tp: TopicPartition, offset: int = 0, max_bytes: int = 1 << 20, **kwargs: int) -> Any:
    request = PartitionFetch(fetch_offset=offset, partition_max_bytes=max_bytes, **kwargs)
    return SessionPartition(tp.topic, tp.partition), request


async def fetch(data: DataPath, partitions: list[Any], **params: int) -> list[ReadResultInfo]:
    reads = await data.replica_manager.fetch_messages(FetchParams(**params), partitions)
    for read in reads:
        read.close()
    return reads


def test_the_byte_budget_is_shared_in_order_and_the_first_batch_comes_whole(
    data: DataPath,
) -> None:
    data.create({"orders": 3})
    size = len(batch(5))
    for p in range(3):
        data.replica_manager.append_to_local_log(
            [(TopicPartition("orders", p), batch(5)), (TopicPartition("orders", p), batch(5))],
            required_acks=1,
        )

    async def scenario() -> None:
        def partitions(max_bytes: int) -> list[Any]:
            return [fetch_of(TopicPartition("orders", p), max_bytes=max_bytes) for p in range(3)]

        # each partition at most its partition_max_bytes, from what is left of max_bytes
        reads = await fetch(data, partitions(size), max_bytes=2 * size + size // 2)
        assert [read.size for read in reads] == [size, size, 0]
        # only the first batch of the first partition with data comes whole (KIP-74), even
        # when that partition is not the first
        reads = await fetch(data, partitions(10), max_bytes=1 << 20)
        assert [read.size for read in reads] == [size, 0, 0]
        reads = await fetch(data, [fetch_of(T0, 10), *partitions(10)[1:]], max_bytes=5)
        assert [read.size for read in reads] == [0, size, 0]

    run(scenario)


def test_fetch_answers_at_once(data: DataPath) -> None:
    data.create({"orders": 1})
    data.replica_manager.append_to_local_log([(T0, batch())], required_acks=1)
    manager = data.replica_manager

    async def scenario() -> None:
        # min_bytes met
        [read] = await fetch(data, [fetch_of(T0)], max_wait_ms=5000, min_bytes=1)
        assert read.size == len(batch())
        # nothing to read, but no max wait
        [read] = await fetch(data, [fetch_of(T0, 1)], max_wait_ms=0, min_bytes=1)
        assert (read.error, read.size, read.high_watermark) == (ErrorCode.none, 0, 1)
        # an error in any partition
        gone = fetch_of(TopicPartition("nowhere", 0))
        reads = await fetch(data, [fetch_of(T0, 1), gone], max_wait_ms=5000, min_bytes=1)
        assert [r.error for r in reads] == [ErrorCode.none, ErrorCode.unknown_topic_or_partition]
        # no partitions at all
        assert await fetch(data, [], max_wait_ms=5000, min_bytes=1) == []
        assert len(manager.fetch_purgatory) == 0

    run(scenario)


def test_an_unknown_topic_id_is_answered(data: DataPath) -> None:
    data.create({"orders": 1})

    async def scenario() -> None:
        key = SessionPartition("", 0, topic_id=uuid.UUID(int=7))
        [read] = await fetch(
            data, [(key, PartitionFetch(fetch_offset=0, partition_max_bytes=100))], max_wait_ms=5000
        )
        assert read.error == ErrorCode.unknown_topic_id

    run(scenario)


def test_a_consumer_long_poll_wakes_when_the_high_watermark_moves(data: DataPath) -> None:
    with_follower(data)
    manager = data.replica_manager

    async def scenario() -> None:
        waiting = asyncio.ensure_future(fetch(data, [fetch_of(T0)], max_wait_ms=5000))
        await asyncio.sleep(0)
        assert len(manager.fetch_purgatory) == 1
        manager.append_to_local_log([(T0, batch())], required_acks=1)
        await asyncio.sleep(0)
        assert not waiting.done()  # appended, but the high watermark did not move
        manager.record_follower_fetch(T0, replica_id=FOLLOWER, log_end_offset=1)
        [read] = await waiting
        assert (read.size, read.high_watermark) == (len(batch()), 1)

    run(scenario)


def test_a_long_poll_answers_empty_at_max_wait(data: DataPath) -> None:
    data.create({"orders": 1})

    async def scenario() -> None:
        [read] = await fetch(data, [fetch_of(T0)], max_wait_ms=20, min_bytes=1)
        assert (read.error, read.size) == (ErrorCode.none, 0)

    run(scenario)


def test_a_follower_fetch_waits_for_appends_and_records_its_position(data: DataPath) -> None:
    with_follower(data)
    manager = data.replica_manager
    follower = {"replica_id": FOLLOWER, "isolation_level": READ_LOG_END, "max_wait_ms": 5000}

    async def scenario() -> None:
        waiting = asyncio.ensure_future(fetch(data, [fetch_of(T0)], **follower))
        await asyncio.sleep(0)
        assert len(manager.follower_fetch_purgatory) == 1
        assert len(manager.fetch_purgatory) == 0
        manager.append_to_local_log([(T0, batch())], required_acks=1)  # the log end moved
        [read] = await waiting
        assert (read.size, read.high_watermark) == (len(batch()), 0)
        # the next fetch, from offset 1, tells the leader the follower has offset 0
        [read] = await fetch(data, [fetch_of(T0, 1)], **(follower | {"max_wait_ms": 0}))
        assert manager.partition(T0).log.high_watermark == 1

    run(scenario)


def test_a_diverging_follower_is_answered_at_once(data: DataPath) -> None:
    with_follower(data)
    manager = data.replica_manager
    manager.append_to_local_log([(T0, batch())], required_acks=1)

    async def scenario() -> None:
        [read] = await fetch(
            data,
            [fetch_of(T0, 5, last_fetched_epoch=3)],
            replica_id=FOLLOWER,
            isolation_level=READ_LOG_END,
            max_wait_ms=5000,
        )
        assert read.diverging_epoch is not None
        assert len(manager.follower_fetch_purgatory) == 0

    run(scenario)
