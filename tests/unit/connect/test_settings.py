"""A worker's settings read by Kafka Connect's names."""

from __future__ import annotations

from pathlib import Path

import pytest

from strom.connect.client_overrides import client_options, policy_refusals
from strom.connect.settings import SettingsError, WorkerSettings
from strom.web.server import Listener


def test_distributed_settings_by_kafkas_names() -> None:
    settings = WorkerSettings.from_properties(
        {
            "bootstrap.servers": "b1:9092,b2:9092",
            "group.id": "etl",
            "config.storage.topic": "etl-configs",
            "offset.storage.topic": "etl-offsets",
            "status.storage.topic": "etl-status",
            "config.storage.replication.factor": "1",
            "offset.storage.partitions": "7",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter.schemas.enable": "false",
            "listeners": "https://0.0.0.0:8443,http://:8083",
            "listeners.https.ssl.keystore.location": "/ks.p12",
            "ssl.keystore.location": "/client.p12",
            "rest.advertised.host.name": "worker1",
            "security.protocol": "SSL",
            "spark.master": "spark://m:7077",
            "spark.executor.cores": "2",
            "spark.sql.streaming.checkpointLocation": "/data/ckpt",
        }
    )
    assert (settings.group_id, settings.config_topic, settings.offset_partitions) == (
        "etl",
        "etl-configs",
        7,
    )
    assert settings.config_replication_factor == 1 and settings.status_replication_factor == 3
    assert settings.key_converter.endswith("StringConverter")
    assert settings.value_converter.endswith("JsonConverter")
    assert settings.converter_settings == {"value.converter.schemas.enable": "false"}
    assert settings.listener == Listener("https", "0.0.0.0", 8443)
    assert settings.listener_tls == {"ssl.keystore.location": "/ks.p12"}
    assert settings.advertised_url == "https://worker1:8443"
    assert settings.spark_master == "spark://m:7077"
    assert settings.spark_conf == {"spark.executor.cores": "2"}
    assert settings.checkpoint("cid", "c") == Path("/data/ckpt/cid/etl/c")
    assert settings.spark_options() == {
        "kafka.bootstrap.servers": "b1:9092,b2:9092",
        "kafka.ssl.keystore.location": "/client.p12",
        "kafka.security.protocol": "SSL",
    }
    with pytest.raises(SettingsError, match="JKS keystore cannot be read outside the JVM"):
        settings.client_config()


def test_bad_values_name_the_setting() -> None:
    with pytest.raises(SettingsError, match=r"offset\.storage\.partitions: expected an integer"):
        WorkerSettings.from_properties({"offset.storage.partitions": "many"})
    with pytest.raises(ValueError, match="listeners: expected http://HOST:PORT"):
        WorkerSettings.from_properties({"listeners": "localhost"})


def test_group_timeouts_by_kafkas_names() -> None:
    settings = WorkerSettings.from_properties(
        {"session.timeout.ms": "6000", "heartbeat.interval.ms": "500", "rebalance.timeout.ms": "9"}
    )
    assert (
        settings.session_timeout_ms,
        settings.heartbeat_interval_ms,
        settings.rebalance_timeout_ms,
    ) == (6000, 500, 9)
    defaults = WorkerSettings.from_properties({})
    assert (defaults.session_timeout_ms, defaults.heartbeat_interval_ms) == (10_000, 3_000)
    assert defaults.sync_timeout_ms == 30_000  # Kafka's is 3000: strom allows a loaded machine
    synced = WorkerSettings.from_properties({"worker.sync.timeout.ms": "200"})
    assert synced.sync_timeout_ms == 200
    with pytest.raises(SettingsError, match=r"session\.timeout\.ms"):
        WorkerSettings.from_properties({"session.timeout.ms": "soon"})


def test_client_settings_and_the_override_policy() -> None:
    settings = WorkerSettings.from_properties(
        {
            "producer.compression.type": "lz4",
            "consumer.max.poll.records": "100",
            "connector.client.config.override.policy": (
                "org.apache.kafka.connect.connector.policy.PrincipalConnectorClientConfigOverridePolicy"
            ),
        }
    )
    assert settings.override_policy == "Principal"
    config = {
        "consumer.override.max.poll.records": "5",
        "consumer.override.group.id": "mine",
        "producer.override.acks": "all",
        "admin.override.sasl.mechanism": "PLAIN",
    }
    assert client_options(settings.client_overrides, config, "consumer") == {
        "kafka.max.poll.records": "5"  # the group is the sink's own, not the client's
    }
    assert client_options(settings.client_overrides, config, "producer") == {
        "kafka.compression.type": "lz4",
        "kafka.acks": "all",
    }
    assert sorted(policy_refusals("Principal", config)) == [
        "consumer.override.group.id",
        "consumer.override.max.poll.records",
        "producer.override.acks",
    ]
    assert policy_refusals("All", config) == {}
    assert len(policy_refusals("None", config)) == 4
    with pytest.raises(SettingsError, match=r"connector\.client\.config\.override\.policy"):
        WorkerSettings.from_properties({"connector.client.config.override.policy": "Some"})


def test_basic_auth_needs_its_jaas_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    extension = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
    with pytest.raises(SettingsError, match=r"java\.security\.auth\.login\.config"):
        WorkerSettings.from_properties({"rest.extension.classes": extension})
    with pytest.raises(SettingsError, match="not supported"):
        WorkerSettings.from_properties({"rest.extension.classes": "com.example.Other"})
    monkeypatch.setenv("KAFKA_OPTS", "-Djava.security.auth.login.config=/etc/connect_jaas.conf")
    settings = WorkerSettings.from_properties({"rest.extension.classes": extension})
    assert settings.rest_jaas_config == "/etc/connect_jaas.conf"
