"""A Connect worker killed -9 in the middle of a JDBC copy, and started again: the target table
ends equal to the source, and no connector offset goes backwards.

Run: ``.venv/bin/python -m bench.connect_recovery [--quick] [--kill-at 0.3]``. Prints one
table: rows, when the worker was killed (rows in the topic then), how long the restarted
worker took to finish, the records the replay wrote twice, whether the target equals the
source, and the offsets' lowest step (never negative when nothing went backwards).

How it runs:

- One PostgreSQL (``strom.testing.postgres``), one ``strom server`` child process, and a
  ``strom connect worker.properties`` process (its own Spark on ``local[2]``, checkpoints in a
  temporary directory kept across the restart).
- A table ``bench`` filled as ``bench.connect_jdbc`` fills it; a ``JdbcSourceConnector``
  (``mode=incrementing``) copies it into a topic and a ``JdbcSinkConnector`` upserts the topic
  into ``bench_copy`` (``pk.mode=record_value``, ``pk.fields=id``, ``auto.create``).
- When the topic holds ``--kill-at`` of the rows, the worker's process group (Python, JVM,
  Python workers) gets SIGKILL; a new worker of the same ``group.id`` starts at once. Both
  connectors' offsets (REST ``GET /connectors/{name}/offsets``) are read every poll, before
  and after the kill.
- Done when ``bench_copy`` has as many rows as ``bench``; then the two tables are compared
  row by row in SQL.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import psycopg
from confluent_kafka import Consumer

from bench.connect_jdbc import fill
from bench.connector_run import topic_end
from strom.testing import Broker
from strom.testing.postgres import Postgres

FULL, QUICK = 1_000_000, 200_000
TOPIC = "recovery-bench"
TIMEOUT_S = 900
POLL_S = 0.5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Worker:
    """``strom connect`` as a child process in its own session (killed as a group)."""

    def __init__(self, directory: Path, bootstrap: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.properties = directory / "worker.properties"
        self.properties.write_text(
            "\n".join(
                (
                    f"bootstrap.servers={bootstrap}",
                    "group.id=recovery-bench",
                    "config.storage.topic=recovery-configs",
                    "offset.storage.topic=recovery-offsets",
                    "status.storage.topic=recovery-status",
                    f"listeners=http://127.0.0.1:{self.port}",
                    "spark.master=local[2]",
                    f"spark.sql.streaming.checkpointLocation={directory / 'checkpoints'}",
                    "spark.ui.showConsoleProgress=false",
                    "",
                )
            )
        )
        self.log = directory / "connect.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "strom", "connect", str(self.properties)],
                cwd=self.properties.parent,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{self.url}/", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the worker did not start: see {self.log}")
            time.sleep(0.2)

    def kill(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()


def _connectors(postgres: Postgres) -> dict[str, dict[str, str]]:
    common = {
        "connection.url": postgres.url,
        "connection.user": "postgres",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    }
    return {
        "copy-in": {
            **common,
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "table.whitelist": "bench",
            "mode": "incrementing",
            "incrementing.column.name": "id",
            "topic.prefix": "recovery-",
            "poll.interval.ms": "200",
        },
        "copy-out": {
            **common,
            "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
            "topics": TOPIC,
            "insert.mode": "upsert",
            "pk.mode": "record_value",
            "pk.fields": "id",
            "auto.create": "true",
            "table.name.format": "bench_copy",
        },
    }


def _offsets(api: httpx.Client, name: str) -> int | None:
    """The connector's one offset as a number (the source's ``incrementing``, the sink's
    ``kafka_offset``), None while it has none or the worker does not answer."""
    try:
        answer = api.get(f"/connectors/{name}/offsets", timeout=5)
    except httpx.HTTPError:
        return None
    if answer.status_code != 200 or not answer.json().get("offsets"):
        return None
    offset: dict[str, Any] = answer.json()["offsets"][0]["offset"]
    found = offset.get("incrementing", offset.get("kafka_offset"))
    return int(found) if found is not None else None


class Offsets:
    """Each connector's offsets as polled: the lowest step between two readings."""

    def __init__(self) -> None:
        self.last: dict[str, int] = {}
        self.lowest_step: dict[str, int] = {}

    def read(self, api: httpx.Client, names: Sequence[str]) -> None:
        for name in names:
            value = _offsets(api, name)
            if value is None:
                continue
            if name in self.last:
                step = value - self.last[name]
                self.lowest_step[name] = min(self.lowest_step.get(name, step), step)
            self.last[name] = value


