"""Two ``strom connect`` processes of one ``group.id`` against one ``strom server``: they share
the connectors through the group coordinator, a write sent to either works (the one that is not
the group's leader forwards it), and when the worker running a FileStreamSink is killed -9 the
other takes the connector over after the session timeout, and the sink's file ends up with
every record (at least once: a replayed batch may write lines twice, none is lost). The group
serves its REST API behind Kafka Connect's ``BasicAuthSecurityRestExtension``: a request without
the right credentials gets Connect's 401, and one a worker forwards keeps its credentials.

Each worker is a process with a Spark JVM of its own; the session timeout is short (settings)
so that the takeover waits seconds, not Connect's default ten."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from strom_harness import StromServer, strom_command

from e2e.spark.clients import Record, create_topic, produce, unique_topic
from e2e.spark.connect_api import create, eventually

pytestmark = [
    pytest.mark.timeout(float(os.environ.get("CONNECT_WORKERS_TEST_TIMEOUT_S", "400"))),
    pytest.mark.skipif(shutil.which("java") is None, reason="Connect runs on Spark: no Java"),
]
SESSION_TIMEOUT_MS = 6000
AUTH = ("admin", "admin-secret")
"""A user of the workers' password file; every call of the test goes with it."""
"""The coordinator's smallest (``group.min.session.timeout.ms``)."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Worker:
    """One ``strom connect`` process; ``url`` its REST API, ``worker_id`` as statuses name it."""

    def __init__(self, properties: dict[str, str], directory: Path, name: str) -> None:
        port = _free_port()
        self.worker_id = f"127.0.0.1:{port}"
        self.url = f"http://{self.worker_id}"
        config = directory / f"{name}.properties"
        values = {
            **properties,
            "listeners": self.url,
            "spark.sql.streaming.checkpointLocation": str(directory / f"{name}-checkpoints"),
        }
        config.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
        self.log = directory / f"{name}.log"
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [*strom_command(), "connect", str(config)],
                cwd=directory,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def ready(self) -> bool:
        assert self.process.poll() is None, self.log.read_text()[-3000:]
        try:
            return httpx.get(self.url + "/", auth=AUTH, timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def kill(self) -> None:
        """kill -9 the process group: Python, its Spark JVM and Python workers."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)


@pytest.fixture
def workers(broker: StromServer, tmp_path: Path) -> Iterator[tuple[_Worker, _Worker]]:
    group = unique_topic("workers")
    users = tmp_path / "users.properties"
    users.write_text("admin=admin-secret\nreader: reader-secret\n")
    jaas = tmp_path / "connect_jaas.conf"
    jaas.write_text(
        "KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension"
        f'.PropertyFileLoginModule required\n  file="{users}";\n}};\n'
    )
    properties = {
        "rest.extension.classes": "org.apache.kafka.connect.rest.basic.auth.extension"
        ".BasicAuthSecurityRestExtension",
        "java.security.auth.login.config": str(jaas),
        "bootstrap.servers": broker.bootstrap,
        "group.id": group,
        "config.storage.topic": f"{group}-configs",
        "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "offset.storage.partitions": "2",
        "status.storage.partitions": "1",
        "session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "heartbeat.interval.ms": "1000",
        "spark.master": "local[1]",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "1",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }
    started = [_Worker(properties, tmp_path, name) for name in ("a", "b")]
    try:
        for worker in started:
            eventually(worker.ready, f"worker {worker.url} answering")
        yield started[0], started[1]
    finally:
        for worker in started:
            if worker.process.poll() is None:
                os.killpg(worker.process.pid, signal.SIGTERM)
                try:
                    worker.process.wait(30)
                except subprocess.TimeoutExpired:
                    worker.kill()


def _runner(url: str, name: str) -> str | None:
    """The worker_id running ``name`` (connector and task RUNNING on one worker), or None."""
    try:
        status = httpx.get(f"{url}/connectors/{name}/status", auth=AUTH, timeout=10).json()
    except httpx.HTTPError:
        return None
    if "connector" not in status:
        return None
    tasks = status["tasks"]
    worker = status["connector"]["worker_id"]
    running = status["connector"]["state"] == "RUNNING" and tasks
    if running and all(t["state"] == "RUNNING" and t["worker_id"] == worker for t in tasks):
        return str(worker)
    return None


