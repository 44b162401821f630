"""KIP-618's exactly-once sources on strom Connect: with the worker's
``exactly.once.source.support=enabled`` the file source (and the JDBC source) write each
micro-batch's records and the source offsets after them in one transaction, validated as
Connect validates ``exactly.once.support`` and ``transaction.boundary``; a worker killed -9
mid-copy and a new one that takes over leave every line in the topic once, in order."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.cimpl import NewTopic
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import Record, admin, consume_all, create_topic, unique_topic
from e2e.spark.connect_api import create, eventually
from e2e.spark.test_connect_workers import _Worker
from strom.testing.connect import Connect
from strom.testing.postgres import Postgres

STRING = {"value.converter": "org.apache.kafka.connect.storage.StringConverter"}


def _errors(answer: httpx.Response) -> dict[str, list[str]]:
    return {
        c["value"]["name"]: c["value"]["errors"]
        for c in answer.json()["configs"]
        if c["value"]["errors"]
    }


def test_exactly_once_is_validated_as_connect_does(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    config = {
        "name": "eos",
        "connector.class": "FileStreamSource",
        "file": str(tmp_path / "in.txt"),
        "topic": "t",
        "exactly.once.support": "required",
    }
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        found = _errors(api.put("/connector-plugins/FileStreamSource/config/validate", json=config))
        assert found == {
            "exactly.once.support": [
                "This worker does not have exactly-once source support enabled"
                " (exactly.once.source.support=enabled)."
            ]
        }
        answer = api.post("/connectors", json={"name": "eos", "config": config})
        assert answer.status_code == 400 and "exactly-once" in answer.json()["message"]
    with (
        Connect(broker.bootstrap, spark=lambda: spark, exactly_once_source=True) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        checked = api.put(
            "/connector-plugins/FileStreamSource/config/validate",
            json={**config, "transaction.boundary": "connector"},
        )
        assert list(_errors(checked)) == ["transaction.boundary"]
        mirror = api.put(
            "/connector-plugins/MirrorCheckpointConnector/config/validate",
            json={
                "connector.class": "MirrorCheckpointConnector",
                "exactly.once.support": "required",
            },
        )
        assert "exactly.once.support" in _errors(mirror)


def test_file_source_writes_lines_and_offsets_in_one_transaction(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("".join(f"line {n}\n" for n in range(25)))
    topic = create_topic(broker.bootstrap, "connect-eos")
    with (
        Connect(broker.bootstrap, spark=lambda: spark, exactly_once_source=True) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        config = {
            "connector.class": "FileStreamSource",
            "file": str(source),
            "topic": topic,
            "batch.size": "10",
            "exactly.once.support": "required",
            **STRING,
        }
        create(api, "eos-in", config)

        def committed() -> list[Record] | None:
            found = consume_all(broker.bootstrap, topic)
            return found if len(found) >= 25 else None

        lines = eventually(committed, "25 committed lines")
        assert [r.value for r in lines] == [f"line {n}".encode() for n in range(25)]
        end = source.stat().st_size
        eventually(
            lambda: (
                api.get("/connectors/eos-in/offsets").json()["offsets"]
                == [{"partition": {"filename": str(source)}, "offset": {"position": end}}]
            ),
            "the offset after the last line",
        )
        offsets = consume_all(broker.bootstrap, worker.settings.offset_topic, 3)
        mine = [json.loads(r.value or b"null") for r in offsets if b"eos-in" in (r.key or b"")]
        # one offset per micro-batch of 10 lines, in its transaction: 7 bytes a line, then 8
        assert mine == [{"position": 70}, {"position": 150}, {"position": end}]


LINES = 20_000


def _open_transaction(bootstrap: str, topic: str) -> Callable[[], bool]:
    """Whether a transaction on ``topic`` is open now: its end for a read_committed consumer
    (the last stable offset) is below its high watermark."""
    ends = [
        Consumer({"bootstrap.servers": bootstrap, "group.id": "probe", "isolation.level": level})
        for level in ("read_committed", "read_uncommitted")
    ]

    def check() -> bool:
        stable, high = (c.get_watermark_offsets(TopicPartition(topic, 0))[1] for c in ends)
        return bool(stable >= LINES // 10 and high > stable)

    return check


@pytest.mark.timeout(float(os.environ.get("CONNECT_WORKERS_TEST_TIMEOUT_S", "400")))
@pytest.mark.skipif(shutil.which("java") is None, reason="Connect runs on Spark: no Java")
def test_a_worker_killed_mid_transaction_leaves_every_line_once(
    broker: StromServer, tmp_path: Path
) -> None:
    """kill -9 of the worker (its Spark JVM too) while a micro-batch's transaction is open;
    another worker of the group, with a checkpoint of its own, starts from the offsets topic:
    its committed offset is that of the lines committed with it, so the topic ends with every
    line once, in order (the open transaction is aborted when the new worker's write fences
    its transactional id)."""
    source = tmp_path / "big.txt"
    padding = "x" * 100
    source.write_text("".join(f"line {n} {padding}\n" for n in range(LINES)))
    topic = create_topic(broker.bootstrap, "connect-eos-kill")
    group = unique_topic("eos")
    properties = {
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
        "exactly.once.source.support": "enabled",
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "1000",
        "spark.master": "local[1]",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "1",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }
    expected = [f"line {n} {padding}".encode() for n in range(LINES)]
    first = _Worker(properties, tmp_path, "first")
    second = None
    try:
        eventually(first.ready, "the first worker answering")
        config = {
            "connector.class": "FileStreamSource",
            "file": str(source),
            "topic": topic,
            "batch.size": "1000",
            "exactly.once.support": "required",
            **STRING,
        }
        answer = httpx.post(
            first.url + "/connectors", json={"name": "copy", "config": config}, timeout=60
        )
        assert answer.status_code == 201, answer.text
        eventually(_open_transaction(broker.bootstrap, topic), "a transaction open", every=0.02)
        first.kill()
        copied = consume_all(broker.bootstrap, topic)
        assert len(copied) < LINES, "killed too late: the copy was over"
        assert [r.value for r in copied] == expected[: len(copied)]
        second = _Worker(properties, tmp_path, "second")
        eventually(second.ready, "the second worker answering")

        def copied_all() -> list[Record] | None:
            found = consume_all(broker.bootstrap, topic)
            return found if len(found) >= LINES else None

        lines = eventually(copied_all, "every line", within=240)
        assert [r.value for r in lines] == expected  # none twice, none lost, in order
    finally:
        for worker in (first, second):
            if worker is not None:
                worker.kill()


def test_jdbc_source_writes_rows_and_offsets_in_one_transaction(
    spark: SparkSession, broker: StromServer, postgres: Postgres, tmp_path: Path
) -> None:
    table = unique_topic("eos_rows").replace("-", "_")
    with psycopg.connect(postgres.conninfo, autocommit=True) as db:
        db.execute(f"CREATE TABLE {table} (id serial PRIMARY KEY, name text)")
        db.execute(f"INSERT INTO {table} (name) SELECT 'n' || g FROM generate_series(1, 30) g")
        topic = f"eos-{table}"
        client = admin(broker.bootstrap)  # kept until the result is in
        client.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
        with (
            Connect(broker.bootstrap, spark=lambda: spark, exactly_once_source=True) as worker,
            httpx.Client(base_url=worker.url, timeout=60) as api,
        ):
            config = {
                "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
                "connection.url": postgres.url,
                "connection.user": "postgres",
                "table.whitelist": table,
                "mode": "incrementing",
                "incrementing.column.name": "id",
                "topic.prefix": "eos-",
                "poll.interval.ms": "300",
                "exactly.once.support": "required",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "false",
            }
            create(api, "rows-in", config)

            def rows(count: int) -> Callable[[], list[Any] | None]:
                def check() -> list[Any] | None:
                    found = [
                        json.loads(r.value or b"null") for r in consume_all(broker.bootstrap, topic)
                    ]
                    return found if len(found) >= count else None

                return check

            assert [v["id"] for v in eventually(rows(30), "30 rows")] == list(range(1, 31))
            db.execute(f"INSERT INTO {table} (name) VALUES ('later')")
            assert [v["id"] for v in eventually(rows(31), "31 rows")] == list(range(1, 32))
            offsets = consume_all(broker.bootstrap, worker.settings.offset_topic, 3)
            mine = [json.loads(r.value or b"null") for r in offsets if b"rows-in" in (r.key or b"")]
            assert mine == [{"incrementing": 30}, {"incrementing": 31}]  # one per micro-batch
            assert api.get("/connectors/rows-in/offsets").json()["offsets"] == [
                {"partition": {"table": table}, "offset": {"incrementing": 31}}
            ]
