"""``strom configs``: kafka-configs.sh's k=v lists, sources and displayed values."""

from __future__ import annotations

import click
import pytest
from confluent_kafka.admin._config import ConfigEntry, ConfigSource

from strom.cli.configs import (
    check_conflicts,
    display_value,
    is_dynamic,
    parse_config_list,
    parse_key_list,
    source_name,
)


def test_config_list() -> None:
    assert parse_config_list("a=1,b=two", option="--add-config") == {"a": "1", "b": "two"}


def test_square_brackets_hold_commas() -> None:
    parsed = parse_config_list("cleanup.policy=[compact,delete],x=1", option="--add-config")
    assert parsed == {"cleanup.policy": "compact,delete", "x": "1"}


def test_values_may_hold_equals_signs_and_be_empty() -> None:
    assert parse_config_list("a=b=c,d=", option="--add-config") == {"a": "b=c", "d": ""}


@pytest.mark.parametrize("text", ["a", "a=1,b", "=1", "a=[1,2", "a=1]"])
def test_bad_config_lists(text: str) -> None:
    with pytest.raises(click.BadParameter):
        parse_config_list(text, option="--add-config")


def test_key_list() -> None:
    assert parse_key_list(("a,b", "c", " d , ")) == ["a", "b", "c", "d"]


def test_conflicts() -> None:
    check_conflicts({"a": "1"}, ["b"])
    with pytest.raises(click.UsageError, match="both added and deleted: a"):
        check_conflicts({"a": "1"}, ["a"])


@pytest.mark.parametrize(
    ("source", "name"),
    [
        (ConfigSource.DEFAULT_CONFIG, "default"),
        (ConfigSource.DYNAMIC_TOPIC_CONFIG, "topic"),
        (ConfigSource.STATIC_BROKER_CONFIG, "static"),
        (ConfigSource.DYNAMIC_BROKER_CONFIG, "dynamic-broker"),
        (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, "dynamic-default-broker"),
        (ConfigSource.UNKNOWN_CONFIG, "unknown"),
    ],
)
def test_source_names(source: ConfigSource, name: str) -> None:
    assert source_name(ConfigEntry("x", "1", source=source)) == name


def test_source_given_as_a_number() -> None:
    entry = ConfigEntry("x", "1", source=ConfigSource.DYNAMIC_TOPIC_CONFIG.value)  # type: ignore[arg-type]
    assert source_name(entry) == "topic"
    assert is_dynamic(entry)


def test_displayed_values() -> None:
    assert display_value(ConfigEntry("a", "1")) == "1"
    assert display_value(ConfigEntry("a", None)) == "null"
    assert display_value(ConfigEntry("p", None, is_sensitive=True)) == "(sensitive)"
