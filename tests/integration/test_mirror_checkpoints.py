"""The checkpoint connector's reader (``MirrorCheckpointConnector``) against a real ``strom
server``: a trigger reads the offset syncs up to the end of ``mm2-offset-syncs.<target>.internal``
it found, all of them: one that finds it empty returns at once (it used to wait, and make its
checkpoints from the first sync written meanwhile, alone), and the next reads every sync written
since, past the end of the partition its consumer met while it was empty."""

from __future__ import annotations

import json
import threading
import time

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from data_clients import create_topic, unique_topic
from strom_harness import StromServer

from strom.connect.connectors.mirror import checkpoint
from strom.connect.connectors.mirror.formats import Checkpoint, OffsetSync

pytestmark = pytest.mark.timeout(60)


SYNCS = (0, 100, 200, 300)
"""Upstream offsets of the syncs written; each at downstream upstream + 7."""


def _reader(
    strom_server: StromServer, monkeypatch: pytest.MonkeyPatch, **client: int
) -> tuple[checkpoint._Checkpoints, str, Checkpoint]:
    """A checkpoint reader (its consumer's librdkafka settings plus ``client``) of a flow whose
    group committed 250 on its topic (no syncs yet), the topic, and the checkpoint the reader
    makes once it has read all of ``SYNCS``."""
    monkeypatch.setattr(checkpoint, "TIMEOUT_S", 5.0)  # how long a trigger may wait for syncs
    bootstrap = strom_server.bootstrap
    topic, group = unique_topic("orders"), unique_topic("group")
    config = {
        "source.cluster.alias": unique_topic("A"),
        "target.cluster.alias": unique_topic("B"),
        "source.cluster.bootstrap.servers": bootstrap,
        "target.cluster.bootstrap.servers": bootstrap,
        "topics": topic,
        "groups": group,
    }
    reader = checkpoint._Checkpoints(
        {"config": json.dumps(config), "worker": json.dumps({"bootstrap.servers": bootstrap})}
    )
    reader.syncs_cluster.client.update(client)
    create_topic(bootstrap, topic)
    create_topic(bootstrap, reader.syncs_topic)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    committed = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 250)])]
    admin.alter_consumer_group_offsets(committed)[group].result(10)
    # one past the sync at 200 (upstream 250 itself has none): never past what the group read
    return reader, topic, Checkpoint(group, reader.flow.checkpoint_topic(topic), 0, 250, 208)


def _write_syncs(bootstrap: str, reader: checkpoint._Checkpoints, topic: str) -> None:
    """``SYNCS`` of ``topic``'s partition 0, in one batch."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for upstream in SYNCS:
        sync = OffsetSync(topic, 0, upstream, upstream + 7)
        producer.produce(reader.syncs_topic, sync.value(), sync.key(), partition=0)
    assert producer.flush(10) == 0


def test_a_trigger_on_empty_syncs_returns_and_the_next_reads_them_all(
    strom_server: StromServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader, topic, expected = _reader(strom_server, monkeypatch)
    started = time.monotonic()
    rows, end = reader.read({"round": 0})
    assert (list(rows), end) == ([], {"round": 0})
    assert time.monotonic() - started < 5.0, "the trigger waited for syncs not yet written"

    time.sleep(1)  # the reader's consumer fetches the empty partition and meets its end
    _write_syncs(strom_server.bootstrap, reader, topic)
    rows, end = reader.read({"round": 0})
    assert [Checkpoint.decode(k, v) for k, v in rows] == [expected]
    assert end == {"round": 1}


def test_syncs_written_while_a_trigger_reads_wait_for_the_next(
    strom_server: StromServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mirror's first syncs land on the syncs partition while the first trigger's consumer
    (long-polling it, up to 3 s here) starts reading it: that trigger makes no checkpoint from
    the first sync alone (250 -> 8, what the bench's failover saw); the next makes it from all."""
    reader, topic, expected = _reader(strom_server, monkeypatch, **{"fetch.wait.max.ms": 3000})
    writer = threading.Timer(1.0, _write_syncs, (strom_server.bootstrap, reader, topic))
    writer.start()
    try:
        rows, end = reader.read({"round": 0})
        assert (list(rows), end) == ([], {"round": 0})
    finally:
        writer.join()
    rows, end = reader.read({"round": 0})
    assert [Checkpoint.decode(k, v) for k, v in rows] == [expected]
