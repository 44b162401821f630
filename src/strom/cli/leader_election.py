"""``strom leader-election``: preferred or unclean leader elections, as
``kafka-leader-election.sh`` runs them (ElectLeaders).

Each partition's outcome is one line, as Kafka's tool prints them; the command exits 1 when any
partition could not be elected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from confluent_kafka import ElectionType, KafkaException, TopicPartition

from strom.cli.client_common import (
    REQUEST_TIMEOUT_S,
    ClientCommand,
    CliError,
    client_options,
    connect_admin,
    failure,
    handle_errors,
    kafka_error_message,
)

__all__ = ["leader_election"]

_ELECTION_TYPES = {"preferred": ElectionType.PREFERRED, "unclean": ElectionType.UNCLEAN}


@click.command("leader-election", cls=ClientCommand)
@click.option(
    "--election-type",
    type=click.Choice(sorted(_ELECTION_TYPES), case_sensitive=False),
    required=True,
    help="preferred: give partitions back to their first replica when it is in sync; "
    "unclean: give leaderless partitions to any live replica (may lose committed records).",
)
@click.option("--topic", metavar="TOPIC", help="Elect the partitions of this topic.")
@click.option(
    "--partition",
    type=click.IntRange(min=0),
    metavar="N",
    help="Only this partition of --topic.",
)
@click.option("--all-topic-partitions", is_flag=True, help="Elect every partition of every topic.")
@client_options
@handle_errors
def leader_election(
    *,
    election_type: str,
    topic: str | None,
    partition: int | None,
    all_topic_partitions: bool,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Run a leader election for some partitions (ElectLeaders), as kafka-leader-election.sh.

    \b
    Examples:
      strom leader-election --election-type preferred --all-topic-partitions
      strom leader-election --election-type preferred --topic orders
      strom leader-election --election-type unclean --topic orders --partition 2
    """
    if all_topic_partitions == (topic is not None):
        raise click.UsageError("give either --topic or --all-topic-partitions")
    if partition is not None and topic is None:
        raise click.UsageError("--partition needs --topic")
    admin, metadata = connect_admin(
        bootstrap_server=bootstrap_server, command_config=command_config
    )
    partitions: list[TopicPartition] | None = None
    if topic is not None:
        known = metadata.topics.get(topic)
        if known is None:
            raise CliError(f"topic {topic!r} does not exist")
        ids = sorted(known.partitions) if partition is None else [partition]
        partitions = [TopicPartition(topic, p) for p in ids]
    kind = _ELECTION_TYPES[election_type.lower()]
    try:
        # confluent-kafka 2.16 refuses any keyword argument here (SystemError): the defaults go.
        results: dict[Any, Any] = admin.elect_leaders(kind, partitions).result(REQUEST_TIMEOUT_S)
    except KafkaException as exc:
        raise failure("cannot run the leader election", exc) from None
    failed = _report(kind.name, results)
    if failed:
        raise CliError(f"{failed} replica(s) could not be elected")


def _report(kind: str, results: dict[Any, Any]) -> int:
    """Kafka's lines: the partitions elected, those already led by a valid replica, and one
    line per failure; the number of failures. ``results`` maps each partition to None or its
    ``KafkaError``."""
    elected, already, failures = [], [], []
    for tp in sorted(results, key=lambda p: (p.topic, p.partition)):
        error = results[tp]
        name = f"{tp.topic}-{tp.partition}"
        if error is None:
            elected.append(name)
        elif error.name() == "ELECTION_NOT_NEEDED":
            already.append(name)
        else:
            failures.append(f"{name}: {kafka_error_message(error)}")
    if elected:
        click.echo(
            f"Successfully completed leader election ({kind}) for partitions {', '.join(elected)}"
        )
    if already:
        click.echo(f"Valid replica already elected for partitions {', '.join(already)}")
    for line in failures:
        click.echo(f"Error completing leader election ({kind}) for partition: {line}", err=True)
    if not results:
        click.echo("No partition needed an election")
    return len(failures)
