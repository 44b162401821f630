"""``strom configs describe|alter``: the settings of a topic, a broker or a group, and client
quotas of users and client ids (kafka-configs.sh; the quotas are :mod:`strom.cli.quotas`).

``describe`` lists every setting with its value and where the value comes from; ``alter`` sets
and deletes settings with IncrementalAlterConfigs, so the settings it does not name keep their
values (the legacy AlterConfigs would reset them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from confluent_kafka.admin._resource import ResourceType
from rich.table import Table

from strom.cli.client_common import (
    REQUEST_TIMEOUT_S,
    CliError,
    ToolGroup,
    client_options,
    connect_admin,
    failure,
    handle_errors,
    output_console,
)
from strom.cli.quotas import (
    alter_label,
    alter_quotas,
    describe_quotas,
    quota_entity_of,
    quota_options,
)

__all__ = [
    "alter_configs",
    "check_conflicts",
    "configs",
    "describe_configs",
    "display_value",
    "is_default",
    "parse_config_list",
    "parse_key_list",
    "source_name",
]

ENTITY_TYPES: Mapping[str, ResourceType] = {
    "topics": ResourceType.TOPIC,
    "brokers": ResourceType.BROKER,
    "groups": ResourceType.GROUP,
}

_SOURCE_NAMES: Mapping[ConfigSource, str] = {
    ConfigSource.DEFAULT_CONFIG: "default",
    ConfigSource.DYNAMIC_TOPIC_CONFIG: "topic",
    ConfigSource.STATIC_BROKER_CONFIG: "static",
    ConfigSource.DYNAMIC_BROKER_CONFIG: "dynamic-broker",
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG: "dynamic-default-broker",
    ConfigSource.GROUP_CONFIG: "group",
    ConfigSource.UNKNOWN_CONFIG: "unknown",
}

_DYNAMIC_SOURCES = frozenset(
    {
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        ConfigSource.GROUP_CONFIG,
    }
)


def _source(entry: ConfigEntry) -> ConfigSource:
    source: Any = entry.source
    if isinstance(source, ConfigSource):
        return source
    try:
        return ConfigSource(int(source))
    except (TypeError, ValueError):
        return ConfigSource.UNKNOWN_CONFIG


def source_name(entry: ConfigEntry) -> str:
    """Where a value comes from, in short: default, topic, static, dynamic-broker, ..."""
    return _SOURCE_NAMES.get(_source(entry), "unknown")


def is_default(entry: ConfigEntry) -> bool:
    return _source(entry) is ConfigSource.DEFAULT_CONFIG


def is_dynamic(entry: ConfigEntry) -> bool:
    return _source(entry) in _DYNAMIC_SOURCES


def display_value(entry: ConfigEntry) -> str:
    """The value as kafka-configs.sh shows it: ``null`` for none, hidden when sensitive."""
    if entry.is_sensitive:
        return "(sensitive)"
    return "null" if entry.value is None else str(entry.value)


def describe_configs(
    admin: AdminClient, resource_type: ResourceType, name: str
) -> list[ConfigEntry]:
    """Every setting of one resource, sorted by name (raises KafkaException)."""
    resource = ConfigResource(resource_type, name)
    futures = admin.describe_configs([resource], request_timeout=REQUEST_TIMEOUT_S)
    entries: dict[str, ConfigEntry] = futures[resource].result()
    return sorted(entries.values(), key=lambda entry: entry.name)


def alter_configs(
    admin: AdminClient,
    resource_type: ResourceType,
    name: str,
    *,
    set_configs: Mapping[str, str],
    delete_configs: Iterable[str],
) -> None:
    """Set and delete settings of one resource incrementally (raises KafkaException)."""
    changes = [
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        for key, value in set_configs.items()
    ]
    changes += [
        ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE)
        for key in delete_configs
    ]
    resource = ConfigResource(resource_type, name, incremental_configs=changes)
    futures = admin.incremental_alter_configs([resource], request_timeout=REQUEST_TIMEOUT_S)
    futures[resource].result()


def parse_config_list(text: str, *, option: str) -> dict[str, str]:
    """Parse kafka-configs.sh's ``k1=v1,k2=[a,b]``: commas inside square brackets belong to
    the value, and the brackets are dropped (``k2`` is set to ``a,b``)."""
    result: dict[str, str] = {}
    for item in _split_top_level(text, option=option):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise click.BadParameter(
                f"expected NAME=VALUE[,NAME=VALUE...], got {text!r}", param_hint=option
            )
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        result[key] = value
    return result


def _split_top_level(text: str, *, option: str) -> list[str]:
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise click.BadParameter(f"unbalanced ']' in {text!r}", param_hint=option)
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise click.BadParameter(f"unbalanced '[' in {text!r}", param_hint=option)
    items.append("".join(current))
    return [item for item in items if item.strip()]


def parse_key_list(values: Sequence[str]) -> list[str]:
    """``--delete-config a,b --delete-config c`` -> ``[a, b, c]``."""
    return [key.strip() for value in values for key in value.split(",") if key.strip()]


def _resource_name(entity_type: str, entity_name: str) -> str:
    if entity_type == "brokers" and not entity_name.strip().isdigit():
        raise click.BadParameter(
            f"a broker is named by its id (an integer), got {entity_name!r}",
            param_hint="'--entity-name'",
        )
    return entity_name.strip()


def _check_broker(entity_type: str, name: str, metadata: Any) -> None:
    """A broker id the cluster does not know is refused at once (not after a client timeout)."""
    if entity_type == "brokers" and int(name) not in metadata.brokers:
        known = ", ".join(str(b) for b in sorted(metadata.brokers)) or "none"
        raise CliError(f"there is no broker {name} (brokers: {known})")


def _entity_options(func: Any) -> Any:
    func = quota_options(func)
    func = click.option(
        "--entity-name",
        metavar="NAME",
        help="The topic name, the broker id, the group id, the user or the client id.",
    )(func)
    return click.option(
        "--entity-type",
        type=click.Choice(sorted([*ENTITY_TYPES, "users", "clients"])),
        help="What to configure.",
    )(func)


def _quota_entity(options: Mapping[str, Any]) -> Any:
    """The quota entity the options name, or None after checking they name a topic or broker."""
    entity = quota_entity_of(**options)
    if entity is None and options["entity_type"] is None:
        raise click.UsageError("Missing option '--entity-type' (or --user, --client).")
    if entity is None and options["entity_name"] is None:
        raise click.UsageError("Missing option '--entity-name'.")
    return entity


@click.group("configs", cls=ToolGroup)
def configs() -> None:
    """Describe and change the settings of topics, brokers and groups (like kafka-configs.sh)."""


@configs.command("describe")
@_entity_options
@click.option(
    "--dynamic-only",
    is_flag=True,
    help="Only settings changed at run time (kafka-configs.sh --describe without --all).",
)
@click.option("--all", "all_", is_flag=True, hidden=True, help="Accepted for kafka-configs.sh.")
@client_options
@handle_errors
def describe(
    *,
    entity_type: str | None,
    entity_name: str | None,
    dynamic_only: bool,
    all_: bool,
    bootstrap_server: str | None,
    command_config: Path | None,
    **quota: Any,
) -> None:
    """List every setting of a topic, broker or group: name, value and source.

    The source says where the value comes from: default (Kafka's default, or for a group the
    broker's), static (the server's properties file or --override), topic (set on the topic),
    dynamic-broker, group (set on the group).

    \b
    Examples:
      strom configs describe --entity-type topics --entity-name orders
      strom configs describe --entity-type brokers --entity-name 1 --dynamic-only
      strom configs describe --entity-type groups --entity-name orders-app
      strom configs describe --entity-type users --entity-name alice
      strom configs describe --user alice --client-defaults
    """
    entity = _quota_entity(dict(quota, entity_type=entity_type, entity_name=entity_name))
    if entity is not None:
        for line in describe_quotas(
            entity, bootstrap_server=bootstrap_server, command_config=command_config
        ):
            click.echo(line)
        return
    assert entity_type is not None and entity_name is not None  # _quota_entity checked
    name = _resource_name(entity_type, entity_name)
    admin, metadata = connect_admin(
        bootstrap_server=bootstrap_server, command_config=command_config
    )
    _check_broker(entity_type, name, metadata)
    singular = entity_type.removesuffix("s")
    try:
        entries = describe_configs(admin, ENTITY_TYPES[entity_type], name)
    except KafkaException as exc:
        raise failure(f"cannot describe the configs of {singular} {name!r}", exc) from None
    if dynamic_only:
        entries = [entry for entry in entries if is_dynamic(entry)]
    table = Table("NAME", "VALUE", "SOURCE", box=None, pad_edge=False)
    for entry in entries:
        table.add_row(entry.name, display_value(entry), source_name(entry))
    output_console().print(table)


@configs.command("alter")
@_entity_options
@click.option(
    "--add-config",
    "add_configs",
    multiple=True,
    metavar="K=V[,K=V...]",
    help="Settings to set; a value with commas goes in square brackets: k=[a,b]. Repeatable.",
)
@click.option(
    "--delete-config",
    "delete_configs",
    multiple=True,
    metavar="K[,K...]",
    help="Settings to remove (back to their default). Repeatable.",
)
@client_options
@handle_errors
def alter(
    *,
    entity_type: str | None,
    entity_name: str | None,
    add_configs: tuple[str, ...],
    delete_configs: tuple[str, ...],
    bootstrap_server: str | None,
    command_config: Path | None,
    **quota: Any,
) -> None:
    """Set or remove settings of a topic, broker or group; the others keep their values.

    \b
    Examples:
      strom configs alter --entity-type topics --entity-name orders \\
          --add-config retention.ms=86400000,cleanup.policy=[compact,delete]
      strom configs alter --entity-type topics --entity-name orders --delete-config retention.ms
      strom configs alter --entity-type groups --entity-name orders-app \\
          --add-config consumer.session.timeout.ms=50000
      strom configs alter --entity-type users --entity-name alice \\
          --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
      strom configs alter --entity-type clients --entity-default --add-config request_percentage=50
    """
    entity = _quota_entity(dict(quota, entity_type=entity_type, entity_name=entity_name))
    to_set: dict[str, str] = {}
    for text in add_configs:
        to_set.update(parse_config_list(text, option="'--add-config'"))
    to_delete = parse_key_list(delete_configs)
    if not to_set and not to_delete:
        raise click.UsageError("nothing to change: give --add-config or --delete-config")
    check_conflicts(to_set, to_delete)
    if entity is not None:
        alter_quotas(
            entity,
            set_quotas=to_set,
            delete_quotas=to_delete,
            bootstrap_server=bootstrap_server,
            command_config=command_config,
        )
        click.echo(f"Completed updating config for {alter_label(entity)}.")
        return
    assert entity_type is not None and entity_name is not None  # _quota_entity checked
    name = _resource_name(entity_type, entity_name)
    admin, metadata = connect_admin(
        bootstrap_server=bootstrap_server, command_config=command_config
    )
    _check_broker(entity_type, name, metadata)
    singular = entity_type.removesuffix("s")
    try:
        alter_configs(
            admin, ENTITY_TYPES[entity_type], name, set_configs=to_set, delete_configs=to_delete
        )
    except KafkaException as exc:
        raise failure(f"cannot alter the configs of {singular} {name!r}", exc) from None
    click.echo(f"Completed updating config for {singular} {name}.")


def check_conflicts(to_set: Mapping[str, str], to_delete: Sequence[str]) -> None:
    """No setting may be both set and deleted by one change."""
    both = sorted(set(to_set) & set(to_delete))
    if both:
        raise click.UsageError(f"settings both added and deleted: {', '.join(both)}")
