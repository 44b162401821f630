"""The transaction coordinator's shell writes every marker, retrying partitions that cannot
take one yet, and gives up on those that will never take it (Kafka's marker channel)."""

from __future__ import annotations

import asyncio
from typing import cast

from strom.common import ErrorCode, TopicPartition
from strom.common.clock import ManualClock
from strom.config import ServerConfig
from strom.server.auto_topics import AutoTopicCreator
from strom.server.replica_manager import ReplicaManager
from strom.server.txn_coordinator_runtime import TxnCoordinatorRuntime

ORDERS = TopicPartition("orders", 0)
GONE = TopicPartition("gone", 0)
BUSY = TopicPartition("busy", 0)


class Partitions:
    """``write_txn_marker`` of a replica manager whose partitions answer scripted errors."""

    def __init__(self, answers: dict[TopicPartition, list[ErrorCode]]) -> None:
        self.answers = answers
        self.written: list[TopicPartition] = []

    def write_txn_marker(self, tp: TopicPartition, **_: object) -> ErrorCode:
        queue = self.answers[tp]
        code = queue.pop(0) if len(queue) > 1 else queue[0]
        if code is ErrorCode.none:
            self.written.append(tp)
        return code


def write_markers(partitions: Partitions) -> float:
    """Run ``write_markers`` for all scripted partitions; seconds until ``done``."""

    async def run() -> float:
        runtime = TxnCoordinatorRuntime(
            config=ServerConfig(),
            replica_manager=cast(ReplicaManager, partitions),
            auto_topics=cast(AutoTopicCreator, None),
            clock=ManualClock(),
        )
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[float] = loop.create_future()
        start = loop.time()
        runtime.write_markers(
            producer_id=7,
            producer_epoch=0,
            commit=True,
            coordinator_epoch=0,
            partitions=list(partitions.answers),
            done=lambda: finished.set_result(loop.time()),
        )
        return await asyncio.wait_for(finished, 5) - start

    return asyncio.run(run())


def test_every_partition_written_at_once_when_all_take_it() -> None:
    partitions = Partitions({ORDERS: [ErrorCode.none], BUSY: [ErrorCode.none]})
    assert write_markers(partitions) < 0.05
    assert sorted(partitions.written) == [BUSY, ORDERS]


def test_a_partition_not_ready_is_retried_until_written() -> None:
    not_ready = [ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error, ErrorCode.none]
    partitions = Partitions({ORDERS: [ErrorCode.none], BUSY: not_ready})
    assert write_markers(partitions) >= 0.2  # two backoffs
    assert partitions.written == [ORDERS, BUSY]


def test_a_deleted_partition_or_newer_epoch_is_given_up_on() -> None:
    partitions = Partitions(
        {
            GONE: [ErrorCode.unknown_topic_or_partition],
            BUSY: [ErrorCode.invalid_producer_epoch],
            ORDERS: [ErrorCode.none],
        }
    )
    assert write_markers(partitions) < 0.05
    assert partitions.written == [ORDERS]
