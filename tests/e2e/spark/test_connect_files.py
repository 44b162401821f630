"""Kafka's file connectors on a strom Connect worker, driven through the REST API with httpx as
any Connect client: lines appended to a file reach a topic in JsonConverter's envelope and come
out of a FileStreamSink into another file, offsets are in the offsets topic and the sink's
group, a restarted worker continues where the last stopped (nothing twice, nothing lost), and
data a converter cannot take fails the task with Connect's message until the config is fixed.
The worker runs its connectors in the suite's one SparkSession."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import Record, consume_all, create_topic, produce
from e2e.spark.connect_api import create, eventually, failed, states
from strom.testing.connect import Connect

ENVELOPE = '{{"schema":{{"type":"string","optional":false}},"payload":{}}}'
JSON_SCHEMAS = {
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "true",
}


def _lines(path: Path, count: int) -> Callable[[], list[str] | None]:
    def check() -> list[str] | None:
        lines = path.read_text().splitlines() if path.exists() else []
        assert len(lines) <= count, f"more lines than written: {lines}"
        return lines if len(lines) == count else None

    return check


def test_file_to_topic_to_file_and_a_restarted_worker_continues(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap, "connect-lines")
    source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("one\ntwo\n")
    worker = Connect(broker.bootstrap, spark=lambda: spark)
    with worker, httpx.Client(base_url=worker.url, timeout=60) as api:
        create(
            api,
            "lines-in",
            {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                "file": str(source),
                "topic": topic,
                **JSON_SCHEMAS,
            },
        )
        create(
            api,
            "lines-out",
            {
                "connector.class": "FileStreamSink",
                "topics": topic,
                "file": str(sink),
                "tasks.max": "2",
                **JSON_SCHEMAS,
            },
        )
        assert eventually(_lines(sink, 2), "two lines out") == ["one", "two"]
        assert [r.value for r in consume_all(broker.bootstrap, topic)] == [
            ENVELOPE.format(json.dumps(line)).encode() for line in ("one", "two")
        ]
        assert states(api, "lines-in") == ("RUNNING", ["RUNNING"])
        assert states(api, "lines-out") == ("RUNNING", ["RUNNING", "RUNNING"])
        assert api.get("/connectors/lines-out/topics").json() == {"lines-out": {"topics": [topic]}}
        with source.open("a") as out:
            out.write('"quoted" \\ three\nfour, half')  # the half line waits for its newline
        assert eventually(_lines(sink, 3), "three lines out")[2] == '"quoted" \\ three'

        read = len(source.read_bytes()) - len(b"four, half")

        def source_offsets() -> Any:
            answer = api.get("/connectors/lines-in/offsets").json()["offsets"]
            return answer if answer and answer[0]["offset"]["position"] == read else None

        assert eventually(source_offsets, "the source's offset") == [
            {"partition": {"filename": str(source)}, "offset": {"position": read}}
        ]
        sink_offsets = {
            "partition": {"kafka_topic": topic, "kafka_partition": 0},
            "offset": {"kafka_offset": 3},
        }
        eventually(
            lambda: api.get("/connectors/lines-out/offsets").json()["offsets"] == [sink_offsets],
            "the sink's offsets",
        )
    with source.open("a") as out:
        out.write(" done\nfive\n")  # written while no worker runs
    again = Connect(broker.bootstrap, spark=lambda: spark, settings=worker.settings)
    with again, httpx.Client(base_url=again.url, timeout=60) as api:
        assert sorted(api.get("/connectors").json()) == ["lines-in", "lines-out"]
        lines = eventually(_lines(sink, 5), "five lines out")
        assert lines == ["one", "two", '"quoted" \\ three', "four, half done", "five"]
        assert api.put("/connectors/lines-in/pause").status_code == 202
        assert states(api, "lines-in") == ("PAUSED", ["PAUSED"])
        assert api.put("/connectors/lines-in/stop").status_code == 204
        assert api.get("/connectors/lines-in/tasks").json() == []
        reset = {"offsets": [{"partition": {"filename": str(source)}, "offset": {"position": 4}}]}
        assert api.patch("/connectors/lines-in/offsets", json=reset).status_code == 200
        assert api.put("/connectors/lines-in/resume").status_code == 202
        # from byte 4: the lines after "one" again, as the altered offset asks
        assert eventually(_lines(sink, 9), "nine lines out")[5:] == lines[1:]
        assert api.delete("/connectors/lines-in").status_code == 204
        assert api.delete("/connectors/lines-out").status_code == 204


def test_data_a_converter_cannot_take_fails_the_task_until_fixed(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap, "connect-bad")
    produce(broker.bootstrap, topic, [Record(b"not json")])
    sink, source = tmp_path / "out.txt", tmp_path / "in.txt"
    source.write_text("x\n")
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        config = {
            "connector.class": "FileStreamSink",
            "topics": topic,
            "file": str(sink),
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
        }
        create(api, "bad-json", config)
        create(
            api,
            "bytes-of-strings",
            {
                "connector.class": "FileStreamSource",
                "file": str(source),
                "topic": topic,
                "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
            },
        )
        for name, message in [
            ("bad-json", "Converting byte[] to Kafka Connect data failed"),
            ("bytes-of-strings", "Invalid schema type for ByteArrayConverter: STRING"),
        ]:
            eventually(failed(api, name), f"{name} failing")
            task = api.get(f"/connectors/{name}/tasks/0/status").json()
            assert task["state"] == "FAILED" and message in task["trace"]
        restarted = api.post(
            "/connectors/bad-json/restart", params={"includeTasks": "true", "onlyFailed": "true"}
        )
        assert restarted.status_code == 202
        assert restarted.json()["tasks"] == [
            {"id": 0, "state": "RESTARTING", "worker_id": worker.url.partition("://")[2]}
        ]
        fixed = {**config, "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
        assert api.put("/connectors/bad-json/config", json=fixed).status_code == 200
        assert eventually(_lines(sink, 1), "the line out") == ["not json"]
        assert states(api, "bad-json") == ("RUNNING", ["RUNNING"])


def test_tolerated_errors_go_to_the_dead_letter_queue_with_their_context(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap, "connect-mixed")
    dlq = create_topic(broker.bootstrap, "connect-dlq")
    produce(
        broker.bootstrap,
        topic,
        [Record(b'{"n":1}'), Record(b"not json", headers=(("h", b"1"),)), Record(b'{"n":2}')],
    )
    sink = tmp_path / "out.txt"
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        create(
            api,
            "tolerant",
            {
                "connector.class": "FileStreamSink",
                "topics": topic,
                "file": str(sink),
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "false",
                "errors.tolerance": "all",
                "errors.log.enable": "true",
                "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.context.headers.enable": "true",
            },
        )
        assert eventually(_lines(sink, 2), "the good lines") == ['{"n":1}', '{"n":2}']
        letters = eventually(lambda: consume_all(broker.bootstrap, dlq), "a dead letter")
        assert [r.value for r in letters] == [b"not json"]
        headers = dict(letters[0].headers)
        message = b"Converting byte[] to Kafka Connect data failed due to serialization error: "
        assert headers == {
            "h": b"1",
            "__connect.errors.topic": topic.encode(),
            "__connect.errors.partition": b"0",
            "__connect.errors.offset": b"1",
            "__connect.errors.connector.name": b"tolerant",
            "__connect.errors.task.id": b"0",
            "__connect.errors.stage": b"VALUE_CONVERTER",
            "__connect.errors.class.name": b"org.apache.kafka.connect.json.JsonConverter",
            "__connect.errors.exception.class.name": (
                b"org.apache.kafka.connect.errors.DataException"
            ),
            "__connect.errors.exception.message": message + b"not json",
            "__connect.errors.exception.stacktrace": (
                b"org.apache.kafka.connect.errors.DataException: " + message + b"not json"
            ),
        }
        assert states(api, "tolerant") == ("RUNNING", ["RUNNING"])

        # a dead letter queue that refuses the letter (too large for it) fails the task, and
        # the records after the last committed offset wait for the fix: none is lost
        small = create_topic(
            broker.bootstrap, "connect-dlq-small", config={"max.message.bytes": "100"}
        )
        strict = tmp_path / "strict.txt"
        tolerant = api.get("/connectors/tolerant/config").json()
        config = {k: v for k, v in tolerant.items() if k != "name"} | {"file": str(strict)}
        create(api, "small-dlq", config | {"errors.deadletterqueue.topic.name": small})
        eventually(failed(api, "small-dlq"), "the task failed")
        trace = api.get("/connectors/small-dlq/status").json()["tasks"][0]["trace"]
        assert "MSG_SIZE_TOO_LARGE" in trace or "too large" in trace.lower(), trace
        assert not strict.exists()
        assert api.put("/connectors/small-dlq/config", json=config).status_code == 200
        assert eventually(_lines(strict, 2), "the lines after the fix") == ['{"n":1}', '{"n":2}']


def test_converters_write_and_read_connects_bytes(spark: SparkSession) -> None:
    """The converters' column expressions on a batch: JsonConverter's envelope and bare JSON
    (quotes, backslashes, newlines and non-ASCII escaped as JSON), StringConverter's UTF-8, and
    the text a sink writes of each."""
    from pyspark.sql import functions as F  # noqa: PLC0415
    from pyspark.sql.types import StringType  # noqa: PLC0415

    from strom.connect.converters import converter  # noqa: PLC0415

    lines = ['say "hi"\\', "tab\there\nnewline", "grüße", None]
    df = spark.createDataFrame([(line,) for line in lines], "line string").coalesce(1)
    wrapped = converter("org.apache.kafka.connect.json.JsonConverter", {})
    bare = converter("org.apache.kafka.connect.json.JsonConverter", {"schemas.enable": "false"})
    text = converter("org.apache.kafka.connect.storage.StringConverter", {})
    rows = df.select(
        *(
            c.serialize(F.col("line"), StringType()).alias(name)
            for name, c in (("wrapped", wrapped), ("bare", bare), ("text", text))
        )
    ).collect()
    for line, row in zip(lines, rows, strict=True):
        if line is None:
            assert (row.wrapped, row.bare, row.text) == (None, None, None)
            continue
        assert json.loads(row.wrapped) == {
            "schema": {"type": "string", "optional": False},
            "payload": line,
        }
        assert json.loads(row.bare) == line
        assert bytes(row.text) == line.encode()
    read = spark.createDataFrame(
        [(r.wrapped, r.bare) for r in rows], "wrapped binary, bare binary"
    ).select(
        wrapped.to_text(F.col("wrapped")).alias("wrapped"),
        bare.to_text(F.col("bare")).alias("bare"),
    )
    assert [(r.wrapped, r.bare) for r in read.collect()] == [
        (line or "null", line or "null") for line in lines
    ]
