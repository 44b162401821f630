"""``strom topics create|list|describe|alter|delete`` (kafka-topics.sh)."""

from __future__ import annotations

import base64
import concurrent.futures
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.decorators import FC
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigEntry
from confluent_kafka.admin._listoffsets import OffsetSpec
from confluent_kafka.admin._metadata import ClusterMetadata
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewPartitions, NewTopic
from rich.table import Table

from strom.cli.client_common import (
    REQUEST_TIMEOUT_S,
    ClientConfig,
    CliError,
    ToolGroup,
    client_options,
    connect_admin,
    error_code,
    error_of,
    exception_message,
    failure,
    handle_errors,
    output_console,
    parse_assignments,
)
from strom.cli.configs import (
    alter_configs,
    check_conflicts,
    describe_configs,
    display_value,
    is_default,
    parse_key_list,
)
from strom.cli.partition_reports import Report

if TYPE_CHECKING:
    from strom.cli.topic_partitions import PartitionDescription, TopicPartitions

__all__ = [
    "PartitionOffsets",
    "partition_table",
    "topic_header",
    "topic_names",
    "topics",
]


# OffsetSpec's factories have no annotations; typed names for them keep mypy strict satisfied.
_EARLIEST: Callable[[], OffsetSpec] = OffsetSpec.earliest
_LATEST: Callable[[], OffsetSpec] = OffsetSpec.latest

_TIMEOUTS: Mapping[str, float] = {
    "request_timeout": REQUEST_TIMEOUT_S,
    "operation_timeout": REQUEST_TIMEOUT_S,
}


@click.group("topics", cls=ToolGroup)
def topics() -> None:
    """Create, list, describe, alter and delete topics (like kafka-topics.sh)."""


