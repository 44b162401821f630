"""Two ``strom sql`` processes of one ``ksql.service.id`` against one ``strom server``: one
ksqlDB cluster. They share the command topic, so a statement sent to either is run by both (the
same streams and tables, the same queries, `/status/{commandId}` on both), pull queries answer
on both, each persistent query runs on one of them, and when the one running the aggregate is
killed -9 the other takes it over from its checkpoint after the session timeout: the table's
counts then equal the records produced, none lost, none counted twice.

Each server is a process with a Spark JVM of its own; the session timeout is short (settings)
so that the takeover waits seconds, not the default 45."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from strom_harness import StromServer, strom_command

from e2e.spark.clients import Record, consume_all, produce, unique_topic
from e2e.spark.sql_api import WAIT_S, eventually, ksql

pytestmark = [
    pytest.mark.timeout(float(os.environ.get("SQL_CLUSTER_TEST_TIMEOUT_S", "500"))),
    pytest.mark.skipif(shutil.which("java") is None, reason="queries run on Spark: no Java"),
]
SESSION_TIMEOUT_MS = 6000
"""The coordinator's smallest (``group.min.session.timeout.ms``)."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Server:
    """One ``strom sql`` process; ``url`` its REST API."""

    def __init__(self, properties: dict[str, str], directory: Path, name: str) -> None:
        self.url = f"http://127.0.0.1:{_free_port()}"
        config = directory / f"{name}.properties"
        config.write_text(
            "".join(f"{k}={v}\n" for k, v in {**properties, "listeners": self.url}.items())
        )
        self.log = directory / f"{name}.log"
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [*strom_command(), "sql", str(config)],
                cwd=directory,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.api = httpx.Client(base_url=self.url, timeout=60)

    def ready(self) -> bool:
        assert self.process.poll() is None, self.log.read_text()[-3000:]
        try:
            return self.api.get("/info").status_code == 200
        except httpx.HTTPError:
            return False

    def found(self, path: str) -> bool:
        return self.api.get(path).status_code == 200

    def states(self) -> dict[str, str]:
        return {q["id"]: q["state"] for q in ksql(self.api, "SHOW QUERIES;")[0]["queries"]}

    def kill(self) -> None:
        """kill -9 the process group: Python, its Spark JVM and Python workers."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)


@pytest.fixture
def servers(broker: StromServer, tmp_path: Path) -> Iterator[tuple[_Server, _Server]]:
    properties = {
        "bootstrap.servers": broker.bootstrap,
        "ksql.service.id": unique_topic("cluster") + "_",
        "ksql.streams.state.dir": str(tmp_path / "state"),  # shared: see strom.sql.owners
        "ksql.streams.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "ksql.streams.auto.offset.reset": "earliest",
        "ksql.internal.topic.replicas": "1",
        "ksql.sink.replicas": "1",
        "spark.master": "local[1]",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "1",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }
    started = [_Server(properties, tmp_path, name) for name in ("a", "b")]
    try:
        for server in started:
            eventually(server.ready, f"server {server.url} answering")
        yield started[0], started[1]
    finally:
        for server in started:
            server.api.close()
            if server.process.poll() is None:
                os.killpg(server.process.pid, signal.SIGTERM)
                try:
                    server.process.wait(30)
                except subprocess.TimeoutExpired:
                    server.kill()


def _orders(*regions: str) -> list[Record]:
    return [Record(json.dumps({"AMOUNT": 1.5}).encode(), key=r.encode()) for r in regions]


def _pulled(server: _Server, region: str, want: list[Any]) -> bool:
    """Whether a pull query of ``region`` on ``server`` answers ``want``."""
    sql = f"SELECT region, n, total FROM totals WHERE region = '{region}';"
    answer = server.api.post("/query-stream", json={"sql": sql})
    assert answer.status_code == 200, answer.text
    rows = [json.loads(line) for line in answer.text.splitlines()[1:]]
    return rows == want


def test_two_servers_of_one_service_share_statements_queries_and_a_killed_ones_work(
    broker: StromServer, servers: tuple[_Server, _Server]
) -> None:
    a, b = servers
    orders, totals = unique_topic("cluster-orders"), unique_topic("cluster-totals")
    ksql(
        a.api,
        "CREATE STREAM orders (region STRING KEY, amount DOUBLE) "
        f"WITH (KAFKA_TOPIC='{orders}', VALUE_FORMAT='JSON', PARTITIONS=1);"
        f"CREATE TABLE totals WITH (KAFKA_TOPIC='{totals}') AS SELECT region, COUNT(*) AS n, "
        "SUM(amount) AS total FROM orders GROUP BY region;",
    )
    # b ran the commands a wrote: its metastore has them, and it answers their statuses
    for server in (a, b):
        status = functools.partial(server.found, "/status/table/`TOTALS`/create")
        eventually(status, f"the CTAS's status on {server.url}")
        assert server.api.get("/status/stream/`ORDERS`/create").json()["status"] == "SUCCESS"
    # and a statement sent to b runs on a
    ksql(b.api, "CREATE STREAM big AS SELECT region, amount FROM orders WHERE amount > 100;")
    try:  # a starts b's query too: a Spark query's start, on a loaded machine
        eventually(
            lambda: {s["name"] for s in ksql(a.api, "SHOW STREAMS;")[0]["streams"]} >= {"BIG"},
            "b's stream on a",
            within=2 * WAIT_S,
        )
    except AssertionError as missing:
        found = a.api.get("/status/stream/`BIG`/create").text
        raise AssertionError(f"{missing}; its status on a: {found}") from None
    query_id = next(q for q in a.states() if q.startswith("CTAS_TOTALS"))

    def runner() -> _Server | None:
        """The one server that runs the aggregate (the other has it, not running)."""
        found = {s.url: s.states() for s in (a, b) if s.process.poll() is None}
        running = [s for s in (a, b) if found.get(s.url, {}).get(query_id) == "RUNNING"]
        return running[0] if len(running) == 1 else None

    produce(broker.bootstrap, orders, _orders("eu", "eu", "us"))
    owner = eventually(runner, "the aggregate running on one server")
    for server in (a, b):  # both answer pull queries, from the table's topic
        pulled = functools.partial(_pulled, server, "eu", [["eu", 2, 3.0]])
        eventually(pulled, f"a pull query on {server.url}")

    owner.kill()
    survivor = b if owner is a else a
    produce(broker.bootstrap, orders, _orders("eu", "eu"))
    assert eventually(runner, "the aggregate taken over") is survivor
    eventually(lambda: _pulled(survivor, "eu", [["eu", 4, 6.0]]), "the new counts")

    # the table's topic: every record counted once, none lost (read committed)
    def latest() -> dict[bytes | None, Any]:
        return {
            r.key: json.loads(r.value) for r in consume_all(broker.bootstrap, totals) if r.value
        }

    want = {b"eu": {"N": 4, "TOTAL": 6.0}, b"us": {"N": 1, "TOTAL": 1.5}}
    eventually(lambda: latest() == want, "the table's topic after the takeover")
    # the survivor still takes statements
    ksql(survivor.api, "DROP STREAM IF EXISTS nothing_here;")
