"""MirrorMaker 2's connectors on a strom Connect worker, between two real strom brokers (A, the
suite's broker, and B, one of this module's), driven over the REST API with httpx and checked
with plain confluent-kafka clients: records keep keys, values, headers, timestamps and
partitions; remote topics get the source's partition count and configs; new topics and
partitions follow; offset syncs, checkpoints and heartbeats are in MM2's formats; a group's
offsets translate to B (and are written into B's group with ``sync.group.offsets.enabled``)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from pyspark.sql import SparkSession
from strom_harness import StromServer, start_strom_server, strom_command

from e2e.spark.clients import (
    SERVER_OVERRIDES,
    Record,
    admin,
    consume_all,
    create_topic,
    produce,
    unique_topic,
)
from e2e.spark.connect_api import create, eventually, states
from strom.common import TopicPartition
from strom.connect.connectors.mirror import translate_offsets
from strom.connect.connectors.mirror.formats import Checkpoint, Heartbeat, OffsetSync
from strom.connect.connectors.mirror.maker import MirrorMaker
from strom.connect.connectors.mirror.mm2config import MirrorMakerConfig
from strom.testing.connect import Connect

SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
pytestmark = pytest.mark.timeout(float(os.environ.get("MIRROR_TEST_TIMEOUT_S", "400")))
"""A worker and its queries start in each test: minutes on a loaded machine."""


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StromServer]:
    """Cluster B: a second single-node strom."""
    base = tmp_path_factory.mktemp("strom-mirror-b")
    server = start_strom_server(data_dir=base / "data", cwd=base, overrides=SERVER_OVERRIDES)
    yield server
    server.stop(signal.SIGTERM)


def flow(a: StromServer, b: StromServer, **more: str) -> dict[str, str]:
    """A mirror connector's config for A -> B with the tests' single-broker replication."""
    return {
        "source.cluster.alias": "A",
        "target.cluster.alias": "B",
        "source.cluster.bootstrap.servers": a.bootstrap,
        "target.cluster.bootstrap.servers": b.bootstrap,
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        **more,
    }


def partitions_of(bootstrap: str, topic: str) -> int | None:
    found = admin(bootstrap).list_topics(timeout=10).topics.get(topic)
    return None if found is None or found.error else len(found.partitions)


def topic_config(bootstrap: str, topic: str, name: str) -> str | None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    client = admin(bootstrap)  # kept until the result is in: a dropped client cancels it
    entries = client.describe_configs([resource])[resource].result(15)
    return entries[name].value if name in entries else None


def records_of(bootstrap: str, topic: str, count: int) -> list[Record] | None:
    """The topic's records once there are ``count`` (None before)."""
    partitions = partitions_of(bootstrap, topic)
    if partitions is None:
        return None
    found = consume_all(bootstrap, topic, partitions)
    assert len(found) <= count, f"more records than written in {topic}: {len(found)}"
    return found if len(found) == count else None


def internal(bootstrap: str, topic: str) -> list[Record]:
    return consume_all(bootstrap, topic, partitions_of(bootstrap, topic) or 1)


def _heartbeats(bootstrap: str, topic: str) -> set[tuple[str, str]]:
    """The (source, target) aliases of the heartbeats in ``topic`` (none before it exists)."""
    if partitions_of(bootstrap, topic) is None:
        return set()
    records = internal(bootstrap, topic)
    return {
        (h.source, h.target)
        for h in (Heartbeat.decode(r.key or b"", r.value or b"") for r in records)
    }


