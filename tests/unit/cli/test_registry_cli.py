"""``strom schemas`` and ``strom registry`` help and usage errors, the registry options of
``produce``/``consume``, and the ``registry.*`` section of the server's settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from strom.cli.settings import build_config, registry_section

from .conftest import Invoke, error_lines

SCHEMAS = ["list", "get", "register", "check", "delete", "config"]


def test_schemas_help_lists_its_subcommands_with_examples(invoke: Invoke) -> None:
    result = invoke(["schemas", "--help"])
    assert result.exit_code == 0
    assert "Examples:" in result.stdout and "--registry" in result.stdout
    for name in SCHEMAS:
        assert f"  {name} " in result.stdout


@pytest.mark.parametrize("name", SCHEMAS)
def test_each_schemas_command_has_help(invoke: Invoke, name: str) -> None:
    assert invoke(["schemas", name, "--help"]).exit_code == 0


def test_registry_help(invoke: Invoke) -> None:
    result = invoke(["registry", "--help"])
    assert result.exit_code == 0
    assert "--bootstrap-server, --bootstrap-servers" in result.stdout
    assert "--listener" in result.stdout


def test_registry_needs_bootstrap_server(invoke: Invoke) -> None:
    result = invoke(["registry"])
    assert result.exit_code == 2
    assert "--bootstrap-server " in result.stderr


def test_unreachable_registry_is_one_error_line(invoke: Invoke) -> None:
    result = invoke(["schemas", "--registry", "http://127.0.0.1:9", "list"])
    assert result.exit_code == 1
    assert len(error_lines(result)) == 1
    assert "cannot reach the schema registry" in result.stderr


@pytest.mark.parametrize("command", ["produce", "consume"])
def test_value_format_needs_a_registry(invoke: Invoke, command: str, tmp_path: Path) -> None:
    schema = tmp_path / "s.avsc"
    schema.write_text('"int"')
    extra = ["--schema", str(schema)] if command == "produce" else []
    result = invoke(
        [command, "t", "--value-format", "avro", *extra, "--bootstrap-server", "127.0.0.1:9"],
        input="",
    )
    assert result.exit_code == 2
    assert "needs --registry" in result.stderr


def test_registry_settings_are_not_the_nodes(tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text("registry.listeners=http://localhost:8081\nnum.partitions=3\n")
    overrides = ("registry.schema.compatibility.level=full",)
    config = build_config(
        properties_file=properties, overrides=overrides, data_dir=None, listener=None
    )
    assert config["num.partitions"] == 3
    assert registry_section(properties_file=properties, overrides=overrides) == {
        "listeners": "http://localhost:8081",
        "schema.compatibility.level": "full",
    }