def _copied(postgres: Postgres) -> int:
    with psycopg.connect(postgres.conninfo, autocommit=True) as db:
        exists = db.execute("SELECT to_regclass('bench_copy')").fetchone()
        if exists is None or exists[0] is None:
            return 0
        row = db.execute("SELECT count(*) FROM bench_copy").fetchone()
        return int(row[0]) if row else 0


def _equal(postgres: Postgres) -> bool:
    """Whether ``bench_copy`` holds exactly ``bench``'s rows."""
    with psycopg.connect(postgres.conninfo, autocommit=True) as db:
        row = db.execute(
            "SELECT (SELECT count(*) FROM bench) = (SELECT count(*) FROM bench_copy) AND NOT"
            " EXISTS (SELECT id, name, amount, at FROM bench EXCEPT"
            " SELECT id, name, amount, at FROM bench_copy)"
        ).fetchone()
        return bool(row and row[0])


def run(rows: int, kill_at: float, directory: Path) -> dict[str, Any]:
    """One copy with one kill: the figures ``main`` prints."""
    with Postgres.start() as postgres, Broker(process=True, data_dir=directory / "data") as broker:
        fill(postgres, rows)
        bootstrap = broker.bootstrap_servers
        worker = Worker(directory, bootstrap)
        offsets = Offsets()
        names = list(_connectors(postgres))
        watermarks = Consumer({"bootstrap.servers": bootstrap, "group.id": "recovery-watch"})
        try:
            worker.start()
            with httpx.Client(base_url=worker.url, timeout=60) as api:
                for name, config in _connectors(postgres).items():
                    answer = api.post("/connectors", json={"name": name, "config": config})
                    assert answer.status_code == 201, answer.text
                started = time.monotonic()
                while (in_topic := topic_end(watermarks, TOPIC, 1)) < rows * kill_at:
                    assert time.monotonic() - started < TIMEOUT_S, f"{in_topic} rows in the topic"
                    offsets.read(api, names)
                    time.sleep(POLL_S)
                offsets.read(api, names)
                copied_at_kill = _copied(postgres)
                worker.kill()
                killed = time.monotonic()
                print(f"killed the worker at {in_topic:,} records in the topic", file=sys.stderr)
                worker.start()
                while _copied(postgres) < rows:
                    assert time.monotonic() - killed < TIMEOUT_S, f"{_copied(postgres)} copied"
                    offsets.read(api, names)
                    time.sleep(POLL_S)
                finished = time.monotonic()
                offsets.read(api, names)
            return {
                "rows": rows,
                "killed_at": in_topic,
                "copied_at_kill": copied_at_kill,
                "restart_to_done_s": finished - killed,
                "twice": topic_end(watermarks, TOPIC, 1) - rows,
                "equal": _equal(postgres),
                "lowest_step": offsets.lowest_step,
            }
        finally:
            watermarks.close()
            worker.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK:,} rows, not {FULL:,}")
    parser.add_argument(
        "--kill-at", type=float, default=0.3, help="the share of rows in the topic at the kill"
    )
    args = parser.parse_args(argv)
    directory = Path(tempfile.mkdtemp(prefix="strom-recovery-"))
    started = time.monotonic()
    try:
        found = run(QUICK if args.quick else FULL, args.kill_at, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    steps = ", ".join(f"{name} {step:+,}" for name, step in sorted(found["lowest_step"].items()))
    print(f"\n{time.monotonic() - started:.0f} s, Python {sys.version.split()[0]}")
    print(
        "| rows | killed at (topic / table) | restart to done s | written twice | target equals"
        " source | lowest offset step |"
    )
    print("|---|---|---|---|---|---|")
    print(
        f"| {found['rows']:,} | {found['killed_at']:,} / {found['copied_at_kill']:,} |"
        f" {found['restart_to_done_s']:.1f} | {found['twice']:,} |"
        f" {'yes' if found['equal'] else 'NO'} | {steps or 'none read'} |"
    )
    print("goal: the target equals the source, and no step is negative")


if __name__ == "__main__":
    main()
