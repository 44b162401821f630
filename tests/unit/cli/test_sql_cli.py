"""``strom sql``: its help, and settings it cannot use refused in one line before anything
starts."""

from __future__ import annotations

from .conftest import Invoke, error_lines


def test_sql_help(invoke: Invoke) -> None:
    result = invoke(["sql", "--help"])
    assert result.exit_code == 0
    for option in ("--bootstrap-server, --bootstrap-servers", "--listener", "--conf", "--master"):
        assert option in result.stdout
    assert "localhost:8088" in result.stdout


def test_a_bad_setting_is_one_line(invoke: Invoke) -> None:
    result = invoke(["sql", "--override", "ksql.streams.auto.offset.reset=none"])
    assert result.exit_code == 1
    assert error_lines(result) == [
        "strom sql: ksql.streams.auto.offset.reset: earliest or latest, not 'none'"
    ]
    listener = invoke(["sql", "--override", "listeners=ftp://x:1"])
    assert listener.exit_code == 1 and "listeners: expected http://HOST:PORT" in listener.stderr


def test_conf_takes_spark_settings_only(invoke: Invoke) -> None:
    result = invoke(["sql", "--conf", "ksql.service.id=x"])
    assert result.exit_code == 2
    assert "not a Spark setting: ksql.service.id" in result.stderr
