"""The metadata log in ``__cluster_metadata-0``: batches, fsync, epochs, replay after a restart."""

from __future__ import annotations

import asyncio
import random
import uuid
from pathlib import Path

import pytest

from strom.common.clock import ManualClock
from strom.controller import (
    SUPPORTED_FEATURES,
    AlterableConfig,
    AlterConfigOp,
    BrokerRegistrationRequest,
    ControllerSettings,
    CreatableTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
    QuorumController,
)
from strom.metadata import (
    BrokerEndpoint,
    ConfigResourceType,
    MetadataLoader,
    MetadataRecord,
    NoOpRecord,
    TopicRecord,
    append_records,
    decode_record,
    encode_record,
)
from strom.protocol.batch import BatchHeader
from strom.protocol.records import Record, build_batch, iter_records
from strom.server.controller_server import ControllerServer
from strom.server.metadata_log import (
    METADATA_LOG_CONFIG,
    METADATA_PARTITION,
    MetadataLogCorruptError,
    PartitionMetadataLog,
)
from strom.storage.partition_log import PartitionLog


def open_log(tmp_path: Path, clock: ManualClock) -> PartitionLog:
    return PartitionLog.open(
        tmp_path / METADATA_PARTITION.dir_name,
        config=METADATA_LOG_CONFIG,
        clock=clock,
        had_clean_shutdown=True,
    )


def test_each_append_is_one_fsynced_batch_of_encoded_records(tmp_path: Path) -> None:
    clock = ManualClock()
    partition = open_log(tmp_path, clock)
    log = PartitionMetadataLog(partition, clock=clock)
    assert log.epoch == 1
    records: list[MetadataRecord] = [TopicRecord("a", uuid.UUID(int=5)), NoOpRecord()]
    batch = append_records(log, records)
    assert (batch.base_offset, batch.last_offset, batch.epoch) == (0, 1, 1)
    second = append_records(log, [NoOpRecord()])
    assert second.base_offset == 2
    assert partition.recovery_point == partition.log_end_offset == 3  # fsynced
    data = partition.read_bytes(0, max_bytes=1 << 20)
    header = BatchHeader.read(data)
    assert header.partition_leader_epoch == 1
    assert header.record_count == 2
    assert header.producer_id == -1
    first = data[: header.size]
    assert [decode_record(r.value or b"") for r in iter_records(first)] == records
    assert all(r.key is None for r in iter_records(first))
    with pytest.raises(ValueError, match="nothing to append"):
        log.append([])
    partition.close()


def test_read_batches_from_an_offset(tmp_path: Path) -> None:
    clock = ManualClock()
    partition = open_log(tmp_path, clock)
    log = PartitionMetadataLog(partition, clock=clock)
    for i in range(5):
        append_records(log, [TopicRecord(f"t{i}", uuid.UUID(int=i + 10)), NoOpRecord()])
    batches = list(log.read_batches(0))
    assert [b.base_offset for b in batches] == [0, 2, 4, 6, 8]
    assert [b.base_offset for b in log.read_batches(5)] == [4, 6, 8]
    assert list(log.read_batches(10)) == []
    assert batches[1].decode().records == (TopicRecord("t1", uuid.UUID(int=11)), NoOpRecord())
    partition.close()


def test_each_start_is_a_new_epoch(tmp_path: Path) -> None:
    clock = ManualClock()
    for expected in (1, 2, 3):
        partition = open_log(tmp_path, clock)
        log = PartitionMetadataLog(partition, clock=clock)
        assert log.epoch == expected
        append_records(log, [NoOpRecord()])
        partition.close()
    partition = open_log(tmp_path, clock)
    log = PartitionMetadataLog(partition, clock=clock)
    assert [b.epoch for b in log.read_batches(0)] == [1, 2, 3]
    partition.close()


def test_a_batch_that_is_not_metadata_is_refused(tmp_path: Path) -> None:
    clock = ManualClock()
    partition = open_log(tmp_path, clock)
    partition.append(build_batch([Record(0, 0, b"k", None)]))
    log = PartitionMetadataLog(partition, clock=clock)
    with pytest.raises(MetadataLogCorruptError, match="null record"):
        list(log.read_batches(0))
    partition.close()


def _controller(loader: MetadataLoader, log: PartitionMetadataLog) -> ControllerServer:
    return ControllerServer(
        QuorumController(ControllerSettings(), random=random.Random(1)), loader=loader, log=log
    )


def test_replay_after_restart_rebuilds_the_same_image(tmp_path: Path) -> None:
    clock = ManualClock()
    partition = open_log(tmp_path, clock)
    log = PartitionMetadataLog(partition, clock=clock)
    loader = MetadataLoader()
    controller = _controller(loader, log)
    controller.bootstrap()
    reply = controller.register_broker_now(
        BrokerRegistrationRequest(
            broker_id=1,
            incarnation_id=uuid.uuid4(),
            endpoints=[BrokerEndpoint("PLAINTEXT", "h", 1)],
            features=SUPPORTED_FEATURES,
        )
    )
    controller.unfence_broker_now(broker_id=1, broker_epoch=reply.broker_epoch)

    async def admin() -> None:
        await controller.create_topics(
            CreateTopicsRequest(
                [
                    CreatableTopic("orders", 3, 1, configs={"retention.ms": "1000"}),
                    CreatableTopic("gone", 1, 1),
                ]
            )
        )
        await controller.delete_topics(DeleteTopicsRequest.of_names("gone"))
        await controller.incremental_alter_configs(
            IncrementalAlterConfigsRequest(
                [
                    IncrementalAlterConfigsResource(
                        ConfigResourceType.TOPIC,
                        "orders",
                        [AlterableConfig("cleanup.policy", "compact", AlterConfigOp.SET)],
                    )
                ]
            )
        )
        block = await controller.allocate_producer_ids(broker_id=1, broker_epoch=reply.broker_epoch)
        assert block.first_producer_id == 0

    asyncio.run(admin())
    before = loader.image
    partition.close()

    reopened = open_log(tmp_path, clock)
    replayed = MetadataLoader()
    replayed.catch_up(PartitionMetadataLog(reopened, clock=clock))
    assert replayed.image == before
    orders = replayed.image.topic("orders")
    assert orders is not None and orders.num_partitions == 3
    assert replayed.image.topic("gone") is None
    assert dict(replayed.image.topic_configs("orders")) == {
        "retention.ms": "1000",
        "cleanup.policy": "compact",
    }
    assert replayed.image.producer_ids.next_producer_id == 1000
    reopened.close()


def test_records_survive_the_log_byte_for_byte(tmp_path: Path) -> None:
    clock = ManualClock()
    partition = open_log(tmp_path, clock)
    log = PartitionMetadataLog(partition, clock=clock)
    encoded = [encode_record(TopicRecord("x", uuid.UUID(int=3)))]
    stored = log.append(encoded)
    assert list(log.read_batches(0)) == [stored]
    partition.close()
