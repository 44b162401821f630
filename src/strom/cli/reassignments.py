"""What ``strom partitions reassign`` and ``strom broker decommission`` ask the cluster, over
strom's own blocking client (confluent-kafka has no reassignment API): the current replica
assignment (Metadata), AlterPartitionReassignments and ListPartitionReassignments; and the
JSON files ``kafka-reassign-partitions.sh`` reads and writes."""

from __future__ import annotations

import datetime
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kio.schema.alter_partition_reassignments.v0 import request as alter_wire
from kio.schema.errors import ErrorCode
from kio.schema.list_partition_reassignments.v0 import request as list_wire
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta

from strom.cli.client_common import CliError
from strom.client.blocking import BrokerConnection
from strom.common import TopicPartition
from strom.controller.placement import PlacementError, UsableBroker, place_replicas

__all__ = [
    "Assignment",
    "Ongoing",
    "alter",
    "current_assignment",
    "list_ongoing",
    "parse_broker_list",
    "propose",
    "read_reassignment",
    "read_topics_to_move",
    "reassignment_json",
]

Assignment = dict[TopicPartition, tuple[int, ...]]
_TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=30))


@dataclass(frozen=True, slots=True)
class Ongoing:
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def current_assignment(
    connection: BrokerConnection,
    topics: Iterable[str] | None = None,
    *,
    include_internal: bool = False,
) -> tuple[Assignment, dict[int, str | None]]:
    """Each partition's replicas (of ``topics``, or every topic: internal ones only when
    asked) and the brokers with their racks."""
    wanted = (
        None
        if topics is None
        else tuple(MetadataRequestTopic(topic_id=None, name=TopicName(name)) for name in topics)
    )
    response = connection.request(
        MetadataRequest(
            topics=wanted,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    )
    assignment: Assignment = {}
    for topic in response.topics:
        if topic.error_code != ErrorCode.none:
            raise CliError(f"topic {topic.name!r}: {topic.error_code.name.upper()}")
        if topic.is_internal and topics is None and not include_internal:
            continue
        for partition in topic.partitions:
            tp = TopicPartition(str(topic.name), int(partition.partition_index))
            assignment[tp] = tuple(int(b) for b in partition.replica_nodes)
    brokers = {int(b.node_id): b.rack for b in response.brokers}
    return dict(sorted(assignment.items())), brokers


def alter(
    connection: BrokerConnection, targets: Mapping[TopicPartition, tuple[int, ...] | None]
) -> dict[TopicPartition, str | None]:
    """Start (or, with None, cancel) each reassignment; the error text of each, or None."""
    by_topic: dict[str, list[alter_wire.ReassignablePartition]] = {}
    for tp, replicas in targets.items():
        by_topic.setdefault(tp.topic, []).append(
            alter_wire.ReassignablePartition(
                partition_index=i32(tp.partition),
                replicas=None if replicas is None else tuple(BrokerId(b) for b in replicas),
            )
        )
    response = connection.request(
        alter_wire.AlterPartitionReassignmentsRequest(
            timeout=_TIMEOUT,
            topics=tuple(
                alter_wire.ReassignableTopic(name=TopicName(name), partitions=tuple(parts))
                for name, parts in by_topic.items()
            ),
        )
    )
    if response.error_code != ErrorCode.none:
        raise CliError(
            f"the reassignment was refused: {response.error_message or response.error_code.name}"
        )
    outcome: dict[TopicPartition, str | None] = {}
    for topic in response.responses:
        for partition in topic.partitions:
            tp = TopicPartition(str(topic.name), int(partition.partition_index))
            failed = partition.error_code != ErrorCode.none
            message = partition.error_message or partition.error_code.name.upper()
            outcome[tp] = message if failed else None
    return outcome


def list_ongoing(connection: BrokerConnection) -> dict[TopicPartition, Ongoing]:
    response = connection.request(
        list_wire.ListPartitionReassignmentsRequest(timeout=_TIMEOUT, topics=None)
    )
    if response.error_code != ErrorCode.none:
        raise CliError(f"cannot list reassignments: {response.error_code.name.upper()}")
    return {
        TopicPartition(str(topic.name), int(p.partition_index)): Ongoing(
            tuple(int(b) for b in p.replicas),
            tuple(int(b) for b in p.adding_replicas),
            tuple(int(b) for b in p.removing_replicas),
        )
        for topic in response.topics
        for p in topic.partitions
    }


def propose(
    current: Assignment, brokers: Mapping[int, str | None], broker_list: Sequence[int]
) -> Assignment:
    """``--generate``: each topic's partitions placed anew over ``broker_list`` with the same
    replication factor (the controller's rack-aware placement)."""
    unknown = sorted(set(broker_list) - set(brokers))
    if unknown:
        raise CliError(f"--broker-list names broker(s) {unknown} that are not in the cluster")
    usable = [UsableBroker(b, brokers[b], fenced=False) for b in sorted(broker_list)]
    proposed: Assignment = {}
    topics: dict[str, list[TopicPartition]] = {}
    for tp in current:
        topics.setdefault(tp.topic, []).append(tp)
    for name, partitions in topics.items():
        factor = len(current[partitions[0]])
        try:
            placed = place_replicas(
                usable,
                num_partitions=len(partitions),
                replication_factor=factor,
                random=random.Random(name),
            )
        except PlacementError as error:
            raise CliError(f"cannot place topic {name!r}: {error}") from None
        proposed.update(zip(sorted(partitions), placed, strict=True))
    return proposed


def reassignment_json(assignment: Assignment) -> str:
    """Kafka's reassignment file format."""
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "replicas": list(replicas),
                    "log_dirs": ["any"] * len(replicas),
                }
                for tp, replicas in assignment.items()
            ],
        }
    )


def parse_broker_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CliError(
            f"--broker-list must be broker ids separated by commas, got {text!r}"
        ) from None


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise CliError(f"{path} is not JSON: {error}") from None


def read_topics_to_move(path: Path) -> list[str]:
    """``{"version": 1, "topics": [{"topic": "orders"}, ...]}``."""
    data = _load(path)
    try:
        return [str(entry["topic"]) for entry in data["topics"]]
    except (KeyError, TypeError):
        raise CliError(
            f'{path} must look like {{"version":1,"topics":[{{"topic":"t"}}]}}'
        ) from None


def read_reassignment(path: Path) -> Assignment:
    """``{"version": 1, "partitions": [{"topic", "partition", "replicas"}, ...]}``."""
    data = _load(path)
    try:
        return {
            TopicPartition(str(entry["topic"]), int(entry["partition"])): tuple(
                int(b) for b in entry["replicas"]
            )
            for entry in data["partitions"]
        }
    except (KeyError, TypeError, ValueError):
        raise CliError(
            f'{path} must look like {{"version":1,"partitions":'
            f'[{{"topic":"t","partition":0,"replicas":[1,2]}}]}}'
        ) from None
