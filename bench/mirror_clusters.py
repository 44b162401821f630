"""MirrorMaker 2 between two real 3-broker strom clusters: an outage of A and a consumer
group's failover to B (issue 30's cluster tests; too heavy for the pytest suite on two cores).

Run: ``.venv/bin/python -m bench.mirror_clusters [--outage-seconds 60] [--scenario ...]``.
Exit status 1 when a check fails. What runs:

- Clusters A and B, each 3 brokers and 1 controller (``strom.testing.Cluster``: brokers fenced
  after 4 s, elections within a second), topics of 3 partitions, RF 3, ``min.insync.replicas``
  2; one ``strom mirror mm2.properties`` process (A->B, checkpoints every
  ``--checkpoint-seconds``) for both scenarios.
- ``outage``: an idempotent acks=all producer writes to ``events`` on A while the mirror copies
  it; every node of A is killed (-9) mid-stream, stays down ``--outage-seconds``, and is
  started again; the producer writes more. Checked: every record A acknowledged reaches
  ``A.events`` on B, and the mirror process is still running.
- ``failover``: a consumer group reads ``orders`` on A at a steady pace, committing as it
  goes, while the mirror copies it and emits checkpoints; once B holds every record and a
  checkpoint of each partition, A is killed (the group with it). The group's offsets are
  translated (``translate_offsets``, MM2's ``RemoteClusterUtils.translateOffsets``) and it
  resumes on ``A.orders`` on B. Checked: no record read on neither cluster (none lost), and the
  records read on both at most those the group read on A in its last two checkpoint intervals
  and 2 s plus the syncs' granularity per partition (``offset.lag.max``, or more in a batch
  copying more than ``SYNCS_PER_BATCH`` times that).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from strom.connect.connectors.mirror import translate_offsets
from strom.connect.connectors.mirror.translate import SYNCS_PER_BATCH
from strom.testing import Cluster

PARTITIONS = 3
LAG_MAX = 100
SETTINGS = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "replica.lag.time.max.ms": "3000",
}
WAIT_S = float(os.environ.get("MIRROR_CLUSTERS_WAIT_S", "300"))


MIRROR: list[subprocess.Popen[bytes]] = []
"""The mirror process, once started: waits end at once when it exits."""


def wait_for(check: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout:g} s")
        if MIRROR and MIRROR[0].poll() is not None:
            raise AssertionError(f"the mirror exited ({MIRROR[0].returncode}) before {what}")
        time.sleep(1)


def create(bootstrap: str, *topics: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, PARTITIONS, 3) for t in topics]).values():
        future.result(60)


def read_all(bootstrap: str, topic: str) -> list[bytes]:
    """Every value of ``topic`` (none while it does not exist)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "mirror-clusters-check",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        if topic not in consumer.list_topics(timeout=10).topics:
            return []
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        return _until_eof(consumer, PARTITIONS)
    finally:
        consumer.close()


def _until_eof(consumer: Consumer, partitions: int) -> list[bytes]:
    """The values up to the end of the ``partitions`` partitions ``consumer`` is assigned."""
    values: list[bytes] = []
    ended: set[int] = set()
    while len(ended) < partitions:
        message: Any = consumer.poll(10)
        assert message is not None, "no end of the partitions within 10 s"
        if message.error() is not None:
            assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
            ended.add(message.partition())
            continue
        values.append(message.value())
    return values


def mm2_properties(base: Path, a: Cluster, b: Cluster, checkpoint_s: int) -> Path:
    path = base / "mm2.properties"
    path.write_text(
        "clusters = A, B\n"
        f"A.bootstrap.servers = {a.bootstrap_servers}\n"
        f"B.bootstrap.servers = {b.bootstrap_servers}\n"
        "A.default.api.timeout.ms = 2000\n"
        "A->B.enabled = true\nA->B.topics = events, orders\nA->B.groups = failover\n"
        "emit.heartbeats.enabled = false\n"
        f"emit.checkpoints.interval.seconds = {checkpoint_s}\n"
        f"offset.lag.max = {LAG_MAX}\n"
        "replication.factor = 3\noffset-syncs.topic.replication.factor = 3\n"
        "checkpoints.topic.replication.factor = 3\n"
        f"spark.master = local[2]\nspark.sql.streaming.checkpointLocation = {base / 'cp'}\n"
    )
    return path


