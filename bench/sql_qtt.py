"""Run ksqlDB's query-validation tests (QTT) against strom's SQL engine.

Run: ``.venv/bin/python -m bench.sql_qtt DIR [--files GLOB ...] [--limit N]``, where DIR holds
the JSON files of ksqlDB's ``ksqldb-functional-tests/src/test/resources/query-validation-tests``
(a copy kept outside this repository). Prints passed / failed / refused / skipped per file, the
reason of each skip and refusal, and each failure.

Each case runs unmodified, as QTT does, against a real ``strom server`` (a child process) and a
SQL server of its own service id (this process, the bench's SparkSession):

- the input topics are created (one partition, as QTT's), the statements sent to ``POST /ksql``
  with ``auto.offset.reset=earliest`` and the case's ``properties``;
- the input records are produced with their key, value and timestamp, serialized as the source
  declared on their topic says (its key and value formats and column types);
- each expected output topic is read (``read_committed``) until it matches or ``--wait`` runs
  out. A stream's records are compared in order by key, value and timestamp; a table's (the sink
  of a CREATE TABLE AS SELECT) by its latest record per key: Spark's update mode emits a key's
  changes within one micro-batch as one record, where ksqlDB (with caching off, as in QTT) emits
  every change, so only the table each describes can be compared.

A case is skipped, for a named reason, when strom's language does not cover it (a format it does
not have, lambdas, a statement its grammar does not read) or QTT expects an error (not
compared); a statement the server refuses counts as "refused" with ksqlDB's error message.
Topics and queries are removed between cases.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import re
import struct
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from kafka import KafkaProducer

from bench.spark_run import spark_and_scratch
from strom.sql.errors import SqlSyntaxError
from strom.sql.parser import parse
from strom.sql.retries import Backoff
from strom.sql.server import SqlServer
from strom.sql.settings import SqlSettings
from strom.testing import Broker
from strom.web.server import Listener

UNSUPPORTED_FORMATS = ("AVRO", "PROTOBUF", "PROTOBUF_NOSR")


@dataclass
class Case:
    file: str
    name: str
    body: Mapping[str, Any]
    statements: list[str]


@dataclass
class Tally:
    passed: int = 0
    failed: list[str] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)


def load(path: Path) -> Mapping[str, Any]:
    """A QTT file: JSON with ``//`` and ``/* */`` comments (read as Jackson's ALLOW_COMMENTS)."""
    text = re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.MULTILINE)
    return json.loads(re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL))  # type: ignore[no-any-return]


def cases(path: Path) -> Iterator[Case]:
    """The file's cases, one per ``format`` of those that name several (``{FORMAT}`` replaced)."""
    for test in load(path)["tests"]:
        formats = test.get("format") or [None]
        for fmt in formats:
            statements = [
                s if fmt is None else s.replace("{FORMAT}", fmt) for s in test["statements"]
            ]
            name = test["name"] if fmt is None else f"{test['name']} - {fmt}"
            yield Case(path.stem, name, test, statements)


def skip_reason(case: Case) -> str | None:
    """Why strom cannot run this case, or None."""
    body = case.body
    if body.get("enabled") is False:
        return "disabled in QTT"
    if "expectedException" in body:
        return "expects an error (not compared)"
    text = " ".join(case.statements).upper()
    for fmt in UNSUPPORTED_FORMATS:
        if re.search(rf"FORMAT\s*=\s*'{fmt}'", text):
            return f"{fmt} format"
    if "=>" in text:
        return "lambda"
    if any("window" in record for record in body.get("inputs", [])):
        return "windowed input records"
    if not body.get("outputs"):
        return "no expected records (checks sources only)"
    try:
        for statement in case.statements:
            parse(statement)
    except SqlSyntaxError as error:
        return f"syntax: {str(error).splitlines()[0][:70]}"
    return None


# -- serialization by the declared source --------------------------------------------------------

_KAFKA = {"INTEGER": ">i", "BIGINT": ">q", "DOUBLE": ">d"}


