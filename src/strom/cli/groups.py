"""``strom groups list|describe|delete|reset-offsets`` (kafka-consumer-groups.sh).

``describe`` joins three answers: the group's members and their assignments (DescribeGroups),
its committed offsets (OffsetFetch) and the partitions' log end offsets (ListOffsets); the lag
is the log end offset minus the committed offset. ``reset-offsets`` plans new offsets the way
kafka-consumer-groups.sh does (clamped to the partition's log start and log end offsets), prints
them, and commits them only with ``--execute``, and only while the group has no active members.
"""

from __future__ import annotations

import concurrent.futures
import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._group import ConsumerGroupDescription
from confluent_kafka.admin._listoffsets import OffsetSpec
from confluent_kafka.admin._metadata import ClusterMetadata
from rich.table import Table

from strom.cli.client_common import (
    GROUP_DENIED,
    REQUEST_TIMEOUT_S,
    ClientConfig,
    CliError,
    ToolGroup,
    client_options,
    connect_admin,
    exception_message,
    failure,
    group_denied,
    handle_errors,
    output_console,
    topic_partitions,
)

__all__ = ["ResetSpec", "groups", "plan_reset"]

STATE_NAMES: Mapping[ConsumerGroupState, str] = {
    ConsumerGroupState.UNKNOWN: "Unknown",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.EMPTY: "Empty",
}
"""Kafka's names of the group states."""
_LISTABLE_STATES = frozenset(STATE_NAMES) - {ConsumerGroupState.UNKNOWN}
_STATES_BY_NAME = {STATE_NAMES[state].lower(): state for state in _LISTABLE_STATES}
_TYPE_NAMES: Mapping[ConsumerGroupType, str] = {
    ConsumerGroupType.UNKNOWN: "Unknown",
    ConsumerGroupType.CLASSIC: "Classic",
    ConsumerGroupType.CONSUMER: "Consumer",
}
_INACTIVE = frozenset({ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD})
"""The states in which a group's offsets may be reset."""

# OffsetSpec's factories have no annotations; typed names for them keep mypy strict satisfied.
_EARLIEST: Callable[[], OffsetSpec] = OffsetSpec.earliest
_LATEST: Callable[[], OffsetSpec] = OffsetSpec.latest
_FOR_TIMESTAMP: Callable[[int], OffsetSpec] = OffsetSpec.for_timestamp

Partition = tuple[str, int]


def _state_name(state: Any) -> str:
    return STATE_NAMES.get(state, "Unknown")


@click.group("groups", cls=ToolGroup)
def groups() -> None:
    """List, describe and delete consumer groups, and reset their committed offsets
    (like kafka-consumer-groups.sh)."""


