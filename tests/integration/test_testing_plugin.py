"""The pytest plugin's fixtures, used here as a user's tests would use them, and the plugin
working from a fresh virtual environment where strom is installed like any package."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from strom.server.network.faults import Faults
from strom.testing import Broker, Registry

REPO = Path(__file__).resolve().parents[2]


def test_session_fixtures_produce_and_consume(
    strom_topic: str, strom_producer: Producer, strom_consumer: Consumer
) -> None:
    strom_producer.produce(strom_topic, key=b"k", value=b"v")
    assert strom_producer.flush(10) == 0
    deadline = time.monotonic() + 30
    message = None
    while message is None and time.monotonic() < deadline:
        polled = strom_consumer.poll(0.5)
        if polled is not None and polled.error() is None:
            message = polled
    assert message is not None
    assert (message.key(), message.value()) == (b"k", b"v")


def test_each_test_gets_its_own_topic(strom_topic: str, strom_admin: Any) -> None:
    assert strom_topic in strom_admin.list_topics(timeout=10).topics


def test_function_broker_starts_empty(strom_broker: Broker, strom_session_broker: Broker) -> None:
    assert strom_broker.bootstrap_servers != strom_session_broker.bootstrap_servers
    assert not list(strom_broker.data_dir.glob("test-*"))


def test_faults_fixture_is_cleared_after_the_test(
    strom_faults: Faults, strom_producer_config: dict[str, Any], strom_topic: str
) -> None:
    strom_faults.fail("Produce", "not_leader_or_follower")
    producer = Producer({**strom_producer_config, "retry.backoff.ms": 10})
    producer.produce(strom_topic, b"retried")
    assert producer.flush(10) == 0
    assert not strom_faults.active


def test_registry_fixture_registers_and_serializes(strom_registry: Registry) -> None:
    client = strom_registry.client()
    schema = '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}'
    schema_id = client.register_schema("r-value", Schema(schema, "AVRO"))
    value = AvroSerializer(client, schema)({"a": 1}, SerializationContext("r", MessageField.VALUE))
    assert value[:5] == b"\x00" + schema_id.to_bytes(4, "big")


USER_TEST = """
    def test_round_trip(strom_topic, strom_producer, strom_consumer):
        strom_producer.produce(strom_topic, b"hello")
        assert strom_producer.flush(10) == 0
        message = None
        for _ in range(60):
            message = strom_consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
        assert message is not None and message.value() == b"hello"
"""


@pytest.mark.timeout(300)
def test_plugin_in_a_fresh_virtual_environment(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(REPO),
            "pytest",
        ],
        check=True,
        timeout=240,
    )
    (tmp_path / "test_user.py").write_text(textwrap.dedent(USER_TEST))
    result = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_an_unknown_kafka_release_is_one_usage_error(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(textwrap.dedent(USER_TEST))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"]
    result = subprocess.run(
        [*command, "--strom-kafka-version", "9.9"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 4  # pytest's usage error
    assert result.stderr.strip().splitlines() == [
        "ERROR: --strom-kafka-version: unknown Kafka release '9.9'; "
        "known: 2.8, 3.0, 3.3, 3.6, 3.7, 3.8, 4.0"
    ]
    assert "Traceback" not in result.stdout + result.stderr