class Writer(threading.Thread):
    """An idempotent acks=all producer writing ``rate`` records a second to ``topic`` until
    stopped; ``acked`` holds the values A acknowledged."""

    def __init__(self, bootstrap: str, topic: str, prefix: str, rate: float) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 10_000,
                "log_level": 0,
            }
        )
        self.topic, self.prefix, self.rate = topic, prefix, rate
        self.acked: set[bytes] = set()
        self.sent = 0
        self.stopping = threading.Event()

    def _delivered(self, error: Any, message: Any) -> None:
        if error is None:
            self.acked.add(message.value())

    def run(self) -> None:
        started = time.monotonic()
        while not self.stopping.is_set():
            while self.sent < (time.monotonic() - started) * self.rate:
                value = b"%s-%07d" % (self.prefix.encode(), self.sent)
                try:
                    self.producer.produce(self.topic, value, on_delivery=self._delivered)
                except BufferError:
                    break
                self.sent += 1
            self.producer.poll(0.01)
        self.producer.flush(30)


def outage(a: Cluster, b: Cluster, mirror: subprocess.Popen[bytes], seconds: float) -> list[str]:
    """A down for ``seconds`` mid-stream and back: what failed (empty: nothing)."""
    before = Writer(a.bootstrap_servers, "events", "before", rate=500)
    before.start()
    wait_for(lambda: len(read_all(b.bootstrap_servers, "A.events")) > 1000, "records on B")
    for node in a.nodes:
        a.kill(node)
    before.stopping.set()
    before.join(60)
    print(f"outage: A down for {seconds:g} s, {len(before.acked)} records acknowledged before")
    time.sleep(seconds)
    for node in sorted(a.nodes, reverse=True):  # the controller (1001) first
        a.restart(node)
    after = Writer(a.bootstrap_servers, "events", "after", rate=500)
    after.start()
    time.sleep(5)
    after.stopping.set()
    after.join(60)
    acked = before.acked | after.acked
    wait_for(lambda: set(read_all(b.bootstrap_servers, "A.events")) >= acked, "every record")
    on_b = read_all(b.bootstrap_servers, "A.events")
    print(f"outage: {len(acked)} acknowledged on A, {len(on_b)} on B ({len(set(on_b))} distinct)")
    failed = [f"{len(acked - set(on_b))} acknowledged records missing on B"] * bool(
        acked - set(on_b)
    )
    if mirror.poll() is not None:
        failed.append(f"the mirror exited ({mirror.returncode})")
    return failed