def _parse_states(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> set[ConsumerGroupState]:
    states: set[ConsumerGroupState] = set()
    for name in (part.strip() for value in values for part in value.split(",")):
        state = _STATES_BY_NAME.get(name.lower())
        if state is None:
            choices = ", ".join(n for s, n in STATE_NAMES.items() if s in _LISTABLE_STATES)
            raise click.BadParameter(f"unknown state {name!r} (one of: {choices})")
        states.add(state)
    return states


@groups.command("list")
@click.option(
    "--state",
    "states",
    multiple=True,
    metavar="STATE[,STATE...]",
    callback=_parse_states,
    help="Only groups in these states: Stable, Empty, PreparingRebalance, "
    "CompletingRebalance, Dead. Repeatable.",
)
@client_options
@handle_errors
def list_(
    *, states: set[ConsumerGroupState], bootstrap_server: str | None, command_config: Path | None
) -> None:
    """List the consumer groups: id, state and type.

    \b
    Examples:
      strom groups list
      strom groups list --state Stable,Empty
    """
    admin, _ = connect_admin(bootstrap_server=bootstrap_server, command_config=command_config)
    future = admin.list_consumer_groups(states=states, request_timeout=REQUEST_TIMEOUT_S)
    try:
        result = future.result()
    except KafkaException as exc:
        raise failure("cannot list the groups", exc) from None
    for error in result.errors:
        click.echo(f"Error: {exception_message(KafkaException(error))}", err=True)
    table = Table("GROUP", "STATE", "TYPE", box=None, pad_edge=False)
    for listing in sorted(result.valid, key=lambda listing: listing.group_id):
        table.add_row(
            listing.group_id,
            _state_name(listing.state),
            _TYPE_NAMES.get(listing.type, "Unknown"),
        )
    output_console().print(table)
    if result.errors:
        raise CliError("some brokers could not list their groups")


@groups.command("describe")
@click.argument("names", metavar="GROUP...", nargs=-1, required=True)
@client_options
@handle_errors
def describe(
    *, names: tuple[str, ...], bootstrap_server: str | None, command_config: Path | None
) -> None:
    """Describe each GROUP: its state and members (member id, group instance id, client id,
    host, assigned partitions), and per partition the committed offset, the log end offset,
    the lag and the member that owns it.

    \b
    Examples:
      strom groups describe orders-app
      strom groups describe orders-app billing
    """
    admin, _ = connect_admin(bootstrap_server=bootstrap_server, command_config=command_config)
    wanted = list(dict.fromkeys(names))
    futures = admin.describe_consumer_groups(wanted, request_timeout=REQUEST_TIMEOUT_S)
    console = output_console()
    failures: list[str] = []
    shown = 0
    for name in wanted:
        try:
            description: ConsumerGroupDescription = futures[name].result()
        except KafkaException as exc:
            failures.append(_group_failure("describe", name, exc, command_config))
            continue
        if description.state is ConsumerGroupState.DEAD:
            failures.append(f"group {name!r} does not exist")
            continue
        committed = _committed_offsets(admin, name)
        log_end = _list_offsets(admin, _assigned(description) | set(committed), _LATEST())
        if shown:
            click.echo()
        shown += 1
        click.echo(_group_header(description))
        click.echo()
        if description.members:
            console.print(_member_table(description))
        else:
            click.echo(f"Group {name} has no active members.")
        click.echo()
        console.print(_offset_table(description, committed, log_end))
    _report(failures)


def _group_failure(
    operation: str, name: str, exc: KafkaException, command_config: Path | None
) -> str:
    """One line for a group the broker refused: a refusal by the ACLs names the principal and
    the ``strom acls add`` that would allow it."""
    message = exception_message(exc)
    if GROUP_DENIED not in message:
        return f"cannot {operation} group {name!r}: {message}"
    settings = ClientConfig.build(bootstrap_server=None, command_config=command_config).settings
    return group_denied(message, name, operation.capitalize(), settings)


def _report(failures: Sequence[str]) -> None:
    """Every failure as an ``Error:`` line; the last one also sets the exit status."""
    for line in failures[:-1]:
        click.echo(f"Error: {line}", err=True)
    if failures:
        raise CliError(failures[-1])


def _group_header(description: ConsumerGroupDescription) -> str:
    coordinator = description.coordinator
    return "\t".join(
        [
            f"Group: {description.group_id}",
            f"State: {_state_name(description.state)}",
            f"Protocol: {description.partition_assignor or '-'}",
            f"Members: {len(description.members)}",
            f"Coordinator: {'-' if coordinator is None else coordinator.id}",
        ]
    )


def _member_partitions(member: Any) -> list[Partition]:
    assignment = member.assignment
    partitions = [] if assignment is None else assignment.topic_partitions
    return sorted((tp.topic, tp.partition) for tp in partitions)


def _assigned(description: ConsumerGroupDescription) -> set[Partition]:
    return {tp for member in description.members for tp in _member_partitions(member)}


def _member_table(description: ConsumerGroupDescription) -> Table:
    table = Table(
        "MEMBER-ID",
        "GROUP-INSTANCE-ID",
        "CLIENT-ID",
        "HOST",
        "#PARTITIONS",
        "ASSIGNMENT",
        box=None,
        pad_edge=False,
    )
    for member in sorted(description.members, key=lambda m: m.member_id):
        partitions = _member_partitions(member)
        table.add_row(
            member.member_id,
            member.group_instance_id or "-",
            member.client_id,
            member.host,
            str(len(partitions)),
            _format_partitions(partitions) or "-",
        )
    return table


def _format_partitions(partitions: Iterable[Partition]) -> str:
    """``orders:0,1 events:2``: each topic once, with its partition ids."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return " ".join(f"{topic}:{','.join(map(str, ids))}" for topic, ids in by_topic.items())


def _offset_table(
    description: ConsumerGroupDescription,
    committed: Mapping[Partition, int],
    log_end: Mapping[Partition, int],
) -> Table:
    owners = {tp: member for member in description.members for tp in _member_partitions(member)}
    table = Table(
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
        box=None,
        pad_edge=False,
    )
    for tp in sorted(set(owners) | set(committed)):
        current = committed.get(tp)
        end = log_end.get(tp)
        owner = owners.get(tp)
        table.add_row(
            tp[0],
            str(tp[1]),
            "-" if current is None else str(current),
            "-" if end is None else str(end),
            "-" if current is None or end is None else str(max(end - current, 0)),
            "-" if owner is None else owner.member_id,
            "-" if owner is None else owner.host,
            "-" if owner is None else owner.client_id,
        )
    return table


def _committed_offsets(admin: AdminClient, group: str) -> dict[Partition, int]:
    """The group's committed offsets (partitions without one are left out)."""
    request = [ConsumerGroupTopicPartitions(group)]
    future = admin.list_consumer_group_offsets(request, request_timeout=REQUEST_TIMEOUT_S)[group]
    try:
        result = future.result()
    except KafkaException as exc:
        raise failure(f"cannot fetch the offsets of group {group!r}", exc) from None
    return {
        (tp.topic, tp.partition): tp.offset
        for tp in result.topic_partitions or []
        if tp.error is None and tp.offset >= 0
    }


def _list_offsets(
    admin: AdminClient, partitions: Iterable[Partition], spec: OffsetSpec
) -> dict[Partition, int]:
    """An offset of each partition by ``spec`` (-1: none for a timestamp); ``CliError`` on
    the first partition whose offsets cannot be listed."""
    request = {TopicPartition(topic, partition): spec for topic, partition in partitions}
    if not request:
        return {}
    futures: dict[TopicPartition, concurrent.futures.Future[Any]] = admin.list_offsets(
        request, request_timeout=REQUEST_TIMEOUT_S
    )
    offsets: dict[Partition, int] = {}
    for tp, future in futures.items():
        try:
            offsets[(tp.topic, tp.partition)] = int(future.result().offset)
        except KafkaException as exc:
            raise failure(f"cannot list the offsets of {tp.topic}-{tp.partition}", exc) from None
    return offsets


@groups.command("delete")
@click.argument("names", metavar="GROUP...", nargs=-1, required=True)
@client_options
@handle_errors
def delete(
    *, names: tuple[str, ...], bootstrap_server: str | None, command_config: Path | None
) -> None:
    """Delete each GROUP and its committed offsets; a group with active members cannot be
    deleted (GROUP_NOT_EMPTY).

    \b
    Examples:
      strom groups delete orders-app
      strom groups delete orders-app billing
    """
    admin, _ = connect_admin(bootstrap_server=bootstrap_server, command_config=command_config)
    futures = admin.delete_consumer_groups(
        list(dict.fromkeys(names)), request_timeout=REQUEST_TIMEOUT_S
    )
    failures: list[str] = []
    for name, future in futures.items():
        try:
            future.result()
        except KafkaException as exc:
            failures.append(_group_failure("delete", name, exc, command_config))
        else:
            click.echo(f"Deleted group {name}.")
    _report(failures)


def parse_topic_partitions(text: str, metadata: ClusterMetadata) -> list[Partition]:
    """``TOPIC`` (all its partitions) or ``TOPIC:P,P...``, checked against ``metadata``."""
    topic, sep, listed = text.partition(":")
    existing = topic_partitions(metadata, topic)
    if not sep:
        return [(topic, partition) for partition in existing]
    try:
        wanted = [int(part) for part in listed.split(",")]
    except ValueError:
        raise click.BadParameter(
            f"expected TOPIC or TOPIC:P,P..., got {text!r}", param_hint="'--topic'"
        ) from None
    missing = sorted(set(wanted) - set(existing))
    if missing:
        raise CliError(f"topic {topic!r} has no partition {','.join(map(str, missing))}")
    return [(topic, partition) for partition in dict.fromkeys(wanted)]


@dataclass(frozen=True)
class ResetSpec:
    """What ``reset-offsets`` was asked for: one of Kafka's reset scenarios."""

    kind: str
    """``to-earliest``, ``to-latest``, ``to-offset``, ``to-datetime`` or ``shift-by``."""
    amount: int = 0
    """The offset, the timestamp in milliseconds, or the shift."""


def plan_reset(
    spec: ResetSpec,
    partitions: Iterable[Partition],
    *,
    earliest: Mapping[Partition, int],
    latest: Mapping[Partition, int],
    committed: Mapping[Partition, int],
    for_timestamp: Mapping[Partition, int],
) -> dict[Partition, int]:
    """The new offset of each partition, clamped to [log start, log end] as Kafka clamps it."""
    plan: dict[Partition, int] = {}
    for tp in partitions:
        if spec.kind == "to-earliest":
            target = earliest[tp]
        elif spec.kind == "to-latest":
            target = latest[tp]
        elif spec.kind == "to-offset":
            target = spec.amount
        elif spec.kind == "to-datetime":
            found = for_timestamp[tp]
            target = latest[tp] if found < 0 else found
        else:
            if tp not in committed:
                raise CliError(
                    f"cannot shift the offset of {tp[0]}-{tp[1]}: the group has no committed "
                    "offset for it"
                )
            target = committed[tp] + spec.amount
        plan[tp] = min(max(target, earliest[tp]), latest[tp])
    return plan


def _parse_datetime(text: str) -> int:
    """Milliseconds since the epoch of an ISO 8601 date-time (local time without a zone)."""
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(
            f"expected an ISO 8601 date-time like 2024-01-31T12:00:00.000, got {text!r}",
            param_hint="'--to-datetime'",
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return int(moment.timestamp() * 1000)


def _reset_spec(
    *,
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    to_datetime: str | None,
    shift_by: int | None,
) -> ResetSpec:
    options = {
        "to-earliest": 0 if to_earliest else None,
        "to-latest": 0 if to_latest else None,
        "to-offset": to_offset,
        "to-datetime": None if to_datetime is None else _parse_datetime(to_datetime),
        "shift-by": shift_by,
    }
    chosen = [ResetSpec(kind, amount) for kind, amount in options.items() if amount is not None]
    if len(chosen) != 1:
        raise click.UsageError(
            "give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by"
        )
    return chosen[0]


@groups.command("reset-offsets")
@click.option("--group", required=True, metavar="GROUP", help="The group whose offsets to reset.")
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="TOPIC[:P,P...]",
    help="A topic (all its partitions, or those listed). Repeatable.",
)
@click.option(
    "--all-topics", is_flag=True, help="Every partition the group has a committed offset for."
)
@click.option("--to-earliest", is_flag=True, help="Reset to the log start offset.")
@click.option("--to-latest", is_flag=True, help="Reset to the log end offset.")
@click.option("--to-offset", type=int, default=None, metavar="N", help="Reset to offset N.")
@click.option(
    "--to-datetime",
    default=None,
    metavar="ISO",
    help="Reset to the first offset at or after this time, e.g. 2024-01-31T12:00:00.000 "
    "(local time unless it has a zone such as Z or +01:00).",
)
@click.option(
    "--shift-by",
    type=int,
    default=None,
    metavar="N",
    help="Move the committed offset by N (negative: back).",
)
@click.option(
    "--execute/--dry-run",
    default=False,
    help="Commit the new offsets; without it, only print them.  [default: --dry-run]",
)
@client_options
@handle_errors
def reset_offsets(
    *,
    group: str,
    topics: tuple[str, ...],
    all_topics: bool,
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    to_datetime: str | None,
    shift_by: int | None,
    execute: bool,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Reset the committed offsets of GROUP, which must have no active members. Prints the
    new offsets; commits them only with --execute. Offsets are clamped to each partition's
    log start and log end offsets.

    \b
    Examples:
      strom groups reset-offsets --group orders-app --topic orders --to-earliest
      strom groups reset-offsets --group orders-app --topic orders:0,1 --shift-by -10 --execute
      strom groups reset-offsets --group orders-app --all-topics \\
          --to-datetime 2024-01-31T12:00:00 --execute
    """
    spec = _reset_spec(
        to_earliest=to_earliest,
        to_latest=to_latest,
        to_offset=to_offset,
        to_datetime=to_datetime,
        shift_by=shift_by,
    )
    if bool(topics) == all_topics:
        raise click.UsageError("give either --topic (repeatable) or --all-topics")
    admin, metadata = connect_admin(
        bootstrap_server=bootstrap_server, command_config=command_config
    )
    _check_inactive(admin, group)
    committed = _committed_offsets(admin, group)
    if all_topics:
        partitions = sorted(committed)
        if not partitions:
            raise CliError(f"group {group!r} has no committed offsets; name topics with --topic")
    else:
        partitions = sorted(
            {tp for text in topics for tp in parse_topic_partitions(text, metadata)}
        )
    plan = plan_reset(
        spec,
        partitions,
        earliest=_list_offsets(admin, partitions, _EARLIEST()),
        latest=_list_offsets(admin, partitions, _LATEST()),
        committed=committed,
        for_timestamp=_list_offsets(admin, partitions, _FOR_TIMESTAMP(spec.amount))
        if spec.kind == "to-datetime"
        else {},
    )
    if execute:
        _commit(admin, group, plan)
    table = Table("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET", box=None, pad_edge=False)
    for (topic, partition), offset in sorted(plan.items()):
        table.add_row(group, topic, str(partition), str(offset))
    output_console().print(table)
    if not execute:
        click.echo("Dry run: nothing was changed; add --execute to commit these offsets.", err=True)


def _check_inactive(admin: AdminClient, group: str) -> None:
    """``CliError`` unless ``group`` is Empty or does not exist (Dead)."""
    future = admin.describe_consumer_groups([group], request_timeout=REQUEST_TIMEOUT_S)[group]
    try:
        description: ConsumerGroupDescription = future.result()
    except KafkaException as exc:
        raise failure(f"cannot describe group {group!r}", exc) from None
    if description.state not in _INACTIVE or description.members:
        state = _state_name(description.state)
        raise CliError(
            f"cannot reset the offsets of group {group!r} while it has active members "
            f"(state {state}); stop its consumers first"
        )


def _commit(admin: AdminClient, group: str, plan: Mapping[Partition, int]) -> None:
    request = ConsumerGroupTopicPartitions(
        group,
        [TopicPartition(topic, partition, offset) for (topic, partition), offset in plan.items()],
    )
    future = admin.alter_consumer_group_offsets([request], request_timeout=REQUEST_TIMEOUT_S)[group]
    try:
        result = future.result()
    except KafkaException as exc:
        raise failure(f"cannot commit the offsets of group {group!r}", exc) from None
    failed = [tp for tp in result.topic_partitions or [] if tp.error is not None]
    if failed:
        tp = failed[0]
        raise CliError(
            f"cannot commit the offset of {tp.topic}-{tp.partition} for group {group!r}: "
            f"{exception_message(KafkaException(tp.error))}"
        )