def test_records_topics_and_offset_syncs_are_mirrored(
    spark: SparkSession, broker: StromServer, target: StromServer
) -> None:
    a, b = broker.bootstrap, target.bootstrap
    topic = create_topic(a, "mirror-orders", partitions=3, config={"retention.ms": "3600000"})
    written = [
        Record(
            b"v%d" % i,
            key=b"k%d" % i,
            partition=i % 3,
            headers=(("h", b"x%d" % i),),
            timestamp=1_700_000_000_000 + i,
        )
        for i in range(30)
    ]
    produce(a, topic, written)
    worker = Connect(b, spark=lambda: spark)
    with worker, httpx.Client(base_url=worker.url, timeout=60) as api:
        config = flow(
            broker, target, topics="mirror-.*", **{"refresh.topics.interval.seconds": "1"}
        )
        create(api, "mirror-a-b", {"connector.class": SOURCE, **config})
        remote = f"A.{topic}"
        copied = eventually(lambda: records_of(b, remote, 30), f"30 records in {remote}")
        assert states(api, "mirror-a-b") == ("RUNNING", ["RUNNING"])
        assert partitions_of(b, remote) == 3
        assert topic_config(b, remote, "retention.ms") == "3600000"
        key = lambda r: (r.partition, r.offset)  # noqa: E731
        assert [
            (r.value, r.key, r.partition, r.headers, r.timestamp) for r in sorted(copied, key=key)
        ] == [
            (r.value, r.key, r.partition, tuple(r.headers), r.timestamp)
            for r in sorted(written, key=lambda r: (r.partition, r.timestamp))
        ]
        syncs = [
            OffsetSync.decode(r.key or b"", r.value or b"")
            for r in internal(a, "mm2-offset-syncs.B.internal")
        ]
        last = {(s.topic, s.partition): s for s in syncs if s.topic == topic}
        assert {p: (s.upstream, s.downstream) for (_, p), s in last.items()} == dict.fromkeys(
            range(3), (9, 9)
        )
        # later batches take their ranges from the query's offset log (no aggregation job)
        produce(a, topic, [Record(b"w%d" % i, partition=i % 3) for i in range(30)])
        eventually(lambda: records_of(b, remote, 60), f"60 records in {remote}")
        assert _last_syncs(a, topic) == dict.fromkeys(range(3), (19, 19))
        # a transaction's commit marker is an offset with no record: the batch holding it
        # emits no sync it cannot know, and later batches are aggregated, so syncs stay exact
        transactional = Producer({"bootstrap.servers": a, "transactional.id": unique_topic("t")})
        transactional.init_transactions(30)
        transactional.begin_transaction()
        for i in range(3):
            transactional.produce(topic, b"t%d" % i, partition=0)
        transactional.commit_transaction(30)  # records at 20-22, its marker at 23
        eventually(lambda: records_of(b, remote, 63), f"63 records in {remote}")
        produce(a, topic, [Record(b"after", partition=0)])  # at 24
        eventually(lambda: records_of(b, remote, 64), f"64 records in {remote}")
        produce(a, topic, [Record(b"then", partition=0)])  # at 25
        eventually(lambda: records_of(b, remote, 65), f"65 records in {remote}")
        # offset 25 is B's 25th record of partition 0 (offset 24); no sync in between was off
        eventually(lambda: _last_syncs(a, topic).get(0) == (25, 24), "the sync of offset 25")

        # a new topic, a new partition, a changed config: all follow
        later = create_topic(a, "mirror-later", partitions=2)
        produce(a, later, [Record(b"late", partition=1)])
        eventually(lambda: records_of(b, f"A.{later}", 1), "the new topic's record on B")
        assert partitions_of(b, f"A.{later}") == 2
        client = admin(a)
        client.create_partitions([NewPartitions(topic, 4)])[topic].result(15)
        produce(a, topic, [Record(b"fourth", partition=3)])
        eventually(lambda: records_of(b, remote, 66), "the new partition's record on B")
        assert partitions_of(b, remote) == 4
        resource = ConfigResource(
            ConfigResource.Type.TOPIC,
            topic,
            incremental_configs=[
                ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)
            ],
        )
        client.incremental_alter_configs([resource])[resource].result(15)
        eventually(
            lambda: topic_config(b, remote, "retention.ms") == "7200000", "the new config on B"
        )
        # B's own topics that came from B are never mirrored back (no cycle)
        assert partitions_of(b, f"A.A.{topic}") is None


def _last_syncs(bootstrap: str, topic: str) -> dict[int, tuple[int, int]]:
    """The newest offset sync of each partition of ``topic``: (upstream, downstream)."""
    syncs = [
        OffsetSync.decode(r.key or b"", r.value or b"")
        for r in internal(bootstrap, "mm2-offset-syncs.B.internal")
    ]
    return {s.partition: (s.upstream, s.downstream) for s in syncs if s.topic == topic}


def commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    """A consumer of ``group`` that reads ``topic`` up to ``offset``, commits and leaves."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    consumer.commit(offsets=[KafkaTopicPartition(topic, 0, offset)], asynchronous=False)
    consumer.close()


def committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return int(consumer.committed([KafkaTopicPartition(topic, 0)], timeout=10)[0].offset)
    finally:
        consumer.close()


def resume(bootstrap: str, group: str, topic: str, count: int) -> list[bytes]:
    """What a consumer of ``group`` subscribed to ``topic`` reads first (``count`` records)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    consumer.subscribe([topic])
    try:
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < count and time.monotonic() < deadline:
            message: Any = consumer.poll(1)
            if message is not None and message.error() is None:
                values.append(message.value())
        return values
    finally:
        consumer.close()


