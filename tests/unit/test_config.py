from __future__ import annotations

import pytest

from strom.config import (
    ConfigError,
    ServerConfig,
    TopicConfig,
    parse_properties,
    unknown_settings,
)


def test_defaults_are_kafkas() -> None:
    config = ServerConfig()
    assert config["num.partitions"] == 1
    assert config["message.max.bytes"] == 1048588
    assert config.retention_ms == 7 * 24 * 3600 * 1000


def test_retention_precedence_ms_over_minutes_over_hours() -> None:
    assert ServerConfig({"log.retention.hours": "1"}).retention_ms == 3_600_000
    assert ServerConfig(
        {"log.retention.minutes": "2", "log.retention.hours": "1"}
    ).retention_ms == (120_000)
    assert ServerConfig({"log.retention.ms": "5", "log.retention.minutes": "2"}).retention_ms == 5


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"no.such.setting": "1"}, "no.such.setting: unknown setting"),
        ({"num.partitions": "zero"}, "num.partitions: expected an integer, got 'zero'"),
        ({"num.partitions": "0"}, "num.partitions: must be at least 1, got 0"),
        ({"auto.create.topics.enable": "yes"}, "expected true or false"),
        ({"log.cleanup.policy": "compact,shred"}, "'shred' is not one of delete, compact"),
    ],
)
def test_invalid_settings_name_the_setting(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ServerConfig(overrides)


def test_every_invalid_setting_is_named_at_once() -> None:
    with pytest.raises(ConfigError) as raised:
        ServerConfig({"num.partitions": "zero", "no.such.setting": "1", "log.segment.bytes": "x"})
    assert str(raised.value) == (
        "num.partitions: expected an integer, got 'zero'; no.such.setting: unknown setting; "
        "log.segment.bytes: expected an integer, got 'x'"
    )


def test_unknown_settings_with_their_likely_typo() -> None:
    names = ["num.partitons", "confluent.support.metrics.enable", "num.partitions"]
    names.append("listener.name.sasl_ssl.ssl.keystore.location")
    assert unknown_settings(names) == {
        "num.partitons": "num.partitions",
        "confluent.support.metrics.enable": None,
    }


def test_confluent_balancer_names_set_stroms_settings() -> None:
    config = ServerConfig(
        {
            "confluent.balancer.enable": "true",
            "confluent.balancer.throttle.bytes.per.second": "5000000",
            "confluent.balancer.heal.broker.failure.threshold.ms": "-1",
        }
    )
    assert config.get_bool("strom.balancer.enable")
    assert config.get_int("strom.balancer.throttle.bytes.per.second") == 5_000_000
    assert config.get_int("strom.balancer.heal.broker.failure.threshold.ms") == -1
    assert config.is_explicit("strom.balancer.enable")
    assert unknown_settings(["confluent.balancer.enable"]) == {}
    same = {"confluent.balancer.enable": "true", "strom.balancer.enable": "true"}
    assert ServerConfig(same).get_bool("strom.balancer.enable")


def test_both_names_of_a_balancer_setting_must_agree() -> None:
    with pytest.raises(ConfigError, match=r"^confluent.balancer.enable: is strom.balancer.enable"):
        ServerConfig({"confluent.balancer.enable": "true", "strom.balancer.enable": "false"})


def test_topic_config_falls_back_to_server_and_reports_source() -> None:
    server = ServerConfig({"log.segment.bytes": "2048"})
    topic = TopicConfig(server, {"retention.ms": "1000"})
    assert topic["retention.ms"] == 1000
    assert topic.source("retention.ms") == "topic"
    assert topic["segment.bytes"] == 2048
    assert topic.source("segment.bytes") == "static"
    assert topic.source("cleanup.policy") == "default"
    with pytest.raises(ConfigError, match="unknown topic setting"):
        TopicConfig(server, {"log.segment.bytes": "1"})


def test_parse_properties() -> None:
    text = "# comment\n! also\nnum.partitions=3\nlog.dirs : /tmp/x\n\n"
    assert parse_properties(text) == {"num.partitions": "3", "log.dirs": "/tmp/x"}
    with pytest.raises(ConfigError, match="line 1"):
        parse_properties("garbage")
