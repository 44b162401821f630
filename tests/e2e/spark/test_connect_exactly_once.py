"""KIP-618's exactly-once sources on strom Connect: with the worker's
``exactly.once.source.support=enabled`` the file source (and the JDBC source) write each
micro-batch's records and the source offsets after them in one transaction, validated as
Connect validates ``exactly.once.support`` and ``transaction.boundary``; a worker killed -9
mid-copy and a new one that takes over leave every line in the topic once, in order."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import Record, consume_all, create_topic
from e2e.spark.connect_api import create, eventually
from strom.testing.connect import Connect

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
