"""A replica manager over a real log manager and a hand-made metadata image, for unit tests."""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import crc32c

from strom.common import TopicPartition
from strom.common.clock import ManualClock
from strom.config import ServerConfig
from strom.metadata.image import (
    BrokerRegistration,
    ClusterImage,
    ConfigResource,
    ConfigurationsImage,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    TopicsImage,
)
from strom.protocol.records import Record, build_batch
from strom.server.replica.replica_manager import HighWatermarkUpdate, ReplicaManager
from strom.storage.log_config import LogConfig
from strom.storage.log_manager import LogManager

NODE_ID = 1
R = TypeVar("R")


def run(scenario: Callable[[], Coroutine[Any, Any, R]]) -> R:
    """Run an async test scenario on a new event loop, for at most 10 s."""
    return asyncio.run(asyncio.wait_for(scenario(), timeout=10))


class MutableMetadata:
    def __init__(self, image: MetadataImage) -> None:
        self.image = image


def registration(
    *, leader: int = NODE_ID, isr: Sequence[int] = (NODE_ID,), leader_epoch: int = 0
) -> PartitionRegistration:
    replicas = tuple(dict.fromkeys([leader, *isr]))
    return PartitionRegistration(
        replicas=replicas,
        isr=tuple(isr),
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=0,
    )


def image_of(
    topics: Mapping[str, Mapping[int, PartitionRegistration]],
    configs: Mapping[str, Mapping[str, str]] | None = None,
    *,
    topic_ids: Mapping[str, uuid.UUID] | None = None,
) -> MetadataImage:
    ids = dict(topic_ids or {})
    images = {}
    for name, partitions in topics.items():
        topic_id = ids.setdefault(name, uuid.uuid5(uuid.NAMESPACE_DNS, name))
        images[topic_id] = TopicImage(name, topic_id, dict(partitions))
    replicas = {
        b for partitions in topics.values() for p in partitions.values() for b in p.replicas
    }
    brokers = {
        b: BrokerRegistration(
            b, epoch=1, incarnation_id=uuid.UUID(int=b), endpoints=(), fenced=False
        )
        for b in replicas
    }
    return MetadataImage(
        cluster=ClusterImage(brokers),
        topics=TopicsImage(images),
        configs=ConfigurationsImage(
            {ConfigResource.topic(name): dict(values) for name, values in (configs or {}).items()}
        ),
    )


def batch(
    count: int = 1,
    *,
    value: bytes = b"v",
    timestamp: int = 1_000,
    timestamps: Sequence[int] | None = None,
    **kwargs: object,
) -> bytes:
    stamps = list(timestamps) if timestamps is not None else [timestamp] * count
    records = [Record(i, stamps[i], None, value + str(i).encode()) for i in range(len(stamps))]
    return build_batch(records, **kwargs)  # type: ignore[arg-type]


def recrc(data: bytearray) -> bytes:
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


class DataPath:
    """A replica manager on ``tmp_path``, its log manager and metadata, and recorded updates."""

    def __init__(self, tmp_path: Path, *, config: ServerConfig | None = None) -> None:
        self.clock = ManualClock()
        self.log_manager = LogManager(tmp_path / "data", self.clock)
        self.metadata = MutableMetadata(MetadataImage.empty())
        self.replica_manager = ReplicaManager(
            node_id=NODE_ID,
            log_manager=self.log_manager,
            metadata=self.metadata,
            config=config or ServerConfig(),
            clock=self.clock,
        )
        self.updates: list[tuple[TopicPartition, HighWatermarkUpdate | None]] = []
        self.replica_manager.add_high_watermark_listener(
            lambda tp, update: self.updates.append((tp, update))
        )

    def create(
        self,
        topics: Mapping[str, int | Mapping[int, PartitionRegistration]],
        configs: Mapping[str, Mapping[str, str]] | None = None,
        *,
        log_config: LogConfig | None = None,
        open_logs: bool = True,
    ) -> None:
        """Topics (partition count, or registrations) in the image, and their logs opened."""
        partitions: dict[str, Mapping[int, PartitionRegistration]] = {}
        for name, spec in topics.items():
            if isinstance(spec, int):
                partitions[name] = {p: registration() for p in range(spec)}
            else:
                partitions[name] = spec
        self.metadata.image = image_of(partitions, configs)
        if open_logs:
            for name, regs in partitions.items():
                for partition in regs:
                    self.log_manager.get_or_create(TopicPartition(name, partition), log_config)

    def close(self) -> None:
        self.log_manager.close_without_flush()
