"""Delayed produce and fetch: completion, wake-ups by high watermark advances, expiry, shutdown."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from data_path_harness import NODE_ID, DataPath, batch, registration, run

from strom.common import ErrorCode, TopicPartition
from strom.server.replica.delayed_fetch import DelayedFetch, FetchPartitionStatus
from strom.server.replica.delayed_produce import DelayedProduce, acks_outcomes
from strom.server.replica.purgatory import DelayedOperation, Purgatory

T0 = TopicPartition("orders", 0)
T1 = TopicPartition("orders", 1)


@pytest.fixture
def data(tmp_path: Path) -> Iterator[DataPath]:
    path = DataPath(tmp_path)
    yield path
    path.close()


def wire(data: DataPath) -> tuple[Purgatory[DelayedProduce], Purgatory[DelayedFetch]]:
    """The replica manager's own purgatories, which its high watermark moves wake."""
    return data.replica_manager.produce_purgatory, data.replica_manager.fetch_purgatory


def done(operation: DelayedOperation) -> bool:
    return operation.completed


def append(data: DataPath, tp: TopicPartition, count: int = 1) -> int:
    [(_, result)] = data.replica_manager.append_to_local_log([(tp, batch(count))], required_acks=-1)
    assert result.error == ErrorCode.none
    return result.last_offset + 1


def delayed_fetch(
    data: DataPath,
    *,
    min_bytes: int,
    timeout_ms: int = 5000,
    offset: int = 0,
    max_bytes: int = 10**6,
) -> DelayedFetch:
    return DelayedFetch(
        timeout_ms=timeout_ms,
        min_bytes=min_bytes,
        partitions={T0: FetchPartitionStatus(fetch_offset=offset, max_bytes=max_bytes)},
        replica_manager=data.replica_manager,
    )


def test_produce_on_one_node_completes_at_once(data: DataPath) -> None:
    data.create({"orders": 2})
    produce, _ = wire(data)

    async def scenario() -> None:
        required = {T0: append(data, T0, 3), T1: append(data, T1)}
        outcomes = acks_outcomes(data.replica_manager, required)
        assert outcomes == {T0: ErrorCode.none, T1: ErrorCode.none}
        operation = DelayedProduce(
            timeout_ms=1000, required_offsets=required, replica_manager=data.replica_manager
        )
        assert produce.try_complete_else_watch(operation, required)
        assert operation.errors == {T0: ErrorCode.none, T1: ErrorCode.none}
        assert len(produce) == 0

    run(scenario)


def test_produce_waits_for_the_follower(data: DataPath) -> None:
    data.create({"orders": {0: registration(isr=(NODE_ID, 2))}})
    produce, _ = wire(data)

    async def scenario() -> None:
        required = {T0: append(data, T0, 2)}
        assert acks_outcomes(data.replica_manager, required) is None
        operation = DelayedProduce(
            timeout_ms=5000, required_offsets=required, replica_manager=data.replica_manager
        )
        assert not produce.try_complete_else_watch(operation, required)
        assert produce.watched(T0) == 1
        waiter = asyncio.ensure_future(operation.wait())
        await asyncio.sleep(0)
        data.replica_manager.record_follower_fetch(T0, replica_id=2, log_end_offset=1)
        await asyncio.sleep(0)
        assert not waiter.done()
        data.replica_manager.record_follower_fetch(T0, replica_id=2, log_end_offset=2)
        await asyncio.wait_for(waiter, 1)
        assert operation.errors == {T0: ErrorCode.none}
        assert not operation.expired
        await asyncio.sleep(0)
        assert len(produce) == 0 and produce.watched(T0) == 0

    run(scenario)


def test_produce_times_out(data: DataPath) -> None:
    data.create({"orders": {0: registration(isr=(NODE_ID, 2))}})
    produce, _ = wire(data)

    async def scenario() -> None:
        required = {T0: append(data, T0)}
        operation = DelayedProduce(
            timeout_ms=50, required_offsets=required, replica_manager=data.replica_manager
        )
        started = time.monotonic()
        assert not produce.try_complete_else_watch(operation, required)
        await operation.wait()
        assert time.monotonic() - started >= 0.04
        assert operation.expired
        assert operation.errors == {T0: ErrorCode.request_timed_out}

    run(scenario)


def test_fetch_wakes_on_append(data: DataPath) -> None:
    data.create({"orders": 1})
    _, fetch = wire(data)

    async def scenario() -> None:
        operation = delayed_fetch(data, min_bytes=1)
        assert not fetch.try_complete_else_watch(operation, [T0])
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, append, data, T0)
        await operation.wait()
        elapsed = time.monotonic() - started
        assert 0.04 <= elapsed < 2
        assert not operation.expired
        assert operation.readable == len(batch(1))

    run(scenario)