def test_checkpoints_heartbeats_and_group_offsets_reach_the_target(
    spark: SparkSession, broker: StromServer, target: StromServer
) -> None:
    a, b = broker.bootstrap, target.bootstrap
    topic = create_topic(a, "mirror-billing")
    produce(a, topic, [Record(b"v%d" % i) for i in range(20)])
    group = unique_topic("billing")
    commit(a, group, topic, 12)
    worker = Connect(b, spark=lambda: spark)
    # the offset syncs on the target (test_records_... reads them on the source, the default)
    config = flow(
        broker,
        target,
        topics=topic,
        groups="billing-.*",
        **{"offset-syncs.topic.location": "target"},
    )
    fast = {"emit.checkpoints.interval.seconds": "1", "emit.heartbeats.interval.seconds": "1"}
    with worker, httpx.Client(base_url=worker.url, timeout=60) as api:
        create(api, "mirror-src", {"connector.class": SOURCE, "offset.lag.max": "1", **config})
        create(
            api,
            "mirror-cp",
            {
                "connector.class": "MirrorCheckpointConnector",
                "sync.group.offsets.enabled": "true",
                **config,
                **fast,
            },
        )
        create(api, "mirror-hb", {"connector.class": "MirrorHeartbeat", **config, **fast})
        remote = f"A.{topic}"
        eventually(lambda: records_of(b, remote, 20), f"20 records in {remote}")

        def checkpoint() -> Checkpoint | None:
            found = [
                Checkpoint.decode(r.key or b"", r.value or b"")
                for r in internal(b, "A.checkpoints.internal")
            ]
            mine = [c for c in found if c.group == group]
            return mine[-1] if mine else None

        # exact once the syncs of the copied offsets are read (offset.lag.max=1: one per record)
        expected = Checkpoint(group, remote, 0, 12, 12)
        eventually(lambda: checkpoint() == expected, "the group's checkpoint")
        # the group has no member on B: its translated offset is committed there
        eventually(lambda: committed(b, group, remote) == 12, "the group's offset on B")
        # it moves on as the group does on A
        commit(a, group, topic, 17)
        eventually(lambda: committed(b, group, remote) == 17, "the group's new offset on B")
        # a consumer failing over asks where to resume, with the command and the Python API
        translate = ["mirror", "translate-offsets", "--group", group, "--source", "A"]
        answer = subprocess.run(
            [*strom_command(), *translate, "--bootstrap-server", b],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert answer.returncode == 0, answer.stderr
        assert answer.stdout.splitlines()[-1] == f"{remote} 0 17"
        assert translate_offsets({"bootstrap.servers": b}, "A", group) == {
            TopicPartition(remote, 0): 17
        }
        # the group fails over to B: it resumes exactly after what it read on A
        assert resume(b, group, remote, 3) == [b"v17", b"v18", b"v19"]
        assert eventually(lambda: _heartbeats(b, "heartbeats"), "heartbeats on B") == {("A", "B")}
        assert states(api, "mirror-cp") == ("RUNNING", ["RUNNING"])
        assert states(api, "mirror-hb") == ("RUNNING", ["RUNNING"])


def test_active_active_in_dedicated_mode_has_no_cycle(
    spark: SparkSession, broker: StromServer, target: StromServer
) -> None:
    """``strom mirror``'s engine with A->B and B->A: each side gets the other's topic under
    the other's alias and its heartbeats, and nothing comes back (no ``A.B.*``, ``B.A.*``)."""
    a, b = broker.bootstrap, target.bootstrap
    name = unique_topic("mirror-both")
    for bootstrap, value in ((a, b"from-a"), (b, b"from-b")):
        client = admin(bootstrap)
        client.create_topics([NewTopic(name, 1, 1)])[name].result(15)
        produce(bootstrap, name, [Record(value)])
    one = "1"
    config = MirrorMakerConfig.of(
        {
            "clusters": "A, B",
            "A.bootstrap.servers": a,
            "B.bootstrap.servers": b,
            "A->B.enabled": "true",
            "B->A.enabled": "true",
            "topics": f"{name}, heartbeats",
            "emit.checkpoints.enabled": "false",  # four queries, not six, on two cores
            **dict.fromkeys(
                [
                    "replication.factor",
                    "offset-syncs.topic.replication.factor",
                    "checkpoints.topic.replication.factor",
                    "heartbeats.topic.replication.factor",
                    "config.storage.replication.factor",
                    "offset.storage.replication.factor",
                    "status.storage.replication.factor",
                ],
                one,
            ),
        }
    )
    maker = MirrorMaker(config, spark=lambda: spark)
    maker.check_clusters()
    maker.start()
    try:
        assert [r.value for r in eventually(lambda: records_of(b, f"A.{name}", 1), "A's on B")] == [
            b"from-a"
        ]
        assert [r.value for r in eventually(lambda: records_of(a, f"B.{name}", 1), "B's on A")] == [
            b"from-b"
        ]
        eventually(lambda: partitions_of(a, "B.heartbeats"), "B's heartbeats on A")
        # B->A's heartbeats into A, carried on to B (the topic may be made before its records)
        beats = eventually(lambda: _heartbeats(b, "A.heartbeats"), "A's heartbeats on B")
        assert beats == {("B", "A")}
        for bootstrap in (a, b):
            assert not {
                t
                for t in admin(bootstrap).list_topics(timeout=10).topics
                if t.startswith(("A.B.", "B.A."))
            }
    finally:
        maker.stop()
