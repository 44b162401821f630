"""A coordinator runtime's loading (issue 25): keyed by (partition, leader epoch) as Kafka's
``onElection`` / ``onResignation``, and run off the metadata publisher, a chunk at a time, with
COORDINATOR_LOAD_IN_PROGRESS meanwhile. Over the real transaction coordinator runtime, replica
manager and logs; the event loop is the only scheduler, so every step is deterministic."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import cast

import pytest
from data_path_harness import NODE_ID, DataPath, image_of, registration, run

from strom.common import ErrorCode, TopicPartition
from strom.config import ServerConfig
from strom.coordinator.txn import TransactionLogRecord, TransactionState, partition_for
from strom.coordinator.txn.records import TransactionLogKey, TransactionLogValue, TxnPartitions
from strom.metadata import MetadataImage
from strom.protocol.records import Record, build_batch
from strom.server.channel.auto_topics import AutoTopicCreator
from strom.server.coordinator.txn_coordinator_runtime import TxnCoordinatorRuntime

TOPIC = "__transaction_state"
TP = TopicPartition(TOPIC, 0)
OTHER = 2


class Runtime(TxnCoordinatorRuntime):
    """The real runtime; the markers it would send are recorded instead."""

    markers: list[tuple[int, int]]
    """(producer id, coordinator epoch) of every marker request."""

    def write_markers(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Collection[TopicPartition],
        done: Callable[[], None],
    ) -> None:
        self.markers.append((producer_id, coordinator_epoch))


@pytest.fixture
def data(tmp_path: Path) -> Iterator[DataPath]:
    path = DataPath(tmp_path)
    path.create({TOPIC: 1, "orders": 1})
    yield path
    path.close()


def runtime(data: DataPath) -> Runtime:
    config = ServerConfig({"transaction.state.log.num.partitions": "1"})
    made = Runtime(
        config=config,
        replica_manager=data.replica_manager,
        auto_topics=cast(AutoTopicCreator, None),
        clock=data.clock,
    )
    made.markers = []
    return made


def write(data: DataPath, transactional_id: str, state: TransactionState, producer_id: int) -> None:
    """One batch of ``__transaction_state``: the id's record in ``state``."""
    value = TransactionLogValue(
        producer_id=producer_id,
        producer_epoch=0,
        transaction_timeout_ms=60_000,
        transaction_status=state.id,
        transaction_partitions=(TxnPartitions("orders", (0,)),),
        transaction_last_update_timestamp_ms=0,
        transaction_start_timestamp_ms=0,
    )
    key, encoded = TransactionLogRecord(TransactionLogKey(transactional_id), value).encode()
    batch = build_batch([Record(offset=0, timestamp=0, key=key, value=encoded)])
    [(_, result)] = data.replica_manager.append_to_local_log(
        [(TP, batch)], required_acks=1, internal_topics_allowed=True
    )
    assert result.error is ErrorCode.none


def led(*, leader: int = NODE_ID, leader_epoch: int) -> MetadataImage:
    return image_of(
        {
            TOPIC: {0: registration(leader=leader, isr=(leader,), leader_epoch=leader_epoch)},
            "orders": {0: registration()},
        }
    )


def publish(data: DataPath, made: Runtime, image: MetadataImage) -> None:
    """What the metadata loader does: the new image, then the publisher."""
    data.metadata.image = image
    made.on_metadata(None, image)


def test_a_skipped_resignation_still_reloads_at_the_new_epoch(data: DataPath) -> None:
    """Led at epoch 0, then (one coalesced change: moved away and back) at epoch 2: the
    coordinator unloads and loads again, and sends the prepared transaction's markers with
    coordinator epoch 2 (the leaders of its partitions fence markers of an older epoch)."""
    assert partition_for("txn", 1) == 0
    write(data, "txn", TransactionState.PREPARE_COMMIT, producer_id=7)
    made = runtime(data)

    async def scenario() -> None:
        publish(data, made, led(leader_epoch=0))
        await made.wait_loaded()
        assert made.markers == [(7, 0)]
        publish(data, made, led(leader_epoch=2))
        assert made.coordinator.describe("txn")[0] is ErrorCode.coordinator_load_in_progress
        await made.wait_loaded()
        assert made.markers == [(7, 0), (7, 2)]
        assert made.coordinator.describe("txn")[0] is ErrorCode.none
        publish(data, made, led(leader_epoch=2))  # the same epoch again: nothing to do
        await made.wait_loaded()
        assert made.markers == [(7, 0), (7, 2)]
        await made.stop()

    run(scenario)


def test_a_load_runs_in_chunks_off_the_publisher(data: DataPath) -> None:
    """The publisher returns at once; the loop runs other work between the load's chunks;
    requests meanwhile are answered COORDINATOR_LOAD_IN_PROGRESS."""
    ids = [f"txn-{index}" for index in range(200)]
    for index, transactional_id in enumerate(ids):
        write(data, transactional_id, TransactionState.EMPTY, producer_id=index)
    made = runtime(data)
    made.load_chunk_bytes = 1024

    async def scenario() -> None:
        ticks_while_loading = 0

        async def other_work() -> None:
            nonlocal ticks_while_loading
            while made.coordinator.describe(ids[0])[0] is ErrorCode.coordinator_load_in_progress:
                ticks_while_loading += 1
                await asyncio.sleep(0)

        publish(data, made, led(leader_epoch=0))
        assert made.coordinator.describe(ids[0])[0] is ErrorCode.coordinator_load_in_progress
        assert made.coordinator.transactions == {}  # nothing replayed inside the publisher
        await asyncio.gather(other_work(), made.wait_loaded())
        assert ticks_while_loading > 10
        assert all(made.coordinator.describe(t)[0] is ErrorCode.none for t in ids)
        await made.stop()

    run(scenario)


def test_a_load_whose_epoch_is_gone_is_abandoned(data: DataPath) -> None:
    """Leadership moves away mid-load: what was replayed goes, nothing finishes loading."""
    write(data, "txn", TransactionState.PREPARE_COMMIT, producer_id=7)
    for index in range(100):
        write(data, f"txn-{index}", TransactionState.EMPTY, producer_id=100 + index)
    made = runtime(data)
    made.load_chunk_bytes = 1024

    async def scenario() -> None:
        publish(data, made, led(leader_epoch=0))
        for _ in range(3):
            await asyncio.sleep(0)
        assert 0 < len(made.coordinator.transactions) < 101  # part way
        publish(data, made, led(leader=OTHER, leader_epoch=1))
        await made.wait_loaded()
        assert made.coordinator.transactions == {}
        assert made.coordinator.owned_partitions == frozenset()
        assert made.coordinator.describe("txn")[0] is ErrorCode.not_coordinator
        assert made.markers == []
        await made.stop()

    run(scenario)
