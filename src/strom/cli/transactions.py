"""``strom transactions``: list, describe, describe-producers, abort and find-hanging, as
``kafka-transactions.sh`` (KIP-664), with its verbs, options and tables.

No client library exposes these APIs, so this speaks them with strom's own blocking client
(``strom.cli.txn_requests``): ListTransactions on every broker, DescribeTransactions on the
id's coordinator, DescribeProducers on a partition's leader, and the ABORT marker through
WriteTxnMarkers on the leader, as Kafka's ``Admin.abortTransaction`` does. ``--bootstrap-server``
and ``--command-config`` go before the verb, as in Kafka's tool, or after it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from strom.cli.client_common import (
    ClientCommand,
    CliError,
    ToolGroup,
    client_options,
    handle_errors,
)

if TYPE_CHECKING:
    from strom.cli.txn_requests import Cluster

__all__ = ["transactions"]


@click.group("transactions", cls=ToolGroup)
def transactions() -> None:
    """List, describe and abort transactions (as kafka-transactions.sh)."""


def _cluster(bootstrap_server: str | None, command_config: Path | None) -> Cluster:
    """The cluster at the connection options."""
    from strom.cli.txn_requests import Cluster  # noqa: PLC0415

    return Cluster.build(bootstrap_server, command_config)


@transactions.command("list", cls=ClientCommand)
@client_options
@handle_errors
def _list(
    *,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """List the transactions of every coordinator (ListTransactions).

    \b
    Example:
      strom transactions --bootstrap-server localhost:9092 list
    """
    cluster = _cluster(bootstrap_server, command_config)
    rows = [
        [txn.transactional_id, str(broker), str(txn.producer_id), txn.transaction_state]
        for broker, listing in cluster.list_transactions()
        for txn in listing
    ]
    _table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], rows)


@transactions.command("describe", cls=ClientCommand)
@click.option("--transactional-id", required=True, metavar="ID", help="The transactional id.")
@client_options
@handle_errors
def _describe(
    *,
    transactional_id: str,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Describe the state of a transactional id (DescribeTransactions on its coordinator).

    \b
    Example:
      strom transactions --bootstrap-server localhost:9092 describe --transactional-id orders-app
    """
    cluster = _cluster(bootstrap_server, command_config)
    coordinator, state = cluster.describe_transaction(transactional_id)
    started = int(state.transaction_start_time)
    now = int(time.time() * 1000)
    partitions = ",".join(
        f"{topic.topic}-{partition}" for topic in state.topics for partition in topic.partitions
    )
    _table(
        [
            "CoordinatorId",
            "TransactionalId",
            "ProducerId",
            "ProducerEpoch",
            "TransactionState",
            "TransactionTimeoutMs",
            "CurrentTransactionStartTimeMs",
            "TransactionDurationMs",
            "TopicPartitions",
        ],
        [
            [
                str(coordinator),
                transactional_id,
                str(state.producer_id),
                str(state.producer_epoch),
                state.transaction_state,
                str(int(state.transaction_timeout.total_seconds() * 1000)),
                str(started) if started >= 0 else "None",
                str(now - started) if started >= 0 else "None",
                partitions,
            ]
        ],
    )


