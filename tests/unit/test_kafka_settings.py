"""Apache Kafka 4.0's settings catalog: every setting is known, typed and validated as Kafka's,
and docs/broker.md lists exactly those strom records without acting on them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from strom.config import (
    RECORDED_ONLY,
    SERVER_SETTINGS,
    TOPIC_SETTINGS,
    ConfigError,
    ConfigType,
    ServerConfig,
    TopicConfig,
)
from strom.config.kafka_settings import KAFKA_SETTINGS

BROKER_DOC = Path(__file__).parents[2] / "docs" / "broker.md"


def test_the_catalog_is_kafka_4s() -> None:
    assert len(KAFKA_SETTINGS.broker) > 290
    assert len(KAFKA_SETTINGS.topic) > 30
    assert not [name for name in KAFKA_SETTINGS.broker if name.startswith("zookeeper.")]
    assert "message.format.version" not in KAFKA_SETTINGS.topic  # gone in 4.0 (KIP-724)
    assert KAFKA_SETTINGS.broker["num.recovery.threads.per.data.dir"].default == 2  # KIP-1030
    relogin = KAFKA_SETTINGS.broker["sasl.kerberos.min.time.before.relogin"]
    assert (relogin.type, relogin.default, relogin.per_broker) == (ConfigType.LONG, 60000, True)
    assert KAFKA_SETTINGS.broker["num.network.threads"].read_only is False
    assert KAFKA_SETTINGS.broker["process.roles"].read_only is True


def test_every_kafka_setting_is_a_strom_setting() -> None:
    assert set(KAFKA_SETTINGS.broker) <= set(SERVER_SETTINGS)
    assert set(KAFKA_SETTINGS.topic) <= set(TOPIC_SETTINGS)
    for name, setting in TOPIC_SETTINGS.items():
        if setting.server_default is not None:
            assert setting.server_default in SERVER_SETTINGS, name


def test_kafkas_types_and_update_modes_hold_for_strom_s_own_settings() -> None:
    """strom's definitions win, but not on what a client sees as the setting's kind."""
    for name, kafka in KAFKA_SETTINGS.broker.items():
        assert SERVER_SETTINGS[name].per_broker == kafka.per_broker, name
    mismatched = {
        name
        for name, kafka in {**KAFKA_SETTINGS.broker, **KAFKA_SETTINGS.topic}.items()
        if {**SERVER_SETTINGS, **TOPIC_SETTINGS}[name].type != kafka.type
    }
    assert mismatched == {"controller.listener.names"}  # strom reads it as the list it is


def test_every_default_of_the_catalog_parses() -> None:
    config = ServerConfig()
    for name, setting in KAFKA_SETTINGS.broker.items():
        if name in RECORDED_ONLY:
            assert config[name] == setting.default, name


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"sasl.kerberos.min.time.before.relogin": "soon"}, "expected an integer, got 'soon'"),
        ({"ssl.client.auth": "sometimes"}, "'sometimes' is not one of"),
        ({"compression.gzip.level": "12"}, "must be -1 or between 1 and 9, got 12"),
        ({"zookeeper.connect": "zk:2181"}, "zookeeper.connect: unknown setting"),
    ],
)
def test_recorded_settings_are_validated_as_kafka_validates_them(
    overrides: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        ServerConfig(overrides)


def test_a_recorded_topic_setting_takes_its_brokers_default() -> None:
    server = ServerConfig({"log.local.retention.ms": "3600000"})
    topic = TopicConfig(server, {})
    assert topic["local.retention.ms"] == 3600000
    assert TopicConfig(server, {"local.retention.ms": "-2"})["local.retention.ms"] == -2


def test_the_docs_list_exactly_the_settings_strom_does_not_act_on() -> None:
    text = BROKER_DOC.read_text(encoding="utf-8")
    section = text.split("<!-- recorded-only:start -->")[1].split("<!-- recorded-only:end -->")[0]
    assert set(re.findall(r"`([a-z0-9.]+)`", section)) == RECORDED_ONLY
