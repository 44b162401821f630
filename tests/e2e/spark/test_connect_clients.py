"""The connectors' Kafka clients under Kafka Connect's settings: the worker's ``producer.*``
reach a source's writes, a connector's ``producer.override.*`` beat them, and a worker's
``connector.client.config.override.policy`` refuses the overrides it forbids with Connect's 400
and its validate errors. A producer whose ``max.request.size`` is below a line's size fails the
task with the client's own error, which makes the setting visible from outside; an admin
client that reaches no broker does the same for the ``admin.*`` settings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import Record, consume_all, create_topic, produce
from e2e.spark.connect_api import create, eventually, failed, states
from strom.testing.connect import Connect

LONG_LINE = "x" * 3000
STRING = {"value.converter": "org.apache.kafka.connect.storage.StringConverter"}


def test_worker_client_settings_and_connector_overrides_reach_the_queries(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    source = tmp_path / "long.txt"
    source.write_text(LONG_LINE + "\n")
    small, large = (create_topic(broker.bootstrap, f"connect-{s}") for s in ("small", "large"))
    worker = Connect(
        broker.bootstrap,
        spark=lambda: spark,
        client_overrides={"producer.max.request.size": "1000"},
    )
    with worker, httpx.Client(base_url=worker.url, timeout=60) as api:
        file_source = {"connector.class": "FileStreamSource", "file": str(source), **STRING}
        create(api, "small", {**file_source, "topic": small})
        eventually(failed(api, "small"), "the task failed")
        trace = api.get("/connectors/small/status").json()["tasks"][0]["trace"]
        assert "MSG_SIZE_TOO_LARGE" in trace or "too large" in trace.lower(), trace

        create(
            api,
            "large",
            {**file_source, "topic": large, "producer.override.max.request.size": "10000"},
        )
        records = eventually(lambda: consume_all(broker.bootstrap, large), "the long line")
        assert [r.value for r in records] == [LONG_LINE.encode()]
        assert states(api, "large") == ("RUNNING", ["RUNNING"])


def test_an_override_the_policy_forbids_is_refused(broker: StromServer, tmp_path: Path) -> None:
    config = {
        "connector.class": "FileStreamSource",
        "file": str(tmp_path / "in.txt"),
        "topic": "anything",
        "producer.override.acks": "1",
        "producer.override.security.protocol": "PLAINTEXT",
    }
    with (
        Connect(broker.bootstrap, override_policy="Principal") as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        answer = api.post("/connectors", json={"name": "forbidden", "config": config})
        assert answer.status_code == 400
        assert answer.json() == {
            "error_code": 400,
            "message": "Connector configuration is invalid and contains the following 1"
            " error(s):\nThe 'Principal' policy does not allow 'acks' to be overridden in the"
            " connector configuration.\nYou can also find the above list of errors at the"
            " endpoint `/connector-plugins/{connectorType}/config/validate`",
        }
        infos = api.put(
            "/connector-plugins/FileStreamSource/config/validate",
            json={**config, "name": "forbidden"},
        ).json()
        assert infos["error_count"] == 1
        errors = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
        assert errors["producer.override.security.protocol"] == []
        assert errors["producer.override.acks"] == [
            "The 'Principal' policy does not allow 'acks' to be overridden in the connector"
            " configuration."
        ]
        assert api.get("/connectors").json() == []


def test_worker_admin_settings_and_connector_overrides_reach_the_admin_client(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    """A sink's offsets are read, altered and reset through its admin client (KIP-875), made
    with the worker's ``admin.*`` settings and the connector's ``admin.override.*``: a worker
    whose admin clients reach no broker cannot answer, a connector that overrides it can."""
    topic = create_topic(broker.bootstrap, "connect-admin")
    produce(broker.bootstrap, topic, [Record(b"line")])
    nowhere = "127.0.0.1:9"  # the discard port: nothing listens there
    worker = Connect(
        broker.bootstrap,
        spark=lambda: spark,
        client_overrides={"admin.bootstrap.servers": nowhere},
        timeout=3.0,
    )
    sink = {"connector.class": "FileStreamSink", "topics": topic, **STRING}
    expected = {
        "partition": {"kafka_topic": topic, "kafka_partition": 0},
        "offset": {"kafka_offset": 1},
    }
    with worker, httpx.Client(base_url=worker.url, timeout=60) as api:
        create(api, "lost", {**sink, "file": str(tmp_path / "lost.txt")})
        create(
            api,
            "found",
            {
                **sink,
                "file": str(tmp_path / "found.txt"),
                "admin.override.bootstrap.servers": broker.bootstrap,
            },
        )

        def written(out: Path) -> Callable[[], bool]:
            return lambda: out.exists() and out.read_text() == "line\n"

        for name in ("lost", "found"):  # the sinks' consumers are not the admin's
            eventually(written(tmp_path / f"{name}.txt"), f"{name}'s line")
        eventually(
            lambda: api.get("/connectors/found/offsets").json() == {"offsets": [expected]},
            "the committed offset, through the override",
        )
        answer = api.get("/connectors/lost/offsets")
        assert answer.status_code == 500, answer.text
        assert answer.json()["message"].startswith("Cannot read the offsets of group connect-lost")
        for name in ("lost", "found"):
            assert api.put(f"/connectors/{name}/stop").status_code == 204
        eventually(lambda: states(api, "found")[0] == "STOPPED", "the sink stopped")
        assert api.delete("/connectors/lost/offsets").status_code == 500
        assert api.delete("/connectors/found/offsets").status_code == 200
        assert api.get("/connectors/found/offsets").json() == {"offsets": []}
