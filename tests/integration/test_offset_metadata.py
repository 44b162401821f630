"""Committed offset metadata comes back byte for byte, whichever client committed it and however
long the topic and group names are.

What the broker stores and answers is checked on the wire: OffsetFetch v9 sent with kio
over a plain socket. Every client's commit survives, including the trailing NUL byte that
confluent-kafka-python sends with each metadata string. Reading the metadata back through
confluent-kafka-python is left out on purpose: it reads the string as a NUL-terminated C
string, so a value committed by another client (no NUL) comes back with whatever bytes follow
in its memory. That is the client's behavior against Apache Kafka too (librdkafka issue 4649).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as ConfluentPartition
from data_clients import create_topic, unique_topic
from kafka import KafkaConsumer
from kafka import TopicPartition as PythonPartition
from kafka.structs import OffsetAndMetadata
from kio.schema.offset_fetch.v9.request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32
from strom_harness import StromServer

from strom.client.blocking import BrokerConnection


def _fetched_metadata(server: StromServer, group: str, topic: str) -> str | None:
    host, port = server.bootstrap.rsplit(":", 1)
    request = OffsetFetchRequest(
        groups=(
            OffsetFetchRequestGroup(
                group_id=GroupId(group),
                member_id=None,
                member_epoch=i32(-1),
                topics=(
                    OffsetFetchRequestTopics(name=TopicName(topic), partition_indexes=(i32(0),)),
                ),
            ),
        ),
        require_stable=False,
    )
    with BrokerConnection(host, int(port), timeout=10, client_id="metadata-check") as connection:
        response: Any = connection.request(request)
    [partition] = response.groups[0].topics[0].partitions
    return partition.metadata  # type: ignore[no-any-return]


def _name(length: int) -> str:
    """A unique topic or group name of exactly ``length`` characters."""
    return (uuid.uuid4().hex + "n" * length)[:length]


@pytest.mark.parametrize("name_length", [6, 21, 120])
@pytest.mark.parametrize("metadata", ["", "x", "from-kafka-python", "ü" * 50])
def test_kafka_python_metadata_round_trips(
    strom_server: StromServer, name_length: int, metadata: str
) -> None:
    topic = create_topic(strom_server.bootstrap, _name(name_length))
    group = _name(name_length)
    consumer = KafkaConsumer(
        bootstrap_servers=strom_server.bootstrap, group_id=group, enable_auto_commit=False
    )
    partition = PythonPartition(topic, 0)
    consumer.assign([partition])
    consumer.commit({partition: OffsetAndMetadata(5, metadata, -1)})
    assert consumer.committed(partition, metadata=True) == OffsetAndMetadata(5, metadata, -1)
    consumer.close()
    assert _fetched_metadata(strom_server, group, topic) == metadata


@pytest.mark.parametrize("metadata", ["meta-zero", "z" * 200])
def test_confluent_kafka_metadata_is_stored_as_sent(
    strom_server: StromServer, metadata: str
) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("compat-ocf"))
    group = unique_topic("compat-ocfg")
    consumer = Consumer(
        {
            "bootstrap.servers": strom_server.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
        }
    )
    consumer.commit(
        offsets=[ConfluentPartition(topic, 0, 3, metadata=metadata)], asynchronous=False
    )
    [committed] = consumer.committed([ConfluentPartition(topic, 0)], timeout=10)
    consumer.close()
    assert (committed.offset, committed.metadata) == (3, metadata)
    assert _fetched_metadata(strom_server, group, topic) == metadata + "\x00"  # as sent
