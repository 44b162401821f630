"""``strom mirror mm2.properties`` as a process between two real strom brokers: killed -9
(the process group: Python, its Spark JVM and workers) while records are being written to A,
and started again, it mirrors every record to B, none lost (a replayed micro-batch may write some
twice: at least once); with ``exactly.once.source.support = enabled`` a read_committed consumer of
B reads every record exactly once, in order."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from strom_harness import StromServer, start_strom_server, strom_command, strom_server_args

WAIT_S = float(os.environ.get("MIRROR_TEST_WAIT_S", "240"))
pytestmark = [
    pytest.mark.timeout(float(os.environ.get("MIRROR_TEST_TIMEOUT_S", "900"))),
    pytest.mark.skipif(shutil.which("java") is None, reason="the mirror runs on Spark: no Java"),
]


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[tuple[StromServer, StromServer]]:
    a = start_strom_server(data_dir=tmp_path / "a", cwd=tmp_path)
    b = start_strom_server(data_dir=tmp_path / "b", cwd=tmp_path)
    yield a, b
    a.stop(signal.SIGTERM)
    b.stop(signal.SIGTERM)


def _values(bootstrap: str, topic: str, isolation: str = "read_uncommitted") -> list[bytes]:
    """Every value of partition 0 of ``topic`` (none while it does not exist)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mirror-check",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    try:
        if topic not in consumer.list_topics(timeout=10).topics:
            return []
        consumer.assign([KafkaTopicPartition(topic, 0, OFFSET_BEGINNING)])
        values: list[bytes] = []
        while True:
            message: Any = consumer.poll(10)
            assert message is not None, "no end of the partition within 10 s"
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                return values
            values.append(message.value())
    finally:
        consumer.close()


def _start(config: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [*strom_command(), "mirror", str(config)],
            cwd=config.parent,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _wait_for(check: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {WAIT_S} s"
        time.sleep(1)


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once"])
def test_a_mirror_killed_mid_stream_resumes_with_nothing_lost(
    clusters: tuple[StromServer, StromServer], tmp_path: Path, exactly_once: bool
) -> None:
    a, b = clusters
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(15)
    config = tmp_path / "mm2.properties"
    config.write_text(
        "clusters = A, B\n"
        f"A.bootstrap.servers = {a.bootstrap}\nB.bootstrap.servers = {b.bootstrap}\n"
        "A->B.enabled = true\nA->B.topics = orders\n"
        "emit.heartbeats.enabled = false\nemit.checkpoints.enabled = false\n"
        "replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"
        "config.storage.replication.factor = 1\noffset.storage.replication.factor = 1\n"
        "status.storage.replication.factor = 1\n"
        f"exactly.once.source.support = {'enabled' if exactly_once else 'disabled'}\n"
        f"spark.master = local[2]\nspark.sql.streaming.checkpointLocation = {tmp_path / 'cp'}\n"
    )
    producer = Producer({"bootstrap.servers": a.bootstrap, "linger.ms": 5})
    written = [b"r%d" % i for i in range(600)]

    def write(values: list[bytes]) -> None:
        for value in values:
            producer.produce("orders", value, partition=0)
        assert producer.flush(30) == 0

    isolation = "read_committed" if exactly_once else "read_uncommitted"

    def copied() -> list[bytes]:
        return _values(b.bootstrap, "A.orders", isolation)

    write(written[:200])
    log = tmp_path / "mirror.log"
    mirror = _start(config, log)
    try:
        _wait_for(lambda: len(copied()) >= 200, "first records on B")
        write(written[200:400])
        os.killpg(mirror.pid, signal.SIGKILL)  # mid-stream, as kill -9
        mirror.wait(30)
        write(written[400:])
        mirror = _start(config, log)
        _wait_for(lambda: set(copied()) >= set(written), "all on B")
        on_b = copied()
        if exactly_once:
            assert on_b == written  # each once, in order
        assert set(on_b) == set(written)  # nothing lost, nothing made up
        order = [written.index(v) for v in on_b]
        first: dict[int, int] = {}
        for position, index in enumerate(order):
            first.setdefault(index, position)
        assert sorted(first, key=first.__getitem__) == list(range(600))  # in order
    finally:
        os.killpg(mirror.pid, signal.SIGTERM)
        mirror.wait(60)


OUTAGE_S = float(os.environ.get("MIRROR_TEST_OUTAGE_S", "10"))
"""How long A is down in the outage test (issue 30 says a minute; the suite keeps it short)."""


def test_a_source_down_for_a_while_and_back_loses_nothing(
    clusters: tuple[StromServer, StromServer], tmp_path: Path
) -> None:
    a, b = clusters
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(15)
    config = tmp_path / "mm2.properties"
    config.write_text(
        "clusters = A, B\n"
        f"A.bootstrap.servers = {a.bootstrap}\nB.bootstrap.servers = {b.bootstrap}\n"
        "A.default.api.timeout.ms = 2000\n"  # the outage outlasts the source's requests
        "A->B.enabled = true\nA->B.topics = orders\n"
        "emit.heartbeats.enabled = false\nemit.checkpoints.enabled = false\n"
        "replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"
        "config.storage.replication.factor = 1\noffset.storage.replication.factor = 1\n"
        "status.storage.replication.factor = 1\n"
        f"spark.master = local[2]\nspark.sql.streaming.checkpointLocation = {tmp_path / 'cp'}\n"
    )
    written = [b"r%d" % i for i in range(200)]

    def write(bootstrap: str, values: list[bytes]) -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for value in values:
            producer.produce("orders", value, partition=0)
        assert producer.flush(30) == 0

    write(a.bootstrap, written[:100])
    log = tmp_path / "mirror.log"
    mirror = _start(config, log)
    back: StromServer | None = None
    try:
        _wait_for(lambda: len(_values(b.bootstrap, "A.orders")) >= 100, "first records on B")
        a.stop(signal.SIGTERM)
        time.sleep(OUTAGE_S)
        _wait_for(lambda: "is unreachable" in log.read_text(errors="replace"), "retry line")
        back = StromServer(
            strom_server_args(data_dir=tmp_path / "a", listener=a.bootstrap), cwd=tmp_path
        )
        back.wait_ready(timeout=15)
        write(back.bootstrap, written[100:])
        _wait_for(lambda: set(_values(b.bootstrap, "A.orders")) >= set(written), "all on B")
        assert mirror.poll() is None, "the mirror exited"
        assert set(_values(b.bootstrap, "A.orders")) == set(written)
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if "retrying" in ln]
        assert f"cluster A ({a.bootstrap}) is unreachable" in lines[0], lines[0]
        assert "FAILED" not in log.read_text(errors="replace")
    finally:
        os.killpg(mirror.pid, signal.SIGTERM)
        mirror.wait(60)
        if back is not None:
            back.stop(signal.SIGTERM)
