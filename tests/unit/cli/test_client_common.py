"""Settings, error lines and the reachability check shared by the client commands."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin._metadata import ClusterMetadata, PartitionMetadata, TopicMetadata

from strom.cli import client_common
from strom.cli.client_common import (
    ClientConfig,
    CliError,
    failure,
    fetch_metadata,
    kafka_error_message,
    load_command_config,
    parse_assignment,
    parse_assignments,
    topic_partitions,
)


def test_broker_error_keeps_its_name() -> None:
    error = KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "Topic 'a' already exists.")
    assert kafka_error_message(error) == "TOPIC_ALREADY_EXISTS: Topic 'a' already exists."


def test_local_error_is_its_reason_only() -> None:
    assert kafka_error_message(KafkaError(KafkaError._TIMED_OUT)) == "Local: Timed out"


def test_failure_names_the_action() -> None:
    exc = KafkaException(KafkaError(KafkaError.INVALID_PARTITIONS, "Too few."))
    assert str(failure("cannot add partitions to topic 't'", exc).message) == (
        "cannot add partitions to topic 't': INVALID_PARTITIONS: Too few."
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b", ("a", "b")),
        ("a=", ("a", "")),
        ("a=b=c", ("a", "b=c")),
        (" a =b ", ("a", "b ")),
    ],
)
def test_parse_assignment(text: str, expected: tuple[str, str]) -> None:
    assert parse_assignment(text, option="--x") == expected


@pytest.mark.parametrize("text", ["a", "=b", "", " =b"])
def test_parse_assignment_refuses(text: str) -> None:
    with pytest.raises(click.BadParameter, match="expected NAME=VALUE"):
        parse_assignment(text, option="--x")


def test_parse_assignments_later_wins() -> None:
    assert parse_assignments(["a=1", "b=2", "a=3"], option="--x") == {"a": "3", "b": "2"}


def test_settings_precedence(tmp_path: Path) -> None:
    file = tmp_path / "client.properties"
    file.write_text("client.id=from-file\nlinger.ms=7\nacks=1\nbootstrap.servers=file:9092\n")
    config = ClientConfig.build(
        bootstrap_server=None,
        command_config=file,
        defaults={"linger.ms": "5", "compression.type": "lz4"},
        overrides={"acks": "all"},
    )
    settings = config.settings
    assert settings["client.id"] == "from-file"  # file over the common defaults
    assert settings["linger.ms"] == "7"  # file over the command's defaults
    assert settings["compression.type"] == "lz4"  # command default kept
    assert settings["acks"] == "all"  # flags over the file
    assert settings["bootstrap.servers"] == "file:9092"  # file when no --bootstrap-server
    flagged = ClientConfig.build(bootstrap_server="flag:1", command_config=file)
    assert flagged.settings["bootstrap.servers"] == "flag:1"


def test_defaults_without_any_option() -> None:
    config = ClientConfig.build(bootstrap_server=None, command_config=None)
    assert config.bootstrap_servers == "localhost:9092"
    assert config.settings["socket.connection.setup.timeout.ms"] == "10000"
    assert config.connect_timeout_s == 10.0
    assert config.settings["error_cb"] is config.errors
    assert isinstance(config.settings["logger"], logging.Logger)


def test_debug_setting_keeps_librdkafka_log() -> None:
    config = ClientConfig.build(
        bootstrap_server=None, command_config=None, overrides={"debug": "broker"}
    )
    assert "logger" not in config.settings


def test_load_command_config_errors_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.properties"
    with pytest.raises(CliError, match=r"cannot read .*missing\.properties"):
        load_command_config(missing)
    binary = tmp_path / "binary.properties"
    binary.write_bytes(b"a=\xff\xfe\n")
    with pytest.raises(CliError, match="not UTF-8"):
        load_command_config(binary)


def _metadata(**topics: TopicMetadata) -> ClusterMetadata:
    metadata = ClusterMetadata()
    metadata.topics = dict(topics)
    return metadata


def _topic(partitions: int, error: KafkaError | None = None) -> TopicMetadata:
    topic = TopicMetadata()
    topic.partitions = {p: PartitionMetadata() for p in range(partitions)}
    topic.error = error
    return topic


def test_topic_partitions() -> None:
    assert topic_partitions(_metadata(t=_topic(3)), "t") == [0, 1, 2]


def test_topic_partitions_of_a_missing_topic() -> None:
    with pytest.raises(CliError, match="topic 'x' does not exist"):
        topic_partitions(_metadata(), "x")
    unknown = _topic(0, KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
    with pytest.raises(CliError, match="topic 'x' does not exist"):
        topic_partitions(_metadata(x=unknown), "x")


def test_topic_partitions_while_leaders_are_elected() -> None:
    electing = _topic(0, KafkaError(KafkaError.LEADER_NOT_AVAILABLE))
    assert topic_partitions(_metadata(t=electing), "t") == []


def test_topic_partitions_other_error() -> None:
    denied = _topic(0, KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    with pytest.raises(CliError, match="TOPIC_AUTHORIZATION_FAILED"):
        topic_partitions(_metadata(t=denied), "t")


@dataclass
class FakeClient:
    """Fails ``failures`` metadata requests with ``code``, then answers; ``poll`` serves the
    queued error callbacks as librdkafka does."""

    config: ClientConfig
    failures: int
    code: int = KafkaError._TRANSPORT
    callbacks: list[KafkaError] = field(default_factory=list)
    requests: list[tuple[str | None, float]] = field(default_factory=list)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        self.requests.append((topic, timeout))
        if len(self.requests) <= self.failures:
            if self.code == KafkaError._TIMED_OUT:
                time.sleep(timeout)  # no answer: librdkafka waits the whole timeout
            raise KafkaException(KafkaError(self.code))
        return _metadata(t=_topic(1))

    def poll(self, timeout: float = -1) -> object:
        for error in self.callbacks:
            self.config.errors(error)
        self.callbacks.clear()
        return 0


def _config(connect_timeout_ms: int = 10_000) -> ClientConfig:
    return ClientConfig.build(
        bootstrap_server="b:1",
        command_config=None,
        overrides={"socket.connection.setup.timeout.ms": str(connect_timeout_ms)},
    )


def test_fetch_metadata_retries_until_a_broker_answers() -> None:
    config = _config()
    client = FakeClient(config, failures=2)
    metadata = fetch_metadata(client, config, "t")
    assert "t" in metadata.topics
    assert [topic for topic, _ in client.requests] == ["t", "t", "t"]
    timeouts = [timeout for _, timeout in client.requests]
    assert timeouts == sorted(timeouts)  # each attempt waits longer


def test_fetch_metadata_gives_up_when_all_brokers_are_down() -> None:
    config = _config()
    client = FakeClient(config, failures=100)
    client.callbacks = [
        KafkaError(
            KafkaError._TRANSPORT,
            "b:1/bootstrap: Connect to ipv4#1.2.3.4:1 failed: "
            "Connection refused (after 0ms in state CONNECT)",
        ),
        KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"),
    ]
    with pytest.raises(CliError) as raised:
        fetch_metadata(client, config)
    assert raised.value.message == (
        "cannot reach a broker at b:1: Connect to ipv4#1.2.3.4:1 failed: Connection refused; "
        "is the server running?"
    )
    assert len(client.requests) == 1


def test_fetch_metadata_gives_up_after_the_connection_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_common, "_PROBE_MARGIN_S", 0.0)
    config = _config(connect_timeout_ms=300)
    client = FakeClient(config, failures=100, code=KafkaError._TIMED_OUT)
    with pytest.raises(CliError, match=r"no broker at b:1 answered within 0.3 s"):
        fetch_metadata(client, config)


def test_fetch_metadata_passes_other_errors_on() -> None:
    config = _config()
    client = FakeClient(config, failures=1, code=KafkaError.UNSUPPORTED_VERSION)
    with pytest.raises(KafkaException):
        fetch_metadata(client, config)


def test_fatal_error_stops_at_once() -> None:
    config = _config()
    client = FakeClient(config, failures=100)
    client.callbacks = [KafkaError(KafkaError._FATAL, "fenced", fatal=True)]
    with pytest.raises(CliError, match="fenced"):
        fetch_metadata(client, config)


@pytest.mark.parametrize(
    ("settings", "error", "expected"),
    [
        (
            {"security.protocol": "ssl"},
            KafkaError(
                KafkaError._TRANSPORT,
                "ssl://b:1/bootstrap: SSL handshake failed: Disconnected: SSL connection closed "
                "by peer: connecting to a PLAINTEXT broker listener? (after 0ms in state "
                "SSL_HANDSHAKE)",
            ),
            "the listener at b:1 speaks another protocol than security.protocol=SSL (no TLS "
            "server answered the handshake): set security.protocol to the listener's in "
            "--command-config",
        ),
        (
            {"security.protocol": "sasl_plaintext"},
            KafkaError(
                KafkaError._AUTHENTICATION,
                "sasl_plaintext://b:1/bootstrap: Failed to initialize SASL authentication: SASL "
                "Handshake not supported by broker (required by mechanism PLAIN) (after 0ms in "
                "state AUTH_LEGACY)",
            ),
            "the broker at b:1 did not authenticate this client with "
            "security.protocol=SASL_PLAINTEXT (Failed to initialize SASL authentication: SASL "
            "Handshake not supported by broker (required by mechanism PLAIN)): check "
            "security.protocol and the sasl.* settings in --command-config",
        ),
    ],
    ids=["ssl-to-plaintext", "sasl-to-plaintext"],
)
def test_a_listener_of_another_protocol_is_named_as_such(
    settings: dict[str, str], error: KafkaError, expected: str
) -> None:
    config = _config()
    config.settings.update(settings)
    client = FakeClient(config, failures=100)
    client.callbacks = [error, KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down")]
    with pytest.raises(CliError) as raised:
        fetch_metadata(client, config)
    assert raised.value.message == expected
