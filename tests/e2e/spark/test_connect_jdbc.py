"""Confluent's JDBC source on a strom Connect worker against a real PostgreSQL (the suite's
``postgres``), created over the REST API with the JSON a Confluent user sends: rows reach the
topic in JsonConverter's struct envelope, the offsets are Confluent's in the offsets topic, a
restarted worker continues where the last stopped (nothing twice, nothing lost), and an
unreachable database or a dropped table ends FAILED with the reason in ``/status``, unless
``errors.retry.timeout`` lets the sink wait for it (a database that hangs up, then answers);
``errors.tolerance=all`` sends the records the sink's converter cannot take to its dead letter
queue, and makes the source skip (and log) the rows a transform fails on."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

import httpx
import psycopg
import pytest
from confluent_kafka.cimpl import NewTopic
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import Record, admin, consume_all, create_topic, produce, unique_topic
from e2e.spark.connect_api import WAIT_S, create, eventually, failed, states
from strom.testing.connect import Connect
from strom.testing.postgres import Postgres

SOURCE = "io.confluent.connect.jdbc.JdbcSourceConnector"
JSON_SCHEMAS = {
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "true",
}


@pytest.fixture
def db(postgres: Postgres) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(postgres.conninfo, autocommit=True) as connection:
        yield connection


def _new_topic(bootstrap: str, name: str) -> str:
    """The topic a source writes, made first so that reading it before it has records works."""
    client = admin(bootstrap)  # kept until the result is in: a dropped client cancels it
    client.create_topics([NewTopic(name, 1, 1)])[name].result(15)
    return name


def _payloads(bootstrap: str, topic: str, count: int) -> Callable[[], list[Any] | None]:
    def check() -> list[Any] | None:
        values = [json.loads(r.value or b"null") for r in consume_all(bootstrap, topic)]
        assert len(values) <= count, f"more records than rows: {values}"
        return values if len(values) == count else None

    return check


def test_postgres_is_ready_for_change_data_capture(db: psycopg.Connection[Any]) -> None:
    assert db.execute("SHOW wal_level").fetchone() == ("logical",)


def test_incrementing_table_to_topic_resumes_after_a_restart_and_fails_when_dropped(
    spark: SparkSession, broker: StromServer, postgres: Postgres, db: psycopg.Connection[Any]
) -> None:
    table = unique_topic("orders").replace("-", "_")
    db.execute(
        f"CREATE TABLE {table} (id serial PRIMARY KEY, name text NOT NULL, amount numeric(10,2),"
        " placed timestamp, day date, raw bytea, ok boolean, score double precision)"
    )
    db.execute(
        f"INSERT INTO {table} (name, amount, placed, day, raw, ok, score) VALUES"
        " ('a, \"b\"', -12.5, '2024-01-02 03:04:05.123456', '2024-01-02', '\\x00ff', true, 0.5),"
        " ('', NULL, NULL, NULL, NULL, NULL, NULL)"
    )
    config = {
        "connector.class": SOURCE,
        "connection.url": postgres.url,
        "connection.user": "postgres",
        "table.whitelist": table,
        "mode": "incrementing",
        "incrementing.column.name": "id",
        "topic.prefix": "pg-",
        "poll.interval.ms": "300",
        "tasks.max": "2",  # a batch's ids read in two ranges at once
        **JSON_SCHEMAS,
    }
    topic = _new_topic(broker.bootstrap, f"pg-{table}")
    worker = Connect(broker.bootstrap, spark=lambda: spark)
    with worker, httpx.Client(base_url=worker.url, timeout=60) as api:
        create(api, "orders-in", config)
        records = eventually(_payloads(broker.bootstrap, topic, 2), "two records")
        first, second = sorted(records, key=lambda r: r["payload"]["id"])
        schema = first["schema"]
        assert schema["type"] == "struct" and schema["name"] == table
        fields = {f["field"]: f for f in schema["fields"]}
        assert fields["id"] == {"type": "int32", "optional": False, "field": "id"}
        assert fields["name"]["optional"] is False and fields["amount"]["optional"] is True
        assert fields["amount"]["name"] == "org.apache.kafka.connect.data.Decimal"
        assert fields["amount"]["parameters"]["scale"] == "2"
        assert fields["placed"]["name"] == "org.apache.kafka.connect.data.Timestamp"
        assert fields["day"]["name"] == "org.apache.kafka.connect.data.Date"
        row = first["payload"]
        unscaled = int.from_bytes(base64.b64decode(row["amount"]), "big", signed=True)
        assert unscaled == -1250
        assert row["placed"] == 1704164645123  # 2024-01-02T03:04:05.123Z
        assert row["day"] == 19724
        assert base64.b64decode(row["raw"]) == b"\x00\xff"
        assert (row["id"], row["name"], row["ok"], row["score"]) == (1, 'a, "b"', True, 0.5)
        assert second["payload"] == {
            "id": 2,
            "name": "",
            "amount": None,
            "placed": None,
            "day": None,
            "raw": None,
            "ok": None,
            "score": None,
        }
        db.execute(f"INSERT INTO {table} (name) VALUES ('c'), ('d')")
        eventually(_payloads(broker.bootstrap, topic, 4), "four records")
        expected = [{"partition": {"table": table}, "offset": {"incrementing": 4}}]
        eventually(
            lambda: api.get("/connectors/orders-in/offsets").json()["offsets"] == expected,
            "the offset of row 4",
        )
    db.execute(f"INSERT INTO {table} (name) VALUES ('e')")  # while no worker runs
    again = Connect(broker.bootstrap, spark=lambda: spark, settings=worker.settings)
    with again, httpx.Client(base_url=again.url, timeout=60) as api:
        values = eventually(_payloads(broker.bootstrap, topic, 5), "five records")
        names = {v["payload"]["id"]: v["payload"]["name"] for v in values}
        assert names == {1: 'a, "b"', 2: "", 3: "c", 4: "d", 5: "e"}
        db.execute(f"DROP TABLE {table}")
        eventually(failed(api, "orders-in"), "the task failing")
        trace = api.get("/connectors/orders-in/tasks/0/status").json()["trace"]
        assert f'relation "{table}" does not exist' in trace
        api.delete("/connectors/orders-in")


def test_query_in_timestamp_incrementing_mode_and_an_unreachable_database(
    spark: SparkSession, broker: StromServer, postgres: Postgres, db: psycopg.Connection[Any]
) -> None:
    table = unique_topic("events").replace("-", "_")
    db.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, kind text, at timestamptz NOT NULL)")
    same = "2024-05-01 00:00:00.000001+00"
    db.execute(
        f"INSERT INTO {table} VALUES (2, 'x', '{same}'), (1, 'y', '{same}'),"
        " (3, 'skip', '2024-04-01+00')"
    )
    topic = _new_topic(broker.bootstrap, unique_topic("events"))
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        create(
            api,
            "events-in",
            {
                "connector.class": "JdbcSourceConnector",
                "connection.url": postgres.url,
                "connection.user": "postgres",
                "query": f"SELECT id, kind, at FROM {table} WHERE kind <> 'skip'",
                "mode": "timestamp+incrementing",
                "incrementing.column.name": "id",
                "timestamp.column.name": "at",
                "topic.prefix": topic,
                "poll.interval.ms": "300",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "false",
            },
        )
        values = eventually(_payloads(broker.bootstrap, topic, 2), "two records")
        assert [v["id"] for v in values] == [1, 2]  # in (timestamp, id) order
        db.execute(f"INSERT INTO {table} VALUES (0, 'later', '{same}'::timestamptz + '1s')")
        assert eventually(_payloads(broker.bootstrap, topic, 3), "three")[2]["kind"] == "later"
        expected = {"incrementing": 0, "timestamp": 1714521601000, "timestamp_nanos": 1000}
        eventually(
            lambda: (
                api.get("/connectors/events-in/offsets").json()["offsets"]
                == [{"partition": {"query": "query"}, "offset": expected}]
            ),
            "the query's offset",
        )
        api.delete("/connectors/events-in")
        with_port = postgres.url.replace(f":{postgres.port}/", ":1/")
        create(
            api,
            "nowhere",
            {
                "connector.class": SOURCE,
                "connection.url": with_port,
                "mode": "bulk",
                "topic.prefix": "x-",
            },
        )
        eventually(lambda: states(api, "nowhere")[0] == "FAILED", "the connector failing")
        trace = api.get("/connectors/nowhere/status").json()["connector"]["trace"]
        assert "127.0.0.1" in trace and "port 1" in trace


def _validate(
    broker: StromServer, spark: SparkSession, plugin: str, config: dict[str, str]
) -> dict[str, list[str]]:
    """The errors of each setting in a validate answer."""
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        infos = api.put(f"/connector-plugins/{plugin}/config/validate", json=config).json()
    return {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}


def test_validate_names_the_jdbc_connectors_problems(
    spark: SparkSession, broker: StromServer
) -> None:
    errors = _validate(
        broker,
        spark,
        "JdbcSourceConnector",
        {
            "connector.class": SOURCE,
            "connection.url": "jdbc:mysql://h/db",
            "mode": "incrementing",
            "table.whitelist": "a",
            "table.blacklist": "b",
            "poll.interval.ms": "0",
        },
    )
    assert "is not a jdbc:postgresql://host:port/database URL" in errors["connection.url"][0]
    assert errors["incrementing.column.name"] == [
        "incrementing.column.name must be set in mode incrementing"
    ]
    assert errors["table.whitelist"] == ["table.whitelist and table.blacklist cannot both be set"]
    assert errors["topic.prefix"] == [
        'Missing required configuration "topic.prefix" which has no default value.'
    ]
    assert errors["poll.interval.ms"] == [
        "Invalid value 0 for configuration poll.interval.ms: Value must be at least 1"
    ]
    sink = _validate(
        broker,
        spark,
        "JdbcSinkConnector",
        {
            "connection.url": "jdbc:postgresql://h/db",
            "insert.mode": "upsert",
            "topics": "t",
            "delete.enabled": "true",
            "pk.mode": "record_value",
        },
    )
    assert sink["delete.enabled"] == ["Deletes are only supported for pk.mode record_key"]
    assert sink["connection.url"] == []
    upsert = _validate(broker, spark, "JdbcSinkConnector", {"insert.mode": "upsert"})
    assert upsert["pk.mode"] == ["insert.mode upsert needs a primary key: pk.mode is none"]
    assert upsert["connection.url"] == [
        'Missing required configuration "connection.url" which has no default value.'
    ]


def _envelope(schema: dict[str, Any], payload: Any) -> bytes:
    return json.dumps({"schema": schema, "payload": payload}).encode()


KEY = {"type": "struct", "optional": False, "fields": [{"field": "id", "type": "int32"}]}
VALUE: dict[str, Any] = {
    "type": "struct",
    "optional": False,
    "name": "order",
    "fields": [
        {"field": "id", "type": "int32"},
        {"field": "name", "type": "string", "optional": True},
        {
            "field": "amount",
            "type": "bytes",
            "optional": True,
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "2"},
        },
        {
            "field": "at",
            "type": "int64",
            "optional": True,
            "name": "org.apache.kafka.connect.data.Timestamp",
        },
        {"field": "raw", "type": "bytes", "optional": True},
    ],
}


def _order(id_: int, name: str, cents: int | None = None) -> Record:
    amount = None if cents is None else base64.b64encode(cents.to_bytes(2, "big", signed=True))
    payload = {
        "id": id_,
        "name": name,
        "amount": amount and amount.decode(),
        "at": 1704164645123,
        "raw": base64.b64encode(b"\x01\x02").decode(),
    }
    return Record(_envelope(VALUE, payload), key=_envelope(KEY, {"id": id_}))


def _rows(db: psycopg.Connection[Any], query: str, count: int) -> Callable[[], list[Any] | None]:
    def check() -> list[Any] | None:
        try:
            rows = db.execute(query).fetchall()
        except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn):  # not yet made
            return None
        return rows if len(rows) == count else None

    return check


def test_sink_upserts_by_key_deletes_on_tombstones_and_evolves_the_table(
    spark: SparkSession, broker: StromServer, postgres: Postgres, db: psycopg.Connection[Any]
) -> None:
    topic = create_topic(broker.bootstrap, "orders-out")
    table = f"sink_{topic}"
    produce(broker.bootstrap, topic, [_order(1, "a", -1250), _order(2, "b"), _order(1, "a2", 5)])
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        create(
            api,
            "orders-out",
            {
                "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
                "connection.url": postgres.url,
                "connection.user": "postgres",
                "topics": topic,
                "table.name.format": "sink_${topic}",
                "insert.mode": "upsert",
                "pk.mode": "record_key",
                "pk.fields": "id",
                "delete.enabled": "true",
                "auto.create": "true",
                "auto.evolve": "true",
                "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                **JSON_SCHEMAS,
            },
        )
        by_value = {  # the key in the value: id 1 twice in one micro-batch, the last wins
            "connector.class": "JdbcSinkConnector",
            "connection.url": postgres.url,
            "connection.user": "postgres",
            "topics": topic,
            "table.name.format": "by_value_${topic}",
            "insert.mode": "upsert",
            "pk.mode": "record_value",
            "pk.fields": "id",
            "auto.create": "true",
            **JSON_SCHEMAS,
        }
        create(api, "orders-by-value", by_value)
        query = f'SELECT id, name, amount, at, raw FROM "{table}" ORDER BY id'
        rows = eventually(_rows(db, query, 2), "two rows")
        assert rows == [
            (1, "a2", Decimal("0.05"), datetime(2024, 1, 2, 3, 4, 5, 123000), b"\x01\x02"),
            (2, "b", None, datetime(2024, 1, 2, 3, 4, 5, 123000), b"\x01\x02"),
        ]
        query = f'SELECT id, name FROM "by_value_{topic}" ORDER BY id'
        assert eventually(_rows(db, query, 2), "two rows by value") == [(1, "a2"), (2, "b")]
        assert api.delete("/connectors/orders-by-value").status_code == 204
        keys = db.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
            " AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary",
            (f'"{table}"',),
        ).fetchall()
        assert keys == [("id",)]
        evolved = {
            **VALUE,
            "fields": [*VALUE["fields"], {"field": "note", "type": "string", "optional": True}],
        }
        produce(
            broker.bootstrap,
            topic,
            [
                Record(None, key=_envelope(KEY, {"id": 2})),
                Record(_envelope(evolved, {"id": 3, "note": "new"}), key=_envelope(KEY, {"id": 3})),
            ],
        )
        rows = eventually(_rows(db, f'SELECT id, note FROM "{table}" ORDER BY id', 2), "evolved")
        assert rows == [(1, None), (3, "new")]


def test_sink_without_its_table_fails_until_the_table_exists_and_without_its_database(
    spark: SparkSession, broker: StromServer, postgres: Postgres, db: psycopg.Connection[Any]
) -> None:
    topic = create_topic(broker.bootstrap, "plain")
    table = topic.replace("-", "_")
    produce(broker.bootstrap, topic, [_order(7, "x"), _order(7, "y")])
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        create(
            api,
            "plain-out",
            {
                "connector.class": "JdbcSinkConnector",
                "connection.url": postgres.url,
                "connection.user": "postgres",
                "topics": topic,
                "table.name.format": table,
                "pk.mode": "kafka",
                **JSON_SCHEMAS,
            },
        )
        eventually(failed(api, "plain-out"), "the task failing")
        trace = api.get("/connectors/plain-out/tasks/0/status").json()["trace"]
        assert f"Table {table} is missing and auto-creation is disabled" in trace
        db.execute(
            f"CREATE TABLE {table} (__connect_topic text, __connect_partition int,"
            " __connect_offset bigint, id int, name text, amount numeric, at timestamp, raw bytea,"
            " PRIMARY KEY (__connect_topic, __connect_partition, __connect_offset))"
        )
        assert api.post("/connectors/plain-out/tasks/0/restart").status_code == 204
        query = f"SELECT __connect_offset, id, name FROM {table} ORDER BY __connect_offset"
        assert eventually(_rows(db, query, 2), "both records") == [(0, 7, "x"), (1, 7, "y")]
        assert states(api, "plain-out") == ("RUNNING", ["RUNNING"])
        api.delete("/connectors/plain-out")
        create(
            api,
            "plain-nowhere",
            {
                "connector.class": "JdbcSinkConnector",
                "connection.url": postgres.url.replace(f":{postgres.port}/", ":1/"),
                "topics": topic,
                **JSON_SCHEMAS,
            },
        )
        eventually(failed(api, "plain-nowhere"), "the task failing")
        trace = api.get("/connectors/plain-nowhere/tasks/0/status").json()["trace"]
        assert "127.0.0.1" in trace and "port 1" in trace


def test_converters_write_structs_as_connect_does(spark: SparkSession) -> None:
    """JsonConverter's struct envelope (a null nested struct stays null) and StringConverter's
    ``Struct{...}`` (null fields left out)."""
    from pyspark.sql import functions as F  # noqa: PLC0415
    from pyspark.sql.types import (  # noqa: PLC0415
        IntegerType,
        StringType,
        StructField,
        StructType,
    )

    from strom.connect.converters import converter  # noqa: PLC0415

    inner = StructType([StructField("id", IntegerType(), False), StructField("s", StringType())])
    outer = StructType([StructField("row", inner, True)])
    df = spark.createDataFrame([((1, None),), (None,)], outer).coalesce(1)
    wrapped = converter("org.apache.kafka.connect.json.JsonConverter", {})
    text = converter("org.apache.kafka.connect.storage.StringConverter", {})
    rows = df.select(
        wrapped.serialize(F.struct("row"), outer, "outer").alias("json"),
        text.serialize(F.col("row"), inner).alias("text"),
    ).collect()
    first, second = (json.loads(r.json) for r in rows)
    assert first["schema"] == {
        "type": "struct",
        "fields": [
            {
                "type": "struct",
                "fields": [
                    {"type": "int32", "optional": False, "field": "id"},
                    {"type": "string", "optional": True, "field": "s"},
                ],
                "optional": True,
                "field": "row",
            }
        ],
        "optional": False,
        "name": "outer",
    }
    assert (first["payload"], second["payload"]) == ({"row": {"id": 1, "s": None}}, {"row": None})
    assert [r.text and bytes(r.text) for r in rows] == [b"Struct{id=1}", None]


class _Gate:
    """A TCP forwarder to the database that first hangs up on every connection (counting
    them: a database that is restarting), then, once ``open``, forwards them."""

    def __init__(self, port: int) -> None:
        self.target = ("127.0.0.1", port)
        self.refused = 0
        self.opened = threading.Event()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:  # closed
                return
            if not self.opened.is_set():
                self.refused += 1
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._server.close()


@pytest.mark.timeout(float(os.environ.get("CONNECT_RETRY_TEST_TIMEOUT_S", "300")))
def test_sink_retries_a_database_it_cannot_reach_and_sends_bad_records_to_its_dlq(
    spark: SparkSession, broker: StromServer, postgres: Postgres, db: psycopg.Connection[Any]
) -> None:
    topic = create_topic(broker.bootstrap, "retried")
    dlq = create_topic(broker.bootstrap, "retried-dlq")
    table = topic.replace("-", "_")
    produce(broker.bootstrap, topic, [_order(8, "p"), Record(b"not json"), _order(9, "q")])
    gate = _Gate(postgres.port)
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        create(
            api,
            "retried-out",
            {
                "connector.class": "JdbcSinkConnector",
                "connection.url": postgres.url.replace(f":{postgres.port}/", f":{gate.port}/"),
                "connection.user": "postgres",
                "topics": topic,
                "table.name.format": table,
                "auto.create": "true",
                "errors.retry.timeout": "-1",
                "errors.retry.delay.max.ms": "1000",
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dlq,
                **JSON_SCHEMAS,
            },
        )
        slow = 3 * WAIT_S  # each attempt starts a query again: seconds on a loaded machine
        eventually(lambda: gate.refused >= 2, "the sink trying again", within=slow)
        assert states(api, "retried-out") == ("RUNNING", ["RUNNING"])
        gate.opened.set()
        query = f"SELECT id, name FROM {table} ORDER BY id"
        rows = eventually(_rows(db, query, 2), "the good records", within=slow)
        assert rows == [(8, "p"), (9, "q")]
        # each failed attempt of the micro-batch wrote its dead letter: at least once
        letters = consume_all(broker.bootstrap, dlq)
        assert {r.value for r in letters} == {b"not json"}
        assert states(api, "retried-out") == ("RUNNING", ["RUNNING"])
    gate.close()


def test_source_skips_and_logs_rows_a_transform_fails_on_with_errors_tolerance_all(
    spark: SparkSession,
    broker: StromServer,
    postgres: Postgres,
    db: psycopg.Connection[Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    table = unique_topic("codes").replace("-", "_")
    db.execute(f"CREATE TABLE {table} (id serial PRIMARY KEY, code text)")
    db.execute(f"INSERT INTO {table} (code) VALUES ('1'), ('x7'), (NULL), ('3')")
    tolerant = _new_topic(broker.bootstrap, f"all-{table}")
    strict = _new_topic(broker.bootstrap, f"none-{table}")
    config = {
        "connector.class": SOURCE,
        "connection.url": postgres.url,
        "connection.user": "postgres",
        "table.whitelist": table,
        "mode": "incrementing",
        "incrementing.column.name": "id",
        "poll.interval.ms": "300",
        "transforms": "code",
        "transforms.code.type": "org.apache.kafka.connect.transforms.Cast$Value",
        "transforms.code.spec": "code:int32",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    caplog.set_level("ERROR", logger="strom.connect.dead_letters")
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        create(
            api,
            "codes-all",
            {
                **config,
                "topic.prefix": "all-",
                "errors.tolerance": "all",
                "errors.log.enable": "true",
                "errors.log.include.messages": "true",
            },
        )
        create(api, "codes-none", {**config, "topic.prefix": "none-"})
        values = eventually(_payloads(broker.bootstrap, tolerant, 3), "the three good rows")
        assert values == [{"id": 1, "code": 1}, {"id": 3, "code": None}, {"id": 4, "code": 3}]
        db.execute(f"INSERT INTO {table} (code) VALUES ('5')")  # the task goes on
        assert eventually(_payloads(broker.bootstrap, tolerant, 4), "a later row")[3]["code"] == 5
        eventually(failed(api, "codes-none"), "the strict connector failing")
        trace = api.get("/connectors/codes-none/status").json()["tasks"][0]["trace"]
        assert "Tolerance exceeded in error handler: Cast: unable to convert x7 to int32" in trace
        assert consume_all(broker.bootstrap, strict) == []  # its micro-batch failed whole
    logged = [r.getMessage() for r in caplog.records if "codes-all" in r.getMessage()]
    assert len(logged) == 1, logged
    assert "Executing stage 'TRANSFORMATION' with class" in logged[0]
    assert "org.apache.kafka.connect.transforms.Cast$Value" in logged[0]
    assert '"code":"x7"' in logged[0] and logged[0].endswith("unable to convert x7 to int32")
