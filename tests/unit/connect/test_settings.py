"""A worker's settings read by Kafka Connect's names."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    with pytest.raises(SettingsError, match=r"session\.timeout\.ms"):
        WorkerSettings.from_properties({"session.timeout.ms": "soon"})