def test_fetch_accumulates_until_min_bytes(data: DataPath) -> None:
    data.create({"orders": 2})
    _, fetch = wire(data)

    async def scenario() -> None:
        size = len(batch(1))
        operation = delayed_fetch(data, min_bytes=3 * size)
        assert not fetch.try_complete_else_watch(operation, [T0])
        append(data, T1)  # not watched: no effect
        append(data, T0)
        append(data, T0)
        assert not done(operation)
        assert operation.readable == 2 * size
        append(data, T0)
        assert done(operation)
        await operation.wait()

    run(scenario)


def test_fetch_counts_at_most_partition_max_bytes(data: DataPath) -> None:
    data.create({"orders": 1})
    _, fetch = wire(data)

    async def scenario() -> None:
        operation = delayed_fetch(data, min_bytes=1000, max_bytes=100, timeout_ms=30)
        assert not fetch.try_complete_else_watch(operation, [T0])
        for _ in range(20):
            append(data, T0)
        assert operation.readable == 100
        await operation.wait()
        assert operation.expired

    run(scenario)


def test_fetch_above_the_new_high_watermark_is_not_woken(data: DataPath) -> None:
    data.create({"orders": 1})
    append(data, T0, 5)
    _, fetch = wire(data)

    async def scenario() -> None:
        operation = delayed_fetch(data, min_bytes=1, offset=5, timeout_ms=30)
        assert not fetch.try_complete_else_watch(operation, [T0])
        fetch.check_and_complete(T0)  # a wake-up without news changes nothing
        assert not done(operation)
        append(data, T0)
        assert done(operation)

    run(scenario)


def test_fetch_completes_when_its_partition_goes(data: DataPath) -> None:
    data.create({"orders": 1})
    _, fetch = wire(data)

    async def scenario() -> None:
        operation = delayed_fetch(data, min_bytes=1)
        assert not fetch.try_complete_else_watch(operation, [T0])
        data.create({"other": 1})
        fetch.check_and_complete(T0)
        assert done(operation) and not operation.expired

    run(scenario)


def test_fetch_out_of_range_completes_at_once(data: DataPath) -> None:
    data.create({"orders": 1})
    _, fetch = wire(data)

    async def scenario() -> None:
        operation = delayed_fetch(data, min_bytes=1, offset=7)
        assert fetch.try_complete_else_watch(operation, [T0])

    run(scenario)


def test_shutdown_completes_everything(data: DataPath) -> None:
    data.create({"orders": 1})
    _, fetch = wire(data)

    async def scenario() -> None:
        operations = [delayed_fetch(data, min_bytes=1) for _ in range(3)]
        for operation in operations:
            assert not fetch.try_complete_else_watch(operation, [T0])
        fetch.shutdown()
        await asyncio.gather(*(operation.wait() for operation in operations))
        assert fetch.try_complete_else_watch(delayed_fetch(data, min_bytes=1), [T0])
        await asyncio.sleep(0)
        assert len(fetch) == 0

    run(scenario)


def test_cancelled_waiter_leaves_the_operation(data: DataPath) -> None:
    data.create({"orders": 1})
    _, fetch = wire(data)

    async def scenario() -> None:
        operation = delayed_fetch(data, min_bytes=1)
        fetch.try_complete_else_watch(operation, [T0])
        waiter = asyncio.ensure_future(operation.wait())
        await asyncio.sleep(0)
        waiter.cancel()
        await asyncio.sleep(0)
        assert not done(operation)
        append(data, T0)
        assert done(operation)

    run(scenario)


def test_hooks_run_once_in_order() -> None:
    calls: list[str] = []

    class Probe(DelayedOperation):
        def try_complete(self) -> bool:
            return False

        def on_complete(self) -> None:
            calls.append("complete")

        def on_expiration(self) -> None:
            calls.append("expire")

    async def scenario() -> None:
        purgatory: Purgatory[Probe] = Purgatory("probe")
        probe = Probe(timeout_ms=10)
        purgatory.try_complete_else_watch(probe, [T0])
        await probe.wait()
        assert not probe.force_complete()
        await asyncio.sleep(0.02)

    run(scenario)
    assert calls == ["complete", "expire"]


def test_an_empty_purgatory_is_not_false() -> None:
    empty: Purgatory[DelayedFetch] = Purgatory("ReplicaFetch")
    assert len(empty) == 0
    assert (empty or None) is empty
