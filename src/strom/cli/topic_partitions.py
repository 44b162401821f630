"""DescribeTopicPartitions over strom's own client, for ``strom topics describe``: the one API
that carries each partition's eligible leader replicas (KIP-966), which no Python client
library asks for. Pages through the answer with its cursor."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from kio.schema.describe_topic_partitions.v0.request import (
    Cursor,
    DescribeTopicPartitionsRequest,
    TopicRequest,
)
from kio.schema.describe_topic_partitions.v0.response import (
    DescribeTopicPartitionsResponsePartition,
)
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName

from strom.cli.client_common import CliError
from strom.cli.partition_reports import PartitionState
from strom.client.blocking import BrokerConnection

__all__ = ["PartitionDescription", "TopicPartitions", "describe_topic_partitions"]


@dataclass(frozen=True, slots=True)
class PartitionDescription:
    index: int
    state: PartitionState
    eligible_leaders: tuple[int, ...]
    last_known_leader: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionDescription, ...]

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].state.replicas) if self.partitions else 0


def describe_topic_partitions(
    connection: BrokerConnection, names: Sequence[str]
) -> list[TopicPartitions]:
    """Each named topic's partitions, in ``names`` order (``CliError`` for a topic that cannot
    be described)."""
    found: dict[str, TopicPartitions] = {}
    cursor: Cursor | None = None
    while True:
        response = connection.request(
            DescribeTopicPartitionsRequest(
                topics=tuple(TopicRequest(name=TopicName(name)) for name in names),
                cursor=cursor,
            )
        )
        for topic in response.topics:
            name = str(topic.name)
            if topic.error_code != ErrorCode.none:
                raise CliError(f"cannot describe topic {name!r}: {topic.error_code.name}")
            partitions = tuple(_partition(p) for p in topic.partitions)
            earlier = found.get(name)
            if earlier is not None:
                partitions = earlier.partitions + partitions
            found[name] = TopicPartitions(name, topic.topic_id or uuid.UUID(int=0), partitions)
        if response.next_cursor is None:
            break
        cursor = Cursor(
            topic_name=response.next_cursor.topic_name,
            partition_index=response.next_cursor.partition_index,
        )
    return [found[name] for name in names if name in found]


def _partition(p: DescribeTopicPartitionsResponsePartition) -> PartitionDescription:
    leader = int(p.leader_id)
    return PartitionDescription(
        index=int(p.partition_index),
        state=PartitionState(
            leader=None if leader < 0 else leader,
            replicas=[int(b) for b in p.replica_nodes],
            isr=[int(b) for b in p.isr_nodes],
        ),
        eligible_leaders=tuple(int(b) for b in p.eligible_leader_replicas or ()),
        last_known_leader=tuple(int(b) for b in p.last_known_elr or ()),
    )
