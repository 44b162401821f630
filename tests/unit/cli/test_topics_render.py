"""``strom topics``: the summary line and partition table of describe, and list's filter."""

from __future__ import annotations

import io
import uuid

from confluent_kafka.admin._config import ConfigEntry, ConfigSource
from confluent_kafka.admin._metadata import ClusterMetadata, TopicMetadata
from rich.console import Console

from strom.cli.partition_reports import PartitionState
from strom.cli.topic_partitions import PartitionDescription, TopicPartitions
from strom.cli.topics import (
    PartitionOffsets,
    kafka_topic_id,
    partition_table,
    topic_header,
    topic_names,
)

TOPIC_ID = uuid.UUID("ed5e44ea-22d7-4d38-98f8-528922c65ffd")


def description() -> TopicPartitions:
    return TopicPartitions(
        "orders",
        TOPIC_ID,
        (
            PartitionDescription(0, PartitionState(1, [1], [1]), (), ()),
            PartitionDescription(1, PartitionState(None, [1], []), (1,), (1,)),
        ),
    )


def test_header_shows_only_values_that_are_not_defaults() -> None:
    configs = [
        ConfigEntry("cleanup.policy", "delete", source=ConfigSource.DEFAULT_CONFIG),
        ConfigEntry("retention.ms", "1000", source=ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ConfigEntry("segment.bytes", "4096", source=ConfigSource.STATIC_BROKER_CONFIG),
    ]
    header = topic_header(description(), configs)
    fields = header.split("\t")
    assert fields[0] == "Topic: orders"
    assert fields[1] == "TopicId: 7V5E6iLXTTiY-FKJIsZf_Q"
    assert fields[2:] == [
        "PartitionCount: 2",
        "ReplicationFactor: 1",
        "Configs: retention.ms=1000,segment.bytes=4096",
    ]


def test_partition_table_rows_in_partition_order() -> None:
    offsets = {
        ("orders", 0): PartitionOffsets("0", "10"),
        ("orders", 1): PartitionOffsets("3", "LEADER_NOT_AVAILABLE"),
    }
    out = io.StringIO()
    table = partition_table(description(), offsets, live={1})
    Console(file=out, width=200, markup=False).print(table)
    rows = [line.split() for line in out.getvalue().splitlines()]
    assert rows[0] == [
        "PARTITION",
        "LEADER",
        "REPLICAS",
        "ISR",
        "ELR",
        "LAST-KNOWN-ELR",
        "OFFLINE",
        "EARLIEST",
        "LATEST",
    ]
    assert rows[1] == ["0", "1", "1", "1", "-", "-", "-", "0", "10"]
    # leaderless, its ISR emptied: broker 1 is eligible and was the last leader
    assert rows[2] == ["1", "none", "1", "1", "1", "-", "3", "LEADER_NOT_AVAILABLE"]
    offline = io.StringIO()
    Console(file=offline, width=200, markup=False).print(
        partition_table(description(), offsets, live=set())
    )
    assert offline.getvalue().splitlines()[1].split()[6] == "1"  # broker 1 is down


def test_list_sorts_and_can_leave_out_internal_topics() -> None:
    metadata = ClusterMetadata()
    metadata.topics = {
        name: TopicMetadata() for name in ("b", "__consumer_offsets", "a", "__transaction_state")
    }
    assert topic_names(metadata, exclude_internal=False) == [
        "__consumer_offsets",
        "__transaction_state",
        "a",
        "b",
    ]
    assert topic_names(metadata, exclude_internal=True) == ["a", "b"]


def test_topic_ids_print_as_kafka_does() -> None:
    # Kafka's Uuid.toString: URL-safe base64, no padding.
    assert kafka_topic_id(TOPIC_ID) == "7V5E6iLXTTiY-FKJIsZf_Q"
