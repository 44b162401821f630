"""Debezium's PostgreSQL connector on a strom Connect worker against a real PostgreSQL (the
suite's ``postgres``, ``wal_level=logical``), created over the REST API with the JSON a Debezium
user sends: the initial snapshot (op r), then inserts, updates and deletes (c, u, d and a
tombstone) in Debezium's envelope, the confirmed LSN as the offset, and a restarted worker
continuing from it (no second snapshot, nothing twice); the database restarted mid-snapshot
fails the task with the reason, and a restart of it takes the whole snapshot again."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psycopg
import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.cimpl import NewTopic
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import admin, consume_all, unique_topic
from e2e.spark.connect_api import create, eventually, failed
from strom.testing.connect import Connect
from strom.testing.postgres import Postgres


@pytest.fixture
def db(postgres: Postgres) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(postgres.conninfo, autocommit=True) as connection:
        yield connection


def _events(bootstrap: str, topic: str, count: int) -> Callable[[], list[Any] | None]:
    def check() -> list[Any] | None:
        records = consume_all(bootstrap, topic)
        assert len(records) <= count, f"more events than changes: {records}"
        if len(records) < count:
            return None
        return [
            (json.loads(r.key or b"null"), r.value and json.loads(r.value)["payload"])
            for r in records
        ]

    return check


def _capture(postgres: Postgres, name: str) -> dict[str, str]:
    """Debezium's settings capturing table ``name`` (the slot, publication and topic prefix
    named after it too)."""
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": postgres.host,
        "database.port": str(postgres.port),
        "database.user": "postgres",
        "database.dbname": postgres.database,
        "topic.prefix": name,
        "table.include.list": f"public.{name}",
        "slot.name": name,
        "publication.name": name,
    }


def _captured_topic(broker: StromServer, name: str) -> str:
    """The topic of table ``name``'s changes, made with one partition."""
    topic = f"{name}.public.{name}"
    client = admin(broker.bootstrap)  # kept until the result is in: a dropped client cancels it
    client.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    return topic


def test_snapshot_then_changes_in_debeziums_envelope_and_a_restart_resumes(
    spark: SparkSession, broker: StromServer, postgres: Postgres, db: psycopg.Connection[Any]
) -> None:
    name = unique_topic("cdc").replace("-", "_")
    db.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, name text, amount numeric(10,2))")
    db.execute(f"INSERT INTO {name} VALUES (1, 'before the connector', 1.50)")
    topic = _captured_topic(broker, name)
    config = {
        **_capture(postgres, name),
        "database.password": "",
        "plugin.name": "pgoutput",
        "snapshot.mode": "initial",
        "poll.interval.ms": "300",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    }
    worker = Connect(broker.bootstrap, spark=lambda: spark)
    try:
        with worker, httpx.Client(base_url=worker.url, timeout=60) as api:
            create(api, "cdc", config)
            [(key, read)] = eventually(_events(broker.bootstrap, topic, 1), "the snapshot")
            assert key["payload"] == {"id": 1} and key["schema"]["name"] == f"{topic}.Key"
            assert read["op"] == "r" and read["before"] is None
            assert read["after"]["id"] == 1 and read["after"]["name"] == "before the connector"
            assert read["source"]["snapshot"] == "true"
            db.execute(f"INSERT INTO {name} VALUES (2, 'new', NULL)")
            db.execute(f"UPDATE {name} SET name = 'changed' WHERE id = 1")
            db.execute(f"DELETE FROM {name} WHERE id = 2")
            events = eventually(_events(broker.bootstrap, topic, 5), "four changes")[1:]
            (_, created), (_, updated), (deleted_key, deleted), (tomb_key, tombstone) = events
            assert created["op"] == "c" and created["after"] == {
                "id": 2,
                "name": "new",
                "amount": None,
            }
            assert updated["op"] == "u" and updated["after"]["name"] == "changed"
            assert deleted["op"] == "d" and deleted["after"] is None
            assert deleted["before"] == {"id": 2, "name": None, "amount": None}  # the key only
            assert deleted_key == tomb_key and tombstone is None
            source = deleted["source"]
            assert (source["db"], source["schema"], source["table"]) == (
                postgres.database,
                "public",
                name,
            )
            assert source["connector"] == "postgresql" and source["snapshot"] == "false"
            assert created["source"]["lsn"] < updated["source"]["lsn"] < source["lsn"]

            def confirmed() -> Any:
                [offset] = api.get("/connectors/cdc/offsets").json()["offsets"]
                slot = db.execute(
                    "SELECT (confirmed_flush_lsn - '0/0')::int8 FROM pg_replication_slots"
                    " WHERE slot_name = %s",
                    (name,),
                ).fetchone()
                lsn = offset["offset"]["lsn"]
                return offset if slot is not None and lsn == slot[0] >= source["lsn"] else None

            offset = eventually(confirmed, "the confirmed LSN as the offset")
            assert offset["partition"] == {"server": name}
        db.execute(f"UPDATE {name} SET amount = 2.25 WHERE id = 1")  # while no worker runs
        again = Connect(broker.bootstrap, spark=lambda: spark, settings=worker.settings)
        with again, httpx.Client(base_url=again.url, timeout=60) as api:
            events = eventually(_events(broker.bootstrap, topic, 6), "the change made meanwhile")
            assert events[5][1]["op"] == "u"
            assert events[5][1]["after"] == {"id": 1, "name": "changed", "amount": "AAAAAAAAAOE="}
            api.delete("/connectors/cdc")
    finally:
        db.execute("SELECT pg_drop_replication_slot(%s)", (name,))


