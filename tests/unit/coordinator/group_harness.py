"""A group coordinator with an in-memory writer, and request builders, for the unit tests."""

from __future__ import annotations

import datetime
import random
from collections.abc import Sequence
from typing import Any

from kio.schema.join_group.v9 import request as join_req
from kio.schema.offset_commit.v9 import request as commit_req
from kio.schema.sync_group.v5 import request as sync_req
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i32Timedelta, i64

from strom.common import ErrorCode
from strom.coordinator.group import CoordinatorRecord, CoordinatorSettings, GroupCoordinator


class MemoryWriter:
    def __init__(self) -> None:
        self.records: list[tuple[int, CoordinatorRecord]] = []
        self.producers: list[tuple[int, int]] = []
        """(producer id, producer epoch) of each append (-1, -1: not transactional)."""

    def append(
        self,
        partition: int,
        records: Sequence[CoordinatorRecord],
        done: Any,
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> None:
        self.records.extend((partition, r) for r in records)
        self.producers.append((producer_id, producer_epoch))
        done(ErrorCode.none)


def make_coordinator(**settings: Any) -> tuple[GroupCoordinator, MemoryWriter]:
    writer = MemoryWriter()
    settings.setdefault("initial_rebalance_delay_ms", 0)
    coordinator = GroupCoordinator(
        settings=CoordinatorSettings(**settings),
        writer=writer,
        random=random.Random(7),
        topic_exists=lambda topic, partition: topic == "t" and 0 <= partition < 6,
    )
    coordinator.begin_loading(4)
    for partition in range(4):
        coordinator.finish_loading(partition, 0)
    return coordinator, writer


def _ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def join(member_id: str = "", instance_id: str | None = None, protocol: bytes = b"p") -> Any:
    return join_req.JoinGroupRequest(
        group_id=GroupId("g"),
        session_timeout=_ms(10_000),
        rebalance_timeout=_ms(30_000),
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type="consumer",
        protocols=(join_req.JoinGroupRequestProtocol(name="range", metadata=protocol),),
    )


def sync(member_id: str, generation: int, assignments: dict[str, bytes] | None = None) -> Any:
    return sync_req.SyncGroupRequest(
        group_id=GroupId("g"),
        generation_id=i32(generation),
        member_id=member_id,
        assignments=tuple(
            sync_req.SyncGroupRequestAssignment(member_id=m, assignment=a)
            for m, a in (assignments or {}).items()
        ),
    )


def commit(member_id: str, generation: int, offsets: dict[int, int]) -> Any:
    return commit_req.OffsetCommitRequest(
        group_id=GroupId("g"),
        generation_id_or_member_epoch=i32(generation),
        member_id=member_id,
        topics=(
            commit_req.OffsetCommitRequestTopic(
                name=TopicName("t"),
                partitions=tuple(
                    commit_req.OffsetCommitRequestPartition(
                        partition_index=i32(p), committed_offset=i64(o), committed_metadata=""
                    )
                    for p, o in offsets.items()
                ),
            ),
        ),
    )
