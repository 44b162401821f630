"""``strom sql``: its help, and settings it cannot use refused in one line before anything
starts."""

from __future__ import annotations

from pathlib import Path

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


def test_the_server_takes_options_after_its_properties_file(invoke: Invoke, tmp_path: Path) -> None:
    properties = tmp_path / "sql.properties"
    properties.write_text("ksql.service.id=x\n")
    result = invoke(["sql", str(properties), "--override", "ksql.streams.auto.offset.reset=none"])
    assert error_lines(result) == [
        "strom sql: ksql.streams.auto.offset.reset: earliest or latest, not 'none'"
    ]


def test_shell_and_run_are_clients_with_options_of_their_own(invoke: Invoke) -> None:
    for command in ("shell", "run"):
        result = invoke(["sql", command, "--help"])
        assert result.exit_code == 0
        assert f"Usage: cli sql {command} [OPTIONS]" in result.stdout
        assert "--server" in result.stdout and "--bootstrap-server" not in result.stdout
    unreachable = invoke(["sql", "shell", "--server", "http://127.0.0.1:9"], input="")
    assert unreachable.exit_code == 1
    assert error_lines(unreachable)[0].startswith(
        "Error: cannot reach the server at http://127.0.0.1:9"
    )