def _snapshot_running(db: psycopg.Connection[Any]) -> bool:
    """Whether the connector's snapshot query is running (its ``SELECT ARRAY[...]``)."""
    found = db.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active'"
        " AND query LIKE 'SELECT ARRAY[%%'"
    ).fetchone()
    return bool(found and found[0])


@pytest.mark.timeout(300)
def test_the_database_restarted_mid_snapshot_fails_the_task_until_restarted(
    spark: SparkSession, broker: StromServer, postgres: Postgres, db: psycopg.Connection[Any]
) -> None:
    name = unique_topic("cdcsnap").replace("-", "_")
    rows = 50_000  # a read long enough (a fraction of a second) to be cut in the middle
    db.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, note text)")
    db.execute(f"INSERT INTO {name} SELECT n, 'row ' || n FROM generate_series(1, {rows}) n")
    topic = _captured_topic(broker, name)
    config = {
        **_capture(postgres, name),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    try:
        with (
            Connect(broker.bootstrap, spark=lambda: spark) as worker,
            httpx.Client(base_url=worker.url, timeout=60) as api,
        ):
            create(api, "snap", config)
            eventually(lambda: _snapshot_running(db), "the snapshot's read", every=0.005)
            postgres.restart()  # cuts the snapshot's connection mid-read
            eventually(failed(api, "snap"), "the task failed")
            trace = api.get("/connectors/snap/status").json()["tasks"][0]["trace"]
            assert "connection" in trace.lower() or "terminat" in trace.lower(), trace
            assert consume_all(broker.bootstrap, topic) == []  # the batch wrote nothing
            restart = api.post("/connectors/snap/restart", params={"includeTasks": "true"})
            assert restart.status_code in (200, 202, 204), restart.text

            ends = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cdc-ends"})
            end = TopicPartition(topic, 0)
            eventually(
                lambda: ends.get_watermark_offsets(end, timeout=5)[1] >= rows, "the snapshot again"
            )
            ends.close()
            ids = {
                json.loads(r.value or b"")["after"]["id"]
                for r in consume_all(broker.bootstrap, topic)
            }
            assert ids == set(range(1, rows + 1))
            api.delete("/connectors/snap")
    finally:
        with psycopg.connect(postgres.conninfo, autocommit=True) as fresh:  # the old one is cut
            fresh.execute("SELECT pg_drop_replication_slot(%s)", (name,))
            fresh.execute(f"DROP TABLE {name}")


def test_bad_settings_and_an_unreachable_database(
    spark: SparkSession, broker: StromServer, postgres: Postgres
) -> None:
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        infos = api.put(
            "/connector-plugins/PostgresConnector/config/validate",
            json={"database.port": "x", "snapshot.mode": "always", "plugin.name": "decoderbufs"},
        ).json()
        errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
        for missing in ("database.hostname", "database.user", "database.dbname", "topic.prefix"):
            assert errors[missing] == [
                f'Missing required configuration "{missing}" which has no default value.'
            ]
        assert errors["database.port"] == [
            "Invalid value x for configuration database.port: Not a number of type INT"
        ]
        assert "String must be one of: initial, never" in errors["snapshot.mode"][0]
        assert "String must be one of: pgoutput" in errors["plugin.name"][0]
        create(
            api,
            "cdc-nowhere",
            {
                "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
                "database.hostname": postgres.host,
                "database.port": "1",
                "database.user": "postgres",
                "database.dbname": "postgres",
                "topic.prefix": "nowhere",
            },
        )
        status = eventually(
            lambda: (
                (s := api.get("/connectors/cdc-nowhere/status").json())["connector"]["state"]
                == "FAILED"
                and s
            ),
            "the connector failing",
        )
        assert "port 1" in status["connector"]["trace"]
