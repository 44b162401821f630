"""``strom partitions reassign``: move partition replicas between brokers, as
``kafka-reassign-partitions.sh`` does (AlterPartitionReassignments, ListPartitionReassignments).

Exactly one action: ``--generate`` proposes a placement of some topics over a broker list,
``--execute`` starts the moves of a reassignment file (after printing the current assignment
to keep for a rollback; ``--throttle`` slows the copying, :mod:`strom.cli.throttles`),
``--verify`` tells which moves are done (and, all done, removes the throttles), ``--list``
shows the moves going on, ``--cancel`` stops the moves of a file. The files are Kafka's JSON.
"""

from __future__ import annotations

from pathlib import Path

import click

from strom.cli.client_common import CliError, bootstrap_server_option, handle_errors
from strom.cli.quorum_client import connect
from strom.cli.reassignments import (
    Assignment,
    alter,
    current_assignment,
    list_ongoing,
    parse_broker_list,
    propose,
    read_reassignment,
    read_topics_to_move,
    reassignment_json,
)
from strom.cli.throttles import clear_throttles, set_throttles
from strom.client.blocking import BrokerConnection
from strom.common import TopicPartition

__all__ = ["partitions"]

_ACTIONS = ("generate", "execute", "verify", "list", "cancel")


@click.group("partitions")
def partitions() -> None:
    """Move partition replicas between brokers."""


@partitions.command("reassign")
@click.option("--generate", is_flag=True, help="Propose a placement of --topics-to-move-json-file.")
@click.option("--execute", is_flag=True, help="Start the moves of --reassignment-json-file.")
@click.option("--verify", is_flag=True, help="Say which moves of the file are done.")
@click.option("--list", "list_", is_flag=True, help="Show the moves going on.")
@click.option("--cancel", is_flag=True, help="Stop the moves of --reassignment-json-file.")
@click.option(
    "--topics-to-move-json-file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help='{"version":1,"topics":[{"topic":"orders"}]}',
)
@click.option(
    "--broker-list", metavar="ID,ID,...", help="With --generate: the brokers to place over."
)
@click.option(
    "--reassignment-json-file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help='{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2,3]}]}',
)
@click.option(
    "--throttle",
    type=click.IntRange(min=1),
    default=None,
    metavar="BYTES/S",
    help="With --execute: copy the moving replicas at most this fast (Kafka's replication "
    "throttles); --verify removes the throttle once every move is done.",
)
@click.option(
    "--preserve-throttles",
    is_flag=True,
    help="With --verify: leave the throttles in place.",
)
@bootstrap_server_option()
@handle_errors
def reassign(
    *,
    generate: bool,
    execute: bool,
    verify: bool,
    list_: bool,
    cancel: bool,
    topics_to_move_json_file: Path | None,
    broker_list: str | None,
    reassignment_json_file: Path | None,
    throttle: int | None,
    preserve_throttles: bool,
    bootstrap_server: str,
) -> None:
    """Move partition replicas between brokers, as kafka-reassign-partitions.sh.

    \b
    Examples:
      strom partitions reassign --generate --topics-to-move-json-file topics.json \\
          --broker-list 1,2,3
      strom partitions reassign --execute --reassignment-json-file plan.json \\
          --throttle 10000000
      strom partitions reassign --verify --reassignment-json-file plan.json
      strom partitions reassign --list
    """
    chosen = [
        name
        for name, on in zip(_ACTIONS, (generate, execute, verify, list_, cancel), strict=True)
        if on
    ]
    if len(chosen) != 1:
        raise click.UsageError(
            "give exactly one of --generate, --execute, --verify, --list, --cancel"
        )
    action = chosen[0]
    with connect(bootstrap_server) as connection:
        if action == "generate":
            if topics_to_move_json_file is None or broker_list is None:
                raise click.UsageError(
                    "--generate needs --topics-to-move-json-file and --broker-list"
                )
            topics = read_topics_to_move(topics_to_move_json_file)
            current, brokers = current_assignment(connection, topics)
            proposed = propose(current, brokers, parse_broker_list(broker_list))
            click.echo("Current partition replica assignment")
            click.echo(reassignment_json(current))
            click.echo("")
            click.echo("Proposed partition reassignment configuration")
            click.echo(reassignment_json(proposed))
            return
        if action == "list":
            ongoing = list_ongoing(connection)
            if not ongoing:
                click.echo("No partition reassignments found.")
                return
            click.echo("Current partition reassignments:")
            for tp, move in ongoing.items():
                click.echo(
                    f"{tp.topic}-{tp.partition}: replicas: {_ids(move.replicas)}. "
                    f"adding: {_ids(move.adding)}. removing: {_ids(move.removing)}."
                )
            return
        if reassignment_json_file is None:
            raise click.UsageError(f"--{action} needs --reassignment-json-file")
        plan = read_reassignment(reassignment_json_file)
        if action == "execute":
            current, _ = current_assignment(connection, sorted({tp.topic for tp in plan}))
            missing = [tp for tp in plan if tp not in current]
            if missing:
                raise CliError(
                    f"partition {missing[0].topic}-{missing[0].partition} does not exist"
                )
            click.echo("Current partition replica assignment")
            click.echo("")
            click.echo(reassignment_json({tp: current[tp] for tp in plan}))
            click.echo("")
            click.echo("Save this to use as the --reassignment-json-file option during rollback")
            if throttle is not None:
                for line in set_throttles(connection, current, plan, throttle):
                    click.echo(line)
            _report(alter(connection, plan), "started partition reassignments")
        elif action == "cancel":
            _report(alter(connection, dict.fromkeys(plan)), "cancelled partition reassignments")
        else:
            _verify(connection, plan, clear=not preserve_throttles)


def _verify(connection: BrokerConnection, plan: Assignment, *, clear: bool) -> None:
    ongoing = list_ongoing(connection)
    current, brokers = current_assignment(connection, sorted({tp.topic for tp in plan}))
    click.echo("Status of partition reassignment:")
    unfinished = 0
    for tp, replicas in plan.items():
        name = f"{tp.topic}-{tp.partition}"
        if tp in ongoing:
            unfinished += 1
            click.echo(f"Reassignment of partition {name} is still in progress.")
        elif current.get(tp) == replicas:
            click.echo(f"Reassignment of partition {name} is completed.")
        else:
            unfinished += 1
            click.echo(
                f"There is no active reassignment of partition {name}, but its replicas are "
                f"{_ids(current.get(tp, ()))} instead of {_ids(replicas)}."
            )
    if unfinished:
        raise CliError(f"{unfinished} partition reassignment(s) are not complete")
    if clear:
        for line in clear_throttles(connection, {tp.topic for tp in plan}, brokers):
            click.echo(line)


def _report(outcome: dict[TopicPartition, str | None], verb: str) -> None:
    done = [f"{tp.topic}-{tp.partition}" for tp, error in outcome.items() if error is None]
    failed = [(tp, error) for tp, error in outcome.items() if error is not None]
    if done:
        click.echo(f"Successfully {verb} for {','.join(done)}")
    for tp, error in failed:
        click.echo(f"Error for {tp.topic}-{tp.partition}: {error}", err=True)
    if failed:
        raise CliError(f"{len(failed)} partition(s) failed")


def _ids(brokers: tuple[int, ...]) -> str:
    return ",".join(str(b) for b in brokers)
