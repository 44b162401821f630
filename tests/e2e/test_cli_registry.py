"""``strom registry``, ``strom schemas`` and the registry value formats of ``strom produce`` and
``strom consume``, as subprocesses against a real ``strom server`` that runs a registry beside
it (its ``registry.*`` settings)."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from google.protobuf import descriptor_pb2
from strom_harness import StromServer, start_strom_server, strom_command, strom_server_args

from strom.testing import unique_topic_name

from .conftest import Result

ORDER_V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}]}
ORDER_V2 = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "int"}, {"name": "note", "type": "string", "default": ""}],
}
ORDER_BAD = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}


def order_descriptor_set() -> bytes:
    """What ``protoc --descriptor_set_out`` writes for ``message Order {int32 id; string note}``."""
    field = descriptor_pb2.FieldDescriptorProto
    message = descriptor_pb2.DescriptorProto(name="Order")
    message.field.add(name="id", number=1, type=field.TYPE_INT32, label=field.LABEL_OPTIONAL)
    message.field.add(name="note", number=2, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    file = descriptor_pb2.FileDescriptorProto(
        name="order.proto", package="shop", syntax="proto3", message_type=[message]
    )
    return descriptor_pb2.FileDescriptorSet(file=[file]).SerializeToString()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Beside:
    """A ``strom server`` with a registry beside it."""

    def __init__(self, process: StromServer, url: str) -> None:
        self.process = process
        self.url = url

    def run(self, *args: str, input: str = "", ok: bool = True) -> Result:
        completed = subprocess.run(
            [*strom_command(), *args],
            input=input.encode(),
            capture_output=True,
            timeout=90,
            check=False,
        )
        result = Result(completed.returncode, completed.stdout.decode(), completed.stderr.decode())
        if ok:
            assert result.returncode == 0, f"strom {' '.join(args)}: {result}"
        assert "Traceback" not in result.stderr, result.stderr
        return result


@pytest.fixture(scope="module")
def beside(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Beside]:
    base = tmp_path_factory.mktemp("strom-registry")
    port = free_port()
    process = start_strom_server(
        data_dir=base / "data",
        cwd=base,
        overrides={
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "3",
            "registry.listeners": f"http://127.0.0.1:{port}",
        },
    )
    line = process.wait_for_line(
        re.compile(r"ready: schema registry listening on (\S+)"), timeout=60
    )
    yield Beside(process, line.rsplit(" ", 1)[1])
    process.stop(signal.SIGTERM)


def write(path: Path, document: object) -> Path:
    if isinstance(document, bytes):
        path.write_bytes(document)
    else:
        path.write_text(json.dumps(document))
    return path


def test_schemas_commands(beside: Beside, tmp_path: Path) -> None:
    registry = ["--registry", beside.url]
    v1, v2 = write(tmp_path / "v1.avsc", ORDER_V1), write(tmp_path / "v2.avsc", ORDER_V2)
    bad = write(tmp_path / "bad.avsc", ORDER_BAD)
    first = beside.run("schemas", *registry, "register", "cli-orders", "--schema", str(v1))
    assert first.stdout.strip().isdigit()
    assert beside.run("schemas", *registry, "check", "cli-orders", "--schema", str(v2)).lines == [
        "compatible"
    ]
    refused = beside.run(
        "schemas", *registry, "check", "cli-orders", "--schema", str(bad), ok=False
    )
    assert refused.returncode == 1 and "incompatible" in refused.stderr
    beside.run("schemas", *registry, "register", "cli-orders", "--schema", str(v2))
    assert "cli-orders" in beside.run("schemas", *registry, "list").lines
    latest = json.loads(beside.run("schemas", *registry, "get", "cli-orders").stdout)
    assert latest["version"] == 2 and json.loads(latest["schema"]) == ORDER_V2
    by_id = json.loads(beside.run("schemas", *registry, "get", "--id", first.stdout.strip()).stdout)
    assert json.loads(by_id["schema"]) == ORDER_V1
    assert json.loads(
        beside.run("schemas", *registry, "config", "cli-orders", "--set", "full").stdout
    ) == {"compatibility": "FULL"}
    assert json.loads(beside.run("schemas", *registry, "config", "cli-orders").stdout) == {
        "compatibilityLevel": "FULL"
    }
    missing = beside.run("schemas", *registry, "get", "nothing-here", ok=False)
    assert "error_code 40401" in missing.stderr
    assert json.loads(beside.run("schemas", *registry, "delete", "cli-orders").stdout) == [1, 2]
    assert json.loads(
        beside.run("schemas", *registry, "delete", "cli-orders", "--permanent").stdout
    ) == [1, 2]


@pytest.mark.parametrize(
    ("value_format", "schema"),
    [
        ("avro", ORDER_V2),
        (
            "json-schema",
            {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
            },
        ),
        ("protobuf", order_descriptor_set()),
    ],
)
def test_produce_and_consume_with_a_registry(
    beside: Beside, tmp_path: Path, value_format: str, schema: object
) -> None:
    topic = unique_topic_name("cli-registry")
    bootstrap = ["--bootstrap-server", beside.process.bootstrap]
    formats = ["--value-format", value_format, "--registry", beside.url]
    beside.run("topics", "create", topic, "--partitions", "1", *bootstrap)
    schema_file = write(tmp_path / "schema.json", schema)
    lines = ['{"id": 1, "note": "a"}', '{"id": 2, "note": "b"}']
    beside.run(
        "produce",
        topic,
        *formats,
        "--schema",
        str(schema_file),
        *bootstrap,
        input="\n".join(lines) + "\n",
    )
    subject = httpx.get(f"{beside.url}/subjects/{topic}-value/versions/latest").json()
    assert subject["version"] == 1
    consumed = beside.run(
        "consume",
        topic,
        "--from-beginning",
        "--max-messages",
        "2",
        "--timeout-ms",
        "20000",
        *formats,
        *bootstrap,
    )
    assert [json.loads(line) for line in consumed.lines] == [json.loads(line) for line in lines]
    refused = beside.run(
        "produce",
        topic,
        *formats,
        "--schema",
        str(schema_file),
        *bootstrap,
        input='{"id": "not a number"}\n',
        ok=False,
    )
    assert refused.returncode == 1 and "line 1" in refused.stderr


def test_produce_avro_names_a_field_the_schema_lacks(beside: Beside, tmp_path: Path) -> None:
    topic = unique_topic_name("cli-avro-extra")
    bootstrap = ["--bootstrap-server", beside.process.bootstrap]
    beside.run("topics", "create", topic, "--partitions", "1", *bootstrap)
    schema = ["--schema", str(write(tmp_path / "v1.avsc", ORDER_V1))]
    formats = ["--value-format", "avro", "--registry", beside.url, *schema, *bootstrap]
    lines = '{"id": 1, "colour": "red"}\n{"id": 2, "colour": "blue"}\n'
    warned = beside.run("produce", topic, *formats, input=lines)
    assert warned.error_lines == [
        "Warning: field(s) not in the Avro schema, left out of the message: colour "
        "(--strict refuses such lines)"
    ]
    strict = beside.run("produce", topic, *formats, "--strict", input=lines, ok=False)
    assert strict.returncode == 1
    assert (
        "line 1" in strict.stderr and "not in the Avro schema: colour (--strict)" in strict.stderr
    )
    consumed = beside.run(
        "consume", topic, "--from-beginning", "--max-messages", "3", "--timeout-ms", "5000",
        "--value-format", "avro", "--registry", beside.url, *bootstrap,
    )  # fmt: skip
    assert [json.loads(line) for line in consumed.lines] == [{"id": 1}, {"id": 2}]


def test_registry_command(beside: Beside) -> None:
    port = free_port()
    topic = unique_topic_name("_schemas")
    process = StromServer(
        [
            *strom_command(),
            "registry",
            "--bootstrap-servers",
            beside.process.bootstrap,
            "--listener",
            f"127.0.0.1:{port}",
            "--override",
            f"kafkastore.topic={topic}",
            "--override",
            f"schema.registry.group.id={topic}",
        ],
        cwd=Path.cwd(),
    )
    try:
        process.wait_for_line("ready: schema registry listening on", timeout=60)
        url = f"http://127.0.0.1:{port}"
        body = {"schema": json.dumps(ORDER_V1)}
        assert httpx.post(f"{url}/subjects/own/versions", json=body).json() == {"id": 1}
        assert httpx.get(f"{url}/subjects").json() == ["own"]
        process.wait_for_line("POST /subjects/own/versions 200", timeout=10)  # the request log
    finally:
        process.stop(signal.SIGTERM)


def _registry_process(bootstrap: str, topic: str) -> tuple[StromServer, str]:
    port = free_port()
    process = StromServer(
        [
            *strom_command(),
            "registry",
            "--bootstrap-servers",
            bootstrap,
            "--listener",
            f"127.0.0.1:{port}",
            "--override",
            f"kafkastore.topic={topic}",
            "--override",
            f"schema.registry.group.id={topic}",
        ],
        cwd=Path.cwd(),
    )
    process.wait_for_line("ready: schema registry listening on", timeout=60)
    return process, f"http://127.0.0.1:{port}"


def _is_primary(url: str) -> bool | None:
    try:
        answer: bool = httpx.get(f"{url}/health", timeout=2).json()["primary"]
    except httpx.HTTPError:
        return None
    return answer


def test_a_killed_primary_is_replaced(beside: Beside) -> None:
    """kill -9 of the primary: its group session expires and the other instance takes over."""
    topic = unique_topic_name("_schemas")
    instances = [_registry_process(beside.process.bootstrap, topic) for _ in range(2)]
    try:
        deadline = time.monotonic() + 30
        while sorted(str(_is_primary(url)) for _, url in instances) != ["False", "True"]:
            assert time.monotonic() < deadline, "no single primary"
            time.sleep(0.2)
        primary, survivor = sorted(instances, key=lambda instance: not _is_primary(instance[1]))
        body = {"schema": json.dumps(ORDER_V1)}
        assert httpx.post(f"{survivor[1]}/subjects/k/versions", json=body).json() == {"id": 1}
        primary[0].process.send_signal(signal.SIGKILL)
        primary[0].process.wait(10)
        # The next write waits out the election, then lands on the survivor.
        answer = httpx.post(
            f"{survivor[1]}/subjects/k/versions", json={"schema": json.dumps(ORDER_V2)}, timeout=60
        )
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"id": 2}
        assert _is_primary(survivor[1]) is True
    finally:
        for process, _ in instances:
            if process.process.poll() is None:
                process.stop(signal.SIGTERM)


def test_registry_settings_refused_at_start(tmp_path: Path) -> None:
    """A registry.* keystore the registry cannot read stops ``strom server`` with one line."""
    jks = tmp_path / "registry.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    args = strom_server_args(
        data_dir=tmp_path / "data",
        overrides={
            "registry.listeners": f"https://127.0.0.1:{free_port()}",
            "registry.ssl.keystore.location": str(jks),
        },
    )
    result = subprocess.run(
        args, check=False, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("strom server: schema registry: ssl.keystore.type: JKS"), last
    assert "keytool -importkeystore" in last