@transactions.command("describe-producers", cls=ClientCommand)
@click.option("--topic", required=True, metavar="TOPIC", help="Topic name.")
@click.option("--partition", required=True, type=click.IntRange(min=0), help="Partition number.")
@click.option("--broker-id", type=int, default=None, help="Ask this broker (default: the leader).")
@client_options
@handle_errors
def _describe_producers(
    *,
    topic: str,
    partition: int,
    broker_id: int | None,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Describe the active producers of a partition (DescribeProducers).

    \b
    Example:
      strom transactions --bootstrap-server localhost:9092 describe-producers \\
        --topic orders --partition 0
    """
    cluster = _cluster(bootstrap_server, command_config)
    producers = cluster.describe_producers(topic, partition, broker_id=broker_id)
    _table(
        [
            "ProducerId",
            "ProducerEpoch",
            "LatestCoordinatorEpoch",
            "LastSequence",
            "LastTimestamp",
            "CurrentTransactionStartOffset",
        ],
        [
            [
                str(p.producer_id),
                str(p.producer_epoch),
                str(p.coordinator_epoch),
                str(p.last_sequence),
                str(p.last_timestamp),
                str(p.current_txn_start_offset) if p.current_txn_start_offset >= 0 else "None",
            ]
            for p in producers
        ],
    )


@transactions.command("abort", cls=ClientCommand)
@click.option("--topic", required=True, metavar="TOPIC", help="Topic name.")
@click.option("--partition", required=True, type=click.IntRange(min=0), help="Partition number.")
@click.option("--start-offset", type=int, default=None, help="Start offset of the transaction.")
@click.option("--producer-id", type=int, default=None, help="Producer id (without --start-offset).")
@click.option(
    "--producer-epoch", type=int, default=None, help="Producer epoch (with --producer-id)."
)
@click.option(
    "--coordinator-epoch", type=int, default=None, help="Coordinator epoch (with --producer-id)."
)
@client_options
@handle_errors
def _abort(
    *,
    topic: str,
    partition: int,
    start_offset: int | None,
    producer_id: int | None,
    producer_epoch: int | None,
    coordinator_epoch: int | None,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Abort a hanging transaction in a partition: write its ABORT marker (WriteTxnMarkers; the
    principal needs ClusterAction on the cluster).

    \b
    Examples:
      strom transactions --bootstrap-server localhost:9092 abort --topic orders --partition 0 \\
        --start-offset 42
      strom transactions abort --topic orders --partition 0 --producer-id 1000 \\
        --producer-epoch 3 --coordinator-epoch 0
    """
    cluster = _cluster(bootstrap_server, command_config)
    if start_offset is None and producer_id is None:
        raise CliError(
            "The transaction to abort must be identified either with --start-offset or with "
            "--producer-id, --producer-epoch, and --coordinator-epoch"
        )
    if start_offset is not None:
        found = [
            p
            for p in cluster.describe_producers(topic, partition)
            if p.current_txn_start_offset == start_offset
        ]
        if not found:
            raise CliError(
                f"Could not find any open transactions starting at offset {start_offset} on "
                f"partition {topic}-{partition}"
            )
        producer = found[0]
        producer_id, producer_epoch = producer.producer_id, producer.producer_epoch
        coordinator_epoch = producer.coordinator_epoch
    elif producer_epoch is None:
        raise CliError("Missing required argument --producer-epoch")
    elif coordinator_epoch is None:
        raise CliError("Missing required argument --coordinator-epoch")
    assert producer_id is not None and producer_epoch is not None
    assert coordinator_epoch is not None
    cluster.abort(
        topic,
        partition,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        coordinator_epoch=max(coordinator_epoch, 0),
    )
    click.echo(
        f"Aborted the transaction of producer {producer_id} (epoch {producer_epoch}) in "
        f"{topic}-{partition}"
    )


@transactions.command("find-hanging", cls=ClientCommand)
@click.option("--broker-id", type=int, default=None, help="The partitions this broker holds.")
@click.option("--topic", default=None, metavar="TOPIC", help="The partitions of this topic.")
@click.option(
    "--partition", type=click.IntRange(min=0), default=None, help="Only this partition (--topic)."
)
@click.option(
    "--max-transaction-timeout",
    type=click.IntRange(min=1),
    default=15,
    show_default=True,
    help="Minutes after which an open transaction may be hanging.",
)
@client_options
@handle_errors
def _find_hanging(
    *,
    broker_id: int | None,
    topic: str | None,
    partition: int | None,
    max_transaction_timeout: int,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Find transactions open in partitions longer than the transaction timeout whose
    coordinator no longer knows them there (DescribeProducers, ListTransactions,
    DescribeTransactions).

    \b
    Examples:
      strom transactions --bootstrap-server localhost:9092 find-hanging --broker-id 1
      strom transactions find-hanging --topic orders --max-transaction-timeout 5
    """
    cluster = _cluster(bootstrap_server, command_config)
    if (broker_id is None) == (topic is None):
        raise CliError("give --broker-id or --topic")
    if partition is not None and topic is None:
        raise CliError("--partition needs --topic")
    now = int(time.time() * 1000)
    rows = []
    for tp, producer in cluster.find_hanging(
        broker_id=broker_id,
        topic=topic,
        partition=partition,
        older_than_ms=now - max_transaction_timeout * 60_000,
    ):
        rows.append(
            [
                tp[0],
                str(tp[1]),
                str(producer.producer_id),
                str(producer.producer_epoch),
                str(producer.coordinator_epoch),
                str(producer.current_txn_start_offset),
                str(producer.last_timestamp),
                str((now - producer.last_timestamp) // 60_000),
            ]
        )
    _table(
        [
            "Topic",
            "Partition",
            "ProducerId",
            "ProducerEpoch",
            "CoordinatorEpoch",
            "StartOffset",
            "LastTimestamp",
            "Duration(min)",
        ],
        rows,
    )


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Kafka's ``prettyPrintTable``: each cell padded to its column's width, then a tab."""
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    for row in [headers, *rows]:
        click.echo(
            "".join(cell.ljust(width) + "\t" for cell, width in zip(row, widths, strict=True))
        )