@topics.command("create")
@click.argument("topic")
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Number of partitions.  [default: the broker's num.partitions]",
)
@click.option(
    "--replication-factor",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Copies of each partition.  [default: the broker's default.replication.factor]",
)
@click.option(
    "--config",
    "configs",
    multiple=True,
    metavar="NAME=VALUE",
    help="A topic setting, e.g. retention.ms=86400000. Repeatable.",
)
@click.option("--if-not-exists", is_flag=True, help="Succeed quietly if the topic exists.")
@client_options
@handle_errors
def create(
    *,
    topic: str,
    partitions: int | None,
    replication_factor: int | None,
    configs: tuple[str, ...],
    if_not_exists: bool,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Create TOPIC.

    \b
    Examples:
      strom topics create orders --partitions 3
      strom topics create events --partitions 6 --replication-factor 1 \\
          --config retention.ms=86400000 --config cleanup.policy=compact
      strom topics create orders --if-not-exists
    """
    settings = parse_assignments(configs, option="'--config'")
    admin, _ = connect_admin(bootstrap_server=bootstrap_server, command_config=command_config)
    new_topic = NewTopic(
        topic,
        num_partitions=partitions or -1,
        replication_factor=replication_factor or -1,
        config=settings,
    )
    future = admin.create_topics([new_topic], **_TIMEOUTS)[topic]
    try:
        future.result()
    except KafkaException as exc:
        if if_not_exists and error_code(exc) == KafkaError.TOPIC_ALREADY_EXISTS:
            return
        raise failure(f"cannot create topic {topic!r}", exc) from None
    click.echo(f"Created topic {topic}.")


@topics.command("list")
@click.option("--exclude-internal", is_flag=True, help="Leave out internal topics.")
@client_options
@handle_errors
def list_(
    *,
    exclude_internal: bool,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """List the names of all topics, one per line.

    \b
    Examples:
      strom topics list
      strom topics list --exclude-internal --bootstrap-server broker1:9092
    """
    _, metadata = connect_admin(bootstrap_server=bootstrap_server, command_config=command_config)
    for name in topic_names(metadata, exclude_internal=exclude_internal):
        click.echo(name)


def topic_names(metadata: ClusterMetadata, *, exclude_internal: bool) -> list[str]:
    names = sorted(metadata.topics)
    if exclude_internal:
        from strom.controller.topic_names import INTERNAL_TOPICS  # noqa: PLC0415 - on use only

        names = [name for name in names if name not in INTERNAL_TOPICS]
    return names


@dataclass(frozen=True)
class PartitionOffsets:
    """Earliest and latest offset of a partition, or why they could not be listed."""

    earliest: str
    latest: str


def _report_option(report: Report, help_text: str) -> Callable[[FC], FC]:
    return click.option(
        f"--{report.value}", "report", flag_value=report, type=click.UNPROCESSED, help=help_text
    )


@topics.command("describe")
@click.argument("names", metavar="[TOPIC]...", nargs=-1)
@click.option("--exclude-internal", is_flag=True, help="Without TOPIC: leave out internal topics.")
@_report_option(
    Report.UNDER_REPLICATED, "Only partitions whose ISR is smaller than their replicas."
)
@_report_option(Report.UNDER_MIN_ISR, "Only partitions whose ISR is below min.insync.replicas.")
@_report_option(Report.AT_MIN_ISR, "Only partitions whose ISR is at min.insync.replicas.")
@_report_option(Report.UNAVAILABLE, "Only partitions without a live leader.")
@client_options
@handle_errors
def describe(
    *,
    names: tuple[str, ...],
    exclude_internal: bool,
    report: Report | None,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Describe each TOPIC (all topics without one): topic id, partitions, replication factor,
    settings that differ from the defaults, and per partition its leader, replicas, in-sync
    replicas, replicas on brokers that are down, and earliest and latest offsets. With a
    partition report option, only the partitions it names, in one table.

    \b
    Examples:
      strom topics describe orders
      strom topics describe            # every topic
      strom topics describe --under-replicated-partitions
    """
    config = ClientConfig.build(bootstrap_server=bootstrap_server, command_config=command_config)
    admin, metadata = connect_admin(
        bootstrap_server=bootstrap_server, command_config=command_config
    )
    wanted = list(names) or topic_names(metadata, exclude_internal=exclude_internal)
    if not wanted:
        return
    # Strom's own client (kio): imported on use, so the other commands start faster.
    from strom.cli.quorum_client import connect, describe_cluster  # noqa: PLC0415
    from strom.cli.topic_partitions import describe_topic_partitions  # noqa: PLC0415

    with connect(str(config.settings["bootstrap.servers"])) as connection:
        descriptions = describe_topic_partitions(connection, wanted)
        # Live brokers as Kafka's kafka-topics sees them (DescribeCluster): Metadata lists a
        # broker fenced moments ago a few seconds more (docs/cluster.md).
        live = {node.node_id for node in describe_cluster(connection).nodes if not node.fenced}
    console = output_console()
    if report is not None:
        console.print(_report_table(admin, descriptions, report, live))
        return
    offsets = _list_offsets(admin, descriptions)
    for index, description in enumerate(descriptions):
        if index:
            click.echo()
        click.echo(topic_header(description, _topic_configs(admin, description.name)))
        console.print(partition_table(description, offsets, live))


def _report_table(
    admin: AdminClient,
    descriptions: Sequence[TopicPartitions],
    report: Report,
    live: set[int],
) -> Table:
    """The partitions ``report`` names, of every topic described."""
    table = Table("TOPIC", "PARTITION", *_COLUMNS, box=None, pad_edge=False)
    for description in descriptions:
        min_isr = 1
        if report in (Report.UNDER_MIN_ISR, Report.AT_MIN_ISR):
            configs = {e.name: e.value for e in _topic_configs(admin, description.name)}
            min_isr = int(configs.get("min.insync.replicas") or 1)
        for partition in description.partitions:
            if partition.state.reported(report, live_brokers=live, min_isr=min_isr):
                table.add_row(description.name, str(partition.index), *_cells(partition, live))
    return table


_COLUMNS = ("LEADER", "REPLICAS", "ISR", "ELR", "LAST-KNOWN-ELR", "OFFLINE")
"""Kafka's: ELR holds the eligible leader replicas (KIP-966), LAST-KNOWN-ELR the last leader
of a partition whose ISR emptied."""


def _cells(partition: PartitionDescription, live: set[int]) -> list[str]:
    state = partition.state
    return [
        "none" if state.leader is None else str(state.leader),
        _ids(state.replicas),
        _ids(state.isr),
        _ids(partition.eligible_leaders) or "-",
        _ids(partition.last_known_leader) or "-",
        _ids(state.offline(live)) or "-",
    ]


def _ids(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)


def _topic_configs(admin: AdminClient, topic: str) -> list[ConfigEntry]:
    try:
        return describe_configs(admin, ResourceType.TOPIC, topic)
    except KafkaException as exc:
        raise failure(f"cannot describe the configs of topic {topic!r}", exc) from None


def kafka_topic_id(topic_id: uuid.UUID) -> str:
    """Kafka prints topic ids in URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def topic_header(description: TopicPartitions, configs: Iterable[ConfigEntry]) -> str:
    """kafka-topics.sh's summary line: name, id, partition count, replication factor, and the
    settings whose value is not the default, tab-separated."""
    overrides = ",".join(
        f"{entry.name}={display_value(entry)}" for entry in configs if not is_default(entry)
    )
    return "\t".join(
        [
            f"Topic: {description.name}",
            f"TopicId: {kafka_topic_id(description.topic_id)}",
            f"PartitionCount: {len(description.partitions)}",
            f"ReplicationFactor: {description.replication_factor}",
            f"Configs: {overrides}",
        ]
    )


def partition_table(
    description: TopicPartitions,
    offsets: Mapping[tuple[str, int], PartitionOffsets],
    live: set[int],
) -> Table:
    """One row per partition: leader, replicas, ISR, eligible leaders, offline replicas,
    earliest and latest offset."""
    table = Table("PARTITION", *_COLUMNS, "EARLIEST", "LATEST", box=None, pad_edge=False)
    for partition in description.partitions:
        found = offsets.get((description.name, partition.index), PartitionOffsets("-", "-"))
        table.add_row(str(partition.index), *_cells(partition, live), found.earliest, found.latest)
    return table


def _list_offsets(
    admin: AdminClient, descriptions: Sequence[TopicPartitions]
) -> dict[tuple[str, int], PartitionOffsets]:
    """Earliest and latest offset of every partition, as text: a partition whose offsets
    cannot be listed shows the error's name instead."""
    partitions = [
        (description.name, partition.index)
        for description in descriptions
        for partition in description.partitions
    ]
    if not partitions:
        return {}
    earliest = dict(_offsets(admin, partitions, _EARLIEST()))
    latest = dict(_offsets(admin, partitions, _LATEST()))
    return {
        key: PartitionOffsets(earliest.get(key, "-"), latest.get(key, "-")) for key in partitions
    }


def _offsets(
    admin: AdminClient, partitions: Sequence[tuple[str, int]], spec: OffsetSpec
) -> Iterator[tuple[tuple[str, int], str]]:
    request = {TopicPartition(topic, partition): spec for topic, partition in partitions}
    futures: dict[TopicPartition, concurrent.futures.Future[Any]] = admin.list_offsets(
        request, request_timeout=REQUEST_TIMEOUT_S
    )
    for partition, future in futures.items():
        key = (partition.topic, partition.partition)
        try:
            yield key, str(future.result().offset)
        except KafkaException as exc:
            error = error_of(exc)
            yield key, exception_message(exc) if error is None else error.name()


@topics.command("alter")
@click.argument("topic")
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="The new number of partitions (can only grow).",
)
@click.option(
    "--config",
    "configs",
    multiple=True,
    metavar="NAME=VALUE",
    help="Set a topic setting. Repeatable.",
)
@click.option(
    "--delete-config",
    "delete_configs",
    multiple=True,
    metavar="NAME",
    help="Remove a topic setting (back to the default). Repeatable.",
)
@client_options
@handle_errors
def alter(
    *,
    topic: str,
    partitions: int | None,
    configs: tuple[str, ...],
    delete_configs: tuple[str, ...],
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Add partitions to TOPIC, or change its settings.

    \b
    Examples:
      strom topics alter orders --partitions 6
      strom topics alter orders --config retention.ms=3600000 --delete-config segment.bytes
    """
    to_set = parse_assignments(configs, option="'--config'")
    to_delete = parse_key_list(delete_configs)
    if partitions is None and not to_set and not to_delete:
        raise click.UsageError("nothing to change: give --partitions, --config or --delete-config")
    check_conflicts(to_set, to_delete)
    admin, _ = connect_admin(bootstrap_server=bootstrap_server, command_config=command_config)
    if partitions is not None:
        future = admin.create_partitions([NewPartitions(topic, partitions)], **_TIMEOUTS)[topic]
        try:
            future.result()
        except KafkaException as exc:
            raise failure(f"cannot add partitions to topic {topic!r}", exc) from None
        click.echo(f"Topic {topic} now has {partitions} partitions.")
    if to_set or to_delete:
        try:
            alter_configs(
                admin, ResourceType.TOPIC, topic, set_configs=to_set, delete_configs=to_delete
            )
        except KafkaException as exc:
            raise failure(f"cannot alter the configs of topic {topic!r}", exc) from None
        click.echo(f"Updated the configs of topic {topic}.")


@topics.command("delete")
@click.argument("names", metavar="TOPIC...", nargs=-1, required=True)
@click.option("--if-exists", is_flag=True, help="Succeed quietly for topics that do not exist.")
@client_options
@handle_errors
def delete(
    *,
    names: tuple[str, ...],
    if_exists: bool,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Delete each TOPIC and its data.

    \b
    Examples:
      strom topics delete orders
      strom topics delete orders events --if-exists
    """
    admin, _ = connect_admin(bootstrap_server=bootstrap_server, command_config=command_config)
    futures = admin.delete_topics(list(dict.fromkeys(names)), **_TIMEOUTS)
    failures: list[str] = []
    for name, future in futures.items():
        try:
            future.result()
        except KafkaException as exc:
            if if_exists and error_code(exc) == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue
            failures.append(f"cannot delete topic {name!r}: {exception_message(exc)}")
        else:
            click.echo(f"Deleted topic {name}.")
    for line in failures[:-1]:
        click.echo(f"Error: {line}", err=True)
    if failures:
        raise CliError(failures[-1])