def failover(a: Cluster, b: Cluster, checkpoint_s: int, read_s: float) -> list[str]:
    """The group reads ``orders`` on A, A dies, the group resumes on B at its translated
    offsets: what failed (empty: nothing)."""
    writer = Producer({"bootstrap.servers": a.bootstrap_servers, "enable.idempotence": True})
    written = [b"order-%06d" % n for n in range(30_000)]
    for value in written:
        while True:
            try:
                writer.produce("orders", value)
                break
            except BufferError:
                writer.poll(0.05)
    assert writer.flush(60) == 0
    group = {"bootstrap.servers": a.bootstrap_servers, "group.id": "failover"}
    on_b = {"bootstrap.servers": b.bootstrap_servers}
    consumer = Consumer({**group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["orders"])
    read_on_a: list[tuple[float, bytes]] = []
    started = looked = time.monotonic()
    copied = False
    # ~1000 records a second, committed as read, for read_s and until B holds every record and
    # checkpoints of every partition (the mirror's first syncs come after its first batch)
    while time.monotonic() - started < read_s or not copied:
        assert time.monotonic() - started < WAIT_S, "orders and checkpoints not all on B"
        messages = [m for m in consumer.consume(100, timeout=1) if m.error() is None]
        read_on_a += [(time.monotonic(), m.value() or b"") for m in messages]
        if messages:
            consumer.commit(asynchronous=False)
        time.sleep(0.1)
        if not copied and time.monotonic() - looked > 2:
            copied = (
                len(read_all(b.bootstrap_servers, "A.orders")) >= len(written)
                and len(translate_offsets(on_b, "A", "failover")) == PARTITIONS
            )
            looked = time.monotonic()
    down = time.monotonic()  # A dies with the group still reading
    for node in a.nodes:
        a.kill(node)
    consumer.close()
    offsets = translate_offsets(on_b, "A", "failover")
    print(f"failover: {len(read_on_a)} read on A; translated offsets {offsets}")
    resumed = Consumer(
        {
            "bootstrap.servers": b.bootstrap_servers,
            "group.id": "failover",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    resumed.assign([TopicPartition(tp.topic, tp.partition, o) for tp, o in offsets.items()])
    read_on_b = _until_eof(resumed, len(offsets)) if offsets else []
    resumed.close()
    on_a = {value for _, value in read_on_a}
    lost = set(written) - on_a - set(read_on_b)
    twice = on_a & set(read_on_b)
    window = 2 * checkpoint_s + 2  # a checkpoint interval late, and one query trigger's slack
    granularity = max(LAG_MAX, -(-len(written) // SYNCS_PER_BATCH))  # a batch of all of it
    bound = sum(1 for at, _ in read_on_a if at > down - window) + PARTITIONS * granularity
    print(
        f"failover: {len(read_on_b)} read on B from the translated offsets; lost {len(lost)}, "
        f"read on both {len(twice)} (bound {bound})"
    )
    failed = [f"{len(lost)} records lost"] * bool(lost)
    if len(offsets) != PARTITIONS:
        failed.append(f"offsets translated for {len(offsets)} of {PARTITIONS} partitions")
    if len(twice) > bound:
        failed.append(f"{len(twice)} records read twice, more than {bound}")
    return failed


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outage-seconds", type=float, default=60.0, help="A down this long")
    parser.add_argument("--checkpoint-seconds", type=int, default=1, help="checkpoint interval")
    parser.add_argument("--read-seconds", type=float, default=10.0, help="the group reads on A")
    parser.add_argument(
        "--scenario", choices=["outage", "failover", "all"], default="all", help="what to run"
    )
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="strom-mirror-clusters-"))
    failed: list[str] = []
    started = time.monotonic()
    with (
        Cluster(brokers=3, controllers=1, data_dir=base / "a", config=SETTINGS) as a,
        Cluster(brokers=3, controllers=1, data_dir=base / "b", config=SETTINGS) as b,
    ):
        create(a.bootstrap_servers, "events", "orders")
        log = base / "mirror.log"
        properties = mm2_properties(base, a, b, args.checkpoint_seconds)
        with log.open("ab") as out:
            mirror = subprocess.Popen(
                [sys.executable, "-m", "strom", "mirror", str(properties)],
                cwd=base,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        MIRROR.append(mirror)
        try:
            if args.scenario in ("outage", "all"):
                failed += outage(a, b, mirror, args.outage_seconds)
            if args.scenario in ("failover", "all"):
                failed += failover(a, b, args.checkpoint_seconds, args.read_seconds)
        finally:
            os.killpg(mirror.pid, signal.SIGTERM)
            mirror.wait(60)
    print(f"{time.monotonic() - started:.0f} s")
    if failed:
        print(f"FAILED: {'; '.join(failed)} (the clusters' and the mirror's logs: {base})")
        sys.exit(1)
    shutil.rmtree(base, ignore_errors=True)
    print("passed")


if __name__ == "__main__":
    main()