@dataclass(frozen=True)
class Shape:
    key_format: str
    value_format: str
    keys: tuple[tuple[str, str], ...]
    values: tuple[tuple[str, str], ...]
    table: bool


def encode(data: Any, fmt: str, columns: Sequence[tuple[str, str]]) -> bytes | None:
    if data is None:
        return None
    if fmt in ("JSON", "JSON_SR") or (fmt == "KAFKA" and not columns):
        raw = data if isinstance(data, str) and fmt == "KAFKA" else json.dumps(data)
        return (b"\0\0\0\0\0" if fmt == "JSON_SR" else b"") + raw.encode()
    if fmt == "KAFKA":
        kind = columns[0][1]
        if kind in _KAFKA:
            return struct.pack(_KAFKA[kind], data)
        return str(data).encode()
    return str(data).encode()  # DELIMITED, NONE


def decode(data: bytes | None, fmt: str, columns: Sequence[tuple[str, str]]) -> Any:
    if data is None:
        return None
    if fmt == "JSON_SR":
        data = data[5:]
    if fmt == "JSON":
        return json.loads(data)
    if fmt == "KAFKA" and columns and columns[0][1] in _KAFKA:
        return struct.unpack(_KAFKA[columns[0][1]], data)[0]
    return data.decode()


def shapes(api: httpx.Client) -> tuple[dict[str, Shape], dict[str, Shape]]:
    """The declared sources' shapes by topic, and by name."""
    by_topic: dict[str, Shape] = {}
    by_name: dict[str, Shape] = {}
    for kind in ("STREAMS", "TABLES"):
        for entry in ksql(api, f"SHOW {kind};")[0][kind.lower()]:
            described = ksql(api, f"DESCRIBE `{entry['name']}`;")[0]["sourceDescription"]
            fields = [(f["name"], f["schema"]["type"], f.get("type")) for f in described["fields"]]
            shape = Shape(
                described["keyFormat"],
                described["valueFormat"],
                tuple((n, t) for n, t, k in fields if k == "KEY"),
                tuple((n, t) for n, t, k in fields if k != "KEY"),
                kind == "TABLES",
            )
            by_topic.setdefault(described["topic"], shape)
            by_name[entry["name"]] = shape
    return by_topic, by_name


# -- one case -----------------------------------------------------------------------------------


class Refused(Exception):
    """A statement the server answered with an error."""


def ksql(api: httpx.Client, text: str, properties: Mapping[str, Any] | None = None) -> Any:
    answer = api.post(
        "/ksql",
        json={
            "ksql": text,
            "streamsProperties": {"auto.offset.reset": "earliest", **(properties or {})},
        },
    )
    if answer.status_code != 200:
        try:
            message = str(answer.json().get("message"))
        except ValueError:  # not ksqlDB's error body: a crash of the server
            message = f"HTTP {answer.status_code}: {answer.text}"
        raise Refused((message.splitlines() or [""])[0][:100])
    return answer.json()


