"""The console's records held and lag (``strom.console.offsets.watermarks``) against a real
``strom server``: each leader's earliest and latest offsets in one ListOffsets request each,
partitions it does not have and leaders it cannot reach left out."""

from __future__ import annotations

import asyncio

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from data_clients import create_topic, unique_topic
from strom_harness import StromServer

from strom.client.security import PLAINTEXT
from strom.console.offsets import LATEST, watermarks

UNREACHABLE = 99
"""A leader whose address is not known."""


def test_a_leaders_partitions_earliest_and_latest_offsets(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("console"), partitions=3)
    producer = Producer({"bootstrap.servers": strom_server.bootstrap})
    for partition, count in ((0, 5), (1, 2)):
        for index in range(count):
            producer.produce(topic, b"%d" % index, partition=partition)
    assert producer.flush(10) == 0
    admin = AdminClient({"bootstrap.servers": strom_server.bootstrap})
    [deleted] = admin.delete_records([TopicPartition(topic, 0, 3)]).values()
    deleted.result(10)
    node = strom_server.node_id
    leaders = {
        node: [(topic, 0), (topic, 1), (topic, 2), (topic, 7), (unique_topic("none"), 0)],
        UNREACHABLE: [(topic, 5)],
    }
    earliest, latest = asyncio.run(
        watermarks(leaders, {node: (strom_server.host, strom_server.port)}, PLAINTEXT)
    )
    assert earliest == {(topic, 0): 3, (topic, 1): 0, (topic, 2): 0}
    assert latest == {(topic, 0): 5, (topic, 1): 2, (topic, 2): 0}
    [only_latest] = asyncio.run(
        watermarks(leaders, {node: (strom_server.host, strom_server.port)}, PLAINTEXT,
                   timestamps=(LATEST,))
    )  # fmt: skip
    assert only_latest == latest
