"""Kafka Connect's REST API with raw HTTP (httpx, as any Connect client), against a worker on a
real ``strom server``: paths, bodies, status codes and ``{"error_code", "message"}`` errors,
validation naming every problem, and the worker's state surviving a restart through its config
and status topics. The connectors here are created STOPPED (KIP-980), so no Spark query runs;
tests/e2e/spark/test_connect_files.py runs them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from strom.connect.records import decode
from strom.testing.connect import Connect

SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
JDBC_SINK = "io.confluent.connect.jdbc.JdbcSinkConnector"
JDBC_SOURCE = "io.confluent.connect.jdbc.JdbcSourceConnector"
CDC = "io.debezium.connector.postgresql.PostgresConnector"
STORAGE = "strom.connect.storage.Storage{}Connector"
MIRROR = "org.apache.kafka.connect.mirror.Mirror{}Connector"


def _no_spark() -> Any:
    raise AssertionError("these tests start no connector query")


@pytest.fixture
def worker(bootstrap: str) -> Iterator[Connect]:
    with Connect(bootstrap, spark=_no_spark) as started:
        yield started


@pytest.fixture
def api(worker: Connect) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=worker.url, timeout=30) as client:
        yield client


def _sink(name: str, **more: str) -> dict[str, Any]:
    config = {"connector.class": "FileStreamSink", "topics": "t", "file": "/tmp/none", **more}
    return {"name": name, "config": config, "initial_state": "STOPPED"}


def test_root_and_plugins(api: httpx.Client) -> None:
    root = api.get("/").json()
    assert set(root) == {"version", "commit", "kafka_cluster_id"} and root["kafka_cluster_id"]
    assert api.get("/connector-plugins").json() == [
        {"class": SINK, "type": "sink", "version": root["version"]},
        {"class": SOURCE, "type": "source", "version": root["version"]},
        {"class": JDBC_SINK, "type": "sink", "version": root["version"]},
        {"class": JDBC_SOURCE, "type": "source", "version": root["version"]},
        *(
            {"class": MIRROR.format(kind), "type": "source", "version": root["version"]}
            for kind in ("Checkpoint", "Heartbeat", "Source")
        ),
        {"class": CDC, "type": "source", "version": root["version"]},
        {"class": STORAGE.format("Sink"), "type": "sink", "version": root["version"]},
        {"class": STORAGE.format("Source"), "type": "source", "version": root["version"]},
    ]
    everything = api.get("/connector-plugins", params={"connectorsOnly": "false"}).json()
    assert "org.apache.kafka.connect.json.JsonConverter" in {p["class"] for p in everything}


def test_validate_names_every_problem(api: httpx.Client) -> None:
    answer = api.put(
        "/connector-plugins/FileStreamSource/config/validate",
        json={"tasks.max": "zero", "value.converter": "com.example.Nope", "topic": "a,b"},
    )
    assert answer.status_code == 200
    infos = answer.json()
    assert infos["name"] == SOURCE and infos["groups"][0] == "Common"
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
    assert errors["name"] == ['Missing required configuration "name" which has no default value.']
    assert errors["tasks.max"] == [
        "Invalid value zero for configuration tasks.max: Not a number of type INT"
    ]
    assert errors["value.converter"] == [
        "Invalid value com.example.Nope for configuration value.converter: Class"
        " com.example.Nope could not be found."
    ]
    assert "must be a single topic" in errors["topic"][0]
    assert errors["file"]  # strom reads no standard input
    assert infos["error_count"] == sum(len(e) for e in errors.values()) == 5
    definition = next(
        c["definition"] for c in infos["configs"] if c["definition"]["name"] == "tasks.max"
    )
    assert definition["type"] == "INT" and definition["default_value"] == "1"
    mismatch = api.put(
        "/connector-plugins/FileStreamSource/config/validate", json={"connector.class": SINK}
    )
    assert mismatch.status_code == 400
    assert mismatch.json()["message"] == (
        f"Included connector type {SINK} does not match request type FileStreamSource"
    )
    unknown = api.put("/connector-plugins/NoSuchConnector/config/validate", json={})
    assert unknown.status_code == 400
    assert "which name matches NoSuchConnector" in unknown.json()["message"]


def test_mirror_validate_names_every_problem(api: httpx.Client) -> None:
    infos = api.put(
        "/connector-plugins/MirrorSourceConnector/config/validate",
        json={"name": "m", "topics": "orders, (", "exactly.once.source.support": "maybe"},
    ).json()
    assert infos["name"] == MIRROR.format("Source")
    errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
    missing = 'Missing required configuration "{}" which has no default value.'
    assert errors["source.cluster.alias"] == [missing.format("source.cluster.alias")]
    assert errors["source.cluster.bootstrap.servers"] == [
        missing.format("source.cluster.bootstrap.servers")
    ]
    assert errors["topics"][0].startswith("topics: '(' is not a regular expression")
    assert errors["exactly.once.source.support"] == [
        "Invalid value maybe for configuration exactly.once.source.support:"
        " String must be one of: enabled, preparing, disabled"
    ]
    assert infos["error_count"] == 4


def test_create_refusals_change_nothing(api: httpx.Client) -> None:
    invalid = api.post("/connectors", json={"name": "bad", "config": {"connector.class": SINK}})
    assert invalid.status_code == 400
    message = invalid.json()["message"]
    assert message.startswith("Connector configuration is invalid and contains the following 1")
    assert "Must configure one of topics or topics.regex" in message
    unknown = api.post("/connectors", json={"name": "x", "config": {"connector.class": "Nope"}})
    assert (unknown.status_code, unknown.json()["error_code"]) == (400, 400)
    untyped = api.post("/connectors", json={"name": "x", "config": {"topics": "t"}})
    assert "contains no connector type" in untyped.json()["message"]
    renamed = api.put("/connectors/a/config", json={"name": "b", "connector.class": SINK})
    assert renamed.json() == {
        "error_code": 400,
        "message": "Connector name configuration (b) doesn't match connector name in the URL (a)",
    }
    broken = api.post("/connectors", content=b"{", headers={"content-type": "application/json"})
    assert broken.status_code == 400
    assert api.get("/connectors").json() == []
    for method, path in [
        ("GET", "/connectors/nope"),
        ("GET", "/connectors/nope/status"),
        ("PUT", "/connectors/nope/pause"),
        ("DELETE", "/connectors/nope"),
        ("GET", "/connectors/nope/offsets"),
    ]:
        answer = api.request(method, path)
        assert answer.json() == {"error_code": 404, "message": "Connector nope not found"}
    assert api.get("/nowhere").json() == {"error_code": 404, "message": "HTTP 404 Not Found"}


def test_lifecycle_of_a_connector(api: httpx.Client, worker: Connect, bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient  # noqa: PLC0415
    from confluent_kafka.cimpl import NewTopic  # noqa: PLC0415

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("t", 1, 1)])["t"].result(timeout=30)
    created = api.post("/connectors", json=_sink("files"))
    assert created.status_code == 201
    assert created.json() == {
        "name": "files",
        "config": {**_sink("files")["config"], "name": "files"},
        "tasks": [],
        "type": "sink",
    }
    assert api.post("/connectors", json=_sink("files")).json() == {
        "error_code": 409,
        "message": "Connector files already exists",
    }
    status = api.get("/connectors/files/status").json()
    assert status["connector"]["state"] == "STOPPED" and status["tasks"] == []
    assert status["connector"]["worker_id"] == worker.url.partition("://")[2]
    config = api.get("/connectors/files/config").json()
    updated = api.put("/connectors/files/config", json={**config, "tasks.max": "2"})
    assert updated.status_code == 200 and updated.json()["config"]["tasks.max"] == "2"
    expanded = api.get("/connectors", params=[("expand", "status"), ("expand", "info")]).json()
    assert set(expanded["files"]) == {"status", "info"}
    assert api.get("/connectors/files/tasks").json() == []
    assert api.get("/connectors/files/tasks/0/status").json() == {
        "error_code": 404,
        "message": "Task files-0 not found",
    }
    assert api.get("/connectors/files/topics").json() == {"files": {"topics": []}}
    assert api.put("/connectors/files/topics/reset").status_code == 202
    assert api.get("/connectors/files/offsets").json() == {"offsets": []}
    altered = api.patch(
        "/connectors/files/offsets",
        json={
            "offsets": [
                {
                    "partition": {"kafka_topic": "t", "kafka_partition": 0},
                    "offset": {"kafka_offset": 3},
                }
            ]
        },
    )
    assert altered.json() == {
        "message": "The offsets for this connector have been altered successfully"
    }
    unknown = api.patch(
        "/connectors/files/offsets",
        json={
            "offsets": [
                {
                    "partition": {"kafka_topic": "nope", "kafka_partition": 0},
                    "offset": {"kafka_offset": 1},
                }
            ]
        },
    )
    assert unknown.status_code == 400 and "nope-0" in unknown.json()["message"]
    assert api.get("/connectors/files/offsets").json() == {
        "offsets": [
            {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 3}}
        ]
    }
    assert api.delete("/connectors/files/offsets").json() == {
        "message": "The offsets for this connector have been reset successfully"
    }
    assert api.put("/connectors/files/pause").status_code == 202
    assert api.get("/connectors/files/status").json()["connector"]["state"] == "PAUSED"
    refused = api.delete("/connectors/files/offsets")
    assert (
        refused.status_code == 400 and "must be in the STOPPED state" in refused.json()["message"]
    )
    assert api.put("/connectors/files/stop").status_code == 204
    assert api.delete("/connectors/files").status_code == 204
    assert api.get("/connectors").json() == []


def test_state_is_in_the_topics_in_connects_formats(bootstrap: str) -> None:
    """A second worker of the same settings finds what the first one wrote, and the config
    topic holds Kafka Connect's records."""
    from confluent_kafka import Consumer, TopicPartition  # noqa: PLC0415

    first = Connect(bootstrap, spark=_no_spark)
    with first, httpx.Client(base_url=first.url, timeout=30) as api:
        assert api.post("/connectors", json=_sink("kept")).status_code == 201
        assert api.put("/connectors/kept/stop").status_code == 204  # KIP-875: no tasks
    second = Connect(bootstrap, spark=_no_spark, settings=first.settings)
    with second, httpx.Client(base_url=second.url, timeout=30) as api:
        assert api.get("/connectors").json() == ["kept"]
        assert api.get("/connectors/kept/status").json()["connector"]["state"] == "STOPPED"
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "check", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(first.settings.config_topic, 0, 0)])
    records = []
    while (message := consumer.poll(10)) is not None and not message.error():
        records.append(((message.key() or b"").decode(), decode(message.value())))
    consumer.close()
    assert records[:2] == [
        ("target-state-kept", {"state": "PAUSED", "state.v2": "STOPPED"}),
        ("connector-kept", {"properties": {**_sink("kept")["config"], "name": "kept"}}),
    ]
    assert ("commit-kept", {"tasks": 0}) in records