def expected_record(record: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    return record.get("key"), record.get("value"), record.get("timestamp")


def read_topic(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None, int]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "qtt",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        metadata = consumer.list_topics(timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return []
        partitions = sorted(metadata.partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        records: list[tuple[bytes | None, bytes | None, int]] = []
        ended: set[int | None] = set()
        deadline = time.monotonic() + 10
        while len(ended) < len(partitions) and time.monotonic() < deadline:
            for message in consumer.consume(500, 0.2):
                error = message.error()
                if error is None:
                    records.append((message.key(), message.value(), message.timestamp()[1]))
                elif error.code() == KafkaError._PARTITION_EOF:
                    ended.add(message.partition())
        return records
    finally:
        consumer.close()


def actual_records(
    records: Sequence[tuple[bytes | None, bytes | None, int]],
    shape: Shape,
    expected: Sequence[Mapping[str, Any]],
) -> list[tuple[Any, Any, Any]]:
    windowed = next((r["window"] for r in expected if "window" in r), None)
    out = []
    for raw_key, value, timestamp in records:
        key: bytes | None = raw_key
        window: dict[str, int] = {}
        if windowed is not None and key is not None:  # ksqlDB's windowed key: key, start[, end]
            if windowed.get("type", "").upper() == "SESSION":
                end, start = struct.unpack(">qq", key[-16:])
                key, window = key[:-16], {"start": start, "end": end}
            else:
                (start,) = struct.unpack(">q", key[-8:])
                key, window = key[:-8], {"start": start}
        decoded_key = decode(key, shape.key_format, shape.keys)
        if window:
            decoded_key = (decoded_key, window)
        out.append((decoded_key, decode(value, shape.value_format, shape.values), timestamp))
    return out


def normalized(
    expected: Sequence[Mapping[str, Any]],
) -> list[tuple[Any, Any, Any]]:
    out = []
    for record in expected:
        key, value, timestamp = expected_record(record)
        if "window" in record:
            window = {"start": record["window"]["start"]}
            if record["window"].get("type", "").upper() == "SESSION":
                window["end"] = record["window"]["end"]
            key = (key, window)
        out.append((key, value, timestamp))
    return out


def compare(
    actual: list[tuple[Any, Any, Any]], expected: list[tuple[Any, Any, Any]], table: bool
) -> str | None:
    """None when they match, else what differs. Timestamps are compared where QTT gives one
    other than 0: the strom sink produces with librdkafka, which writes a timestamp of 0 as the
    time of the write."""
    if table:
        actual = list({json.dumps(k, sort_keys=True): (k, v, t) for k, v, t in actual}.values())
        expected = list({json.dumps(k, sort_keys=True): (k, v, t) for k, v, t in expected}.values())
        actual = sorted(actual, key=lambda r: json.dumps(r[0], sort_keys=True))
        expected = sorted(expected, key=lambda r: json.dumps(r[0], sort_keys=True))
    expected = [(k, v, te or None) for k, v, te in expected]
    fixed = [
        (k, v, t if te else None) for (k, v, t), (_, _, te) in zip(actual, expected, strict=False)
    ]
    if fixed == expected:
        return None
    return f"expected {expected[:4]}..., got {fixed[:4]}... ({len(actual)} vs {len(expected)})"


def run_case(case: Case, bootstrap: str, server_for: Any, wait: float) -> str | None:
    """None if it passed, else the failure; raises Refused."""
    body = case.body
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = {r["topic"] for r in body.get("inputs", [])} | {
        t["name"] for t in body.get("topics", []) if "name" in t
    }
    if topics:
        for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
            with contextlib.suppress(Exception):  # an existing topic, one already gone
                future.result()
    with server_for() as api:
        for statement in case.statements:
            ksql(api, statement, body.get("properties"))
        by_topic, by_name = shapes(api)
        # kafka-python: librdkafka reads a timestamp of 0 (QTT's default) as "now"
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        for record in body.get("inputs", []):
            shape = by_topic.get(record["topic"])
            key_fmt, value_fmt = (shape.key_format, shape.value_format) if shape else ("KAFKA",) * 2
            producer.send(
                record["topic"],
                value=encode(record.get("value"), value_fmt, shape.values if shape else ()),
                key=encode(record.get("key"), key_fmt, shape.keys if shape else ()),
                timestamp_ms=record.get("timestamp", 0) or 0,
            )
        producer.flush(30)
        producer.close()
        expected_by_topic: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for record in body["outputs"]:
            expected_by_topic[record["topic"]].append(record)
        shape_of = {}
        for topic in expected_by_topic:
            shape = by_topic.get(topic) or by_name.get(topic)
            if shape is None:
                return f"no source writes topic {topic}"
            shape_of[topic] = shape
        deadline = time.monotonic() + wait
        while True:
            problems = []
            for topic, expected in expected_by_topic.items():
                shape = shape_of[topic]
                actual = actual_records(read_topic(bootstrap, topic), shape, expected)
                problem = compare(actual, normalized(expected), shape.table)
                if problem is not None:
                    problems.append(f"{topic}: {problem}")
            if not problems:
                return None
            if time.monotonic() > deadline:
                queries = ksql(api, "SHOW QUERIES;")[0]["queries"]
                states = {q["id"]: q["state"] for q in queries if q["state"] != "RUNNING"}
                return "; ".join(problems) + (f" (queries {states})" if states else "")
            time.sleep(1)


def clean(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [t for t in admin.list_topics(timeout=10).topics if not t.startswith("__")]
    if names:
        for future in admin.delete_topics(names).values():
            with contextlib.suppress(Exception):  # an existing topic, one already gone
                future.result()
    time.sleep(0.5)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="the query-validation-tests JSON files")
    parser.add_argument("--files", nargs="*", default=["*.json"], help="file name globs")
    parser.add_argument("--limit", type=int, default=None, help="at most N cases run per file")
    parser.add_argument("--wait", type=float, default=60.0, help="seconds to wait for outputs")
    args = parser.parse_args(argv)
    paths = sorted(
        p
        for p in args.directory.glob("*.json")
        if any(fnmatch.fnmatch(p.name, g) for g in args.files)
    )
    tallies: dict[str, Tally] = {}
    started = time.monotonic()
    with (
        spark_and_scratch(2, "strom-qtt") as (spark, data),
        Broker(process=True, data_dir=data / "broker") as broker,
    ):
        bootstrap = broker.bootstrap_servers

        @contextlib.contextmanager
        def server_for() -> Iterator[httpx.Client]:
            service = f"qtt_{uuid.uuid4().hex[:8]}"
            settings = SqlSettings(
                bootstrap_servers=bootstrap,
                service_id=service,
                listener=Listener("http", "127.0.0.1", 0),
                state_dir=data / service,
                command_topic_replicas=1,
                sink_replicas=1,
                retry_backoff=Backoff(initial_ms=1_000, max_ms=10_000),
                values={},
            )
            server = SqlServer(settings, spark=lambda: spark)
            server.start()
            try:
                with httpx.Client(base_url=server.url, timeout=120) as api:
                    yield api
            finally:
                server.stop()

        for path in paths:
            tally = tallies.setdefault(path.stem, Tally())
            ran = 0
            for case in cases(path):
                reason = skip_reason(case)
                if reason is not None:
                    tally.skipped[reason] += 1
                    continue
                if args.limit is not None and ran >= args.limit:
                    tally.skipped["beyond --limit"] += 1
                    continue
                ran += 1
                try:
                    failure = run_case(case, bootstrap, server_for, args.wait)
                except Refused as error:
                    tally.refused[str(error)] += 1
                    print(f"  refused  {case.file}: {case.name}: {error}", flush=True)
                    continue
                finally:
                    clean(bootstrap)
                if failure is None:
                    tally.passed += 1
                    print(f"  passed   {case.file}: {case.name}", flush=True)
                else:
                    tally.failed.append(f"{case.name}: {failure}")
                    print(f"  FAILED   {case.file}: {case.name}: {failure}", flush=True)
    print(f"\n{len(paths)} files, {time.monotonic() - started:.0f} s\n")
    print(render(tallies))


def render(tallies: Mapping[str, Tally]) -> str:
    lines = ["| file | passed | failed | refused | skipped |", "|---|---|---|---|---|"]
    totals = [0, 0, 0, 0]
    for name, t in tallies.items():
        row = [t.passed, len(t.failed), sum(t.refused.values()), sum(t.skipped.values())]
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        lines.append(f"| {name} | " + " | ".join(str(n) for n in row) + " |")
    lines.append("| all | " + " | ".join(str(n) for n in totals) + " |")
    reasons: Counter[str] = Counter()
    refusals: Counter[str] = Counter()
    for t in tallies.values():
        reasons.update(t.skipped)
        refusals.update(t.refused)
    lines += ["", "Skipped, by reason:"]
    lines += [f"- {n} {reason}" for reason, n in reasons.most_common()]
    lines += ["", "Refused by strom's server, by message:"]
    lines += [f"- {n} {message}" for message, n in refusals.most_common()]
    lines += ["", "Failed:"]
    lines += [f"- {name}: {f}" for name, t in tallies.items() for f in t.failed]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