def test_workers_share_a_connector_and_one_takes_over_a_killed_ones(
    broker: StromServer, workers: tuple[_Worker, _Worker], tmp_path: Path
) -> None:
    a, b = workers
    topic = create_topic(broker.bootstrap, "workers-in")
    sink = tmp_path / "out.txt"
    first = [f"record-{i}" for i in range(50)]
    produce(broker.bootstrap, topic, [Record(v.encode()) for v in first])
    for credentials in (None, ("admin", "wrong"), ("nobody", "admin-secret")):
        refused = httpx.get(f"{a.url}/connectors", auth=credentials)
        assert (refused.status_code, refused.text) == (401, "User cannot access the resource.")
    listed = subprocess.run(
        [*strom_command(), "connectors", "list", "--url", b.url, "--user", "reader:reader-secret"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (listed.returncode, listed.stdout) == (0, ""), listed.stderr
    with httpx.Client(base_url=a.url, auth=AUTH, timeout=60) as api:
        create(
            api,
            "sink",
            {
                "connector.class": "FileStreamSink",
                "topics": topic,
                "file": str(sink),
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            },
        )
    # both workers answer for it, and name the one that runs it
    running_on = eventually(lambda: _runner(b.url, "sink"), "the sink running")
    assert running_on in (a.worker_id, b.worker_id)
    assert eventually(lambda: _runner(a.url, "sink"), "the same answer from a") == running_on

    def lines() -> set[str]:
        return set(sink.read_text().splitlines()) if sink.exists() else set()

    eventually(lambda: lines() >= set(first), "the first records in the file")

    # a write is the leader's: told not to forward (as a forwarded request is), the other
    # worker refuses with Connect's 409; asked plainly, it forwards to the leader
    pauses = {
        w.url: httpx.put(f"{w.url}/connectors/sink/pause?forward=false", auth=AUTH) for w in (a, b)
    }
    assert sorted(r.status_code for r in pauses.values()) == [202, 409], pauses
    follower = a if pauses[a.url].status_code == 409 else b
    leader = b if follower is a else a
    assert pauses[follower.url].json() == {
        "error_code": 409,
        "message": "Cannot complete request because of a conflicting operation (e.g. worker"
        " rebalance)",
    }
    eventually(
        lambda: (
            httpx.get(f"{follower.url}/connectors/sink/status", auth=AUTH).json()["connector"][
                "state"
            ]
            == "PAUSED"
        ),
        "the sink paused",
    )
    # forwarded to the leader with the caller's credentials (without them the leader refuses)
    unauthorized = httpx.put(f"{follower.url}/connectors/sink/resume", timeout=60)
    assert unauthorized.status_code == 401
    resumed = httpx.put(f"{follower.url}/connectors/sink/resume", auth=AUTH, timeout=60)
    assert resumed.status_code == 202
    eventually(lambda: _runner(a.url, "sink"), "the sink running again")

    owner, survivor = (a, b) if running_on == a.worker_id else (b, a)
    owner.kill()
    if owner is leader:  # until the session times out the survivor forwards to the dead one
        answer = httpx.put(f"{survivor.url}/connectors/sink/pause", auth=AUTH, timeout=60)
        assert answer.status_code == 500, answer.text
        assert answer.json()["message"].startswith("IO Error trying to forward REST request")
    second = [f"record-{i}" for i in range(50, 100)]
    produce(broker.bootstrap, topic, [Record(v.encode()) for v in second])
    eventually(lambda: _runner(survivor.url, "sink") == survivor.worker_id, "the takeover")
    eventually(lambda: lines() >= set(first + second), "every record in the file")
    # the survivor, now the leader, takes writes itself
    answer = httpx.put(f"{survivor.url}/connectors/sink/pause", auth=AUTH, timeout=60)
    assert answer.status_code == 202, answer.text
