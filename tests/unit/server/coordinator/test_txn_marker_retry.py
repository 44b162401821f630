"""The transaction coordinator's marker channel writes every marker, retrying partitions that
cannot take one yet, and gives up on those that will never take it (Kafka's marker channel)."""

from __future__ import annotations

import asyncio
import itertools
from typing import cast

from data_path_harness import NODE_ID, image_of, registration

from strom.common import ErrorCode, TopicPartition
from strom.common.clock import ManualClock
from strom.common.timer import ManualTimer
from strom.server.coordinator.txn_markers import (
    MARKER_RETRY_BACKOFF_MAX_MS,
    Marker,
    TxnMarkerChannel,
)
from strom.server.replica.replica_manager import ReplicaManager

ORDERS = TopicPartition("orders", 0)
GONE = TopicPartition("gone", 0)
BUSY = TopicPartition("busy", 0)
ELSEWHERE = TopicPartition("elsewhere", 0)


class Partitions:
    """A replica manager whose partitions (led here) answer scripted errors."""

    node_id = NODE_ID

    def __init__(self, answers: dict[TopicPartition, list[ErrorCode]]) -> None:
        self.answers = answers
        self.written: list[TopicPartition] = []
        led = {tp.topic: {0: registration()} for tp in answers if tp != GONE}
        self.image = image_of(led)

    def write_txn_marker(self, tp: TopicPartition, **_: object) -> ErrorCode:
        queue = self.answers[tp]
        code = queue.pop(0) if len(queue) > 1 else queue[0]
        if code is ErrorCode.none:
            self.written.append(tp)
        return code

    def log_end_offset(self, tp: TopicPartition) -> int:
        return self.written.count(tp)


def deliver(partitions: Partitions, acks: ErrorCode = ErrorCode.none) -> float:
    """Deliver a COMMIT to all scripted partitions; seconds until it returns."""

    async def acknowledged(tp: TopicPartition, offset: int) -> ErrorCode:
        assert offset == partitions.written.count(tp)
        return acks

    async def run() -> float:
        channel = TxnMarkerChannel(
            replica_manager=cast(ReplicaManager, partitions), clients=None, wait_acks=acknowledged
        )
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.wait_for(channel.deliver(Marker(7, 0, True, 0), list(partitions.answers)), 5)
        return loop.time() - start

    return asyncio.run(run())


def test_every_partition_written_at_once_when_all_take_it() -> None:
    partitions = Partitions({ORDERS: [ErrorCode.none], BUSY: [ErrorCode.none]})
    assert deliver(partitions) < 0.05
    assert sorted(partitions.written) == [BUSY, ORDERS]


def test_a_partition_not_ready_is_retried_until_written() -> None:
    not_ready = [ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error, ErrorCode.none]
    partitions = Partitions({ORDERS: [ErrorCode.none], BUSY: not_ready})
    assert deliver(partitions) >= 0.2  # two backoffs
    assert partitions.written == [ORDERS, BUSY]


def test_a_deleted_partition_or_newer_epoch_is_given_up_on() -> None:
    partitions = Partitions(
        {
            GONE: [ErrorCode.none],
            BUSY: [ErrorCode.invalid_producer_epoch],
            ORDERS: [ErrorCode.none],
        }
    )
    assert deliver(partitions) < 0.05
    assert partitions.written == [ORDERS]


def test_a_marker_not_replicated_in_time_is_written_again() -> None:
    """acks=all timed out: the marker may be lost with its leader, so it is written again."""
    partitions = Partitions({ORDERS: [ErrorCode.none]})

    async def run() -> None:
        outcomes = iter([ErrorCode.request_timed_out, ErrorCode.none])

        async def acknowledged(tp: TopicPartition, offset: int) -> ErrorCode:
            return next(outcomes)

        channel = TxnMarkerChannel(
            replica_manager=cast(ReplicaManager, partitions), clients=None, wait_acks=acknowledged
        )
        await asyncio.wait_for(channel.deliver(Marker(7, 0, False, 0), [ORDERS]), 5)

    asyncio.run(run())
    assert partitions.written == [ORDERS, ORDERS]


def test_a_partition_led_elsewhere_without_connections_is_retried() -> None:
    partitions = Partitions({ORDERS: [ErrorCode.none]})
    partitions.image = image_of({"orders": {0: registration(leader=2, isr=(2,))}})

    async def run() -> None:
        async def acknowledged(tp: TopicPartition, offset: int) -> ErrorCode:
            return ErrorCode.none

        channel = TxnMarkerChannel(
            replica_manager=cast(ReplicaManager, partitions), clients=None, wait_acks=acknowledged
        )
        task = asyncio.create_task(channel.deliver(Marker(7, 0, True, 0), [ORDERS]))
        await asyncio.sleep(0.25)
        assert not task.done()  # still trying broker 2
        partitions.image = image_of({"orders": {0: registration()}})  # led here now
        await asyncio.wait_for(task, 5)

    asyncio.run(run())
    assert partitions.written == [ORDERS]


def test_retries_of_the_same_markers_back_off() -> None:
    """A partition below min ISR for a while: the waits (on the channel's timer, virtual time
    here) double up to the cap instead of a request every 100 ms (109 markers were once
    written in one outage)."""
    not_ready = [ErrorCode.not_enough_replicas] * 6 + [ErrorCode.none]
    partitions = Partitions({ORDERS: not_ready})
    timer = ManualTimer(ManualClock())
    tries: list[int] = []
    write = partitions.write_txn_marker

    def write_and_note(tp: TopicPartition, **rest: object) -> ErrorCode:
        tries.append(timer.clock.monotonic_ms())
        return write(tp, **rest)

    partitions.write_txn_marker = write_and_note  # type: ignore[method-assign]

    async def acknowledged(tp: TopicPartition, offset: int) -> ErrorCode:
        return ErrorCode.none

    async def run() -> None:
        channel = TxnMarkerChannel(
            replica_manager=cast(ReplicaManager, partitions),
            clients=None,
            wait_acks=acknowledged,
            timer=timer,
        )
        task = asyncio.create_task(channel.deliver(Marker(7, 0, True, 0), [ORDERS]))
        while not task.done():
            await asyncio.sleep(0)
            if (due := timer.next_due_ms()) is not None:
                timer.advance_to(due)
        await task

    asyncio.run(run())
    waits = [later - earlier for earlier, later in itertools.pairwise(tries)]
    cap = MARKER_RETRY_BACKOFF_MAX_MS
    assert waits == [100, 200, 400, 800, cap, cap]
    assert partitions.written == [ORDERS]
