"""The settings the service commands (registry, connect, sql, rest, console) make of their
options: defaults, then PROPERTIES_FILE, then ``--override``, then ``--conf``, then the options."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from strom.cli.main import cli
from strom.cli.service import ServiceOptions


def test_each_source_overrides_the_one_before(tmp_path: Path) -> None:
    properties = tmp_path / "service.properties"
    properties.write_text("a=file\nb=file\nbootstrap.servers=file:1\nspark.master=file\n")
    options = ServiceOptions(
        properties_file=properties,
        bootstrap_servers="option:2",
        listener="localhost:1",
        overrides=("b = override", "c=override"),
        master="local[2]",
        confs=("spark.x=1",),
    )
    assert options.settings(defaults={"a": "default", "d": "default"}) == {
        "a": "file",
        "b": "override",
        "c": "override",
        "d": "default",
        "bootstrap.servers": "option:2",
        "listeners": "http://localhost:1",
        "spark.master": "local[2]",
        "spark.x": "1",
    }


def test_bootstrap_key_and_https_listener() -> None:
    options = ServiceOptions(None, "h:1", "localhost:2", ("ssl.keystore.location=k.jks",))
    values = options.settings(bootstrap_key="store.servers", https_with="ssl.keystore.location")
    assert values["store.servers"] == "h:1" and "bootstrap.servers" not in values
    assert values["listeners"] == "https://localhost:2"
    assert options.settings()["listeners"] == "http://localhost:2"


def test_a_url_option_sets_its_setting_over_the_override() -> None:
    overrides = ("schema.registry.url=http://override:1",)
    given = ServiceOptions(
        None, None, None, overrides, named=(("schema.registry.url", "http://r:2"),)
    )
    assert given.settings()["schema.registry.url"] == "http://r:2"
    absent = ServiceOptions(None, None, None, overrides, named=(("schema.registry.url", None),))
    assert absent.settings()["schema.registry.url"] == "http://override:1"


@pytest.mark.parametrize(
    ("overrides", "confs", "message"),
    [(("x",), (), "expected NAME=VALUE, got 'x'"), ((), ("x=1",), "not a Spark setting: x")],
)
def test_bad_pairs_are_usage_errors(
    overrides: tuple[str, ...], confs: tuple[str, ...], message: str
) -> None:
    options = ServiceOptions(None, None, None, overrides, confs=confs)
    with pytest.raises(click.BadParameter, match=message):
        options.settings()


@pytest.mark.parametrize("command", ["registry", "connect", "sql", "rest", "console"])
def test_a_missing_properties_file_is_one_line(command: str, tmp_path: Path) -> None:
    missing = tmp_path / "missing.properties"
    result = CliRunner().invoke(cli, [command, str(missing)])
    assert result.exit_code == 2
    assert f"{missing}: cannot read properties file" in result.stderr
    assert "Traceback" not in result.output and result.exception is not None
    assert isinstance(result.exception, SystemExit)
