"""``strom log-dirs --describe``: each broker's log directories and the size of every partition
in them, as ``kafka-log-dirs.sh`` prints them (two lines, then one line of JSON).

No client library exposes DescribeLogDirs, so this speaks it with strom's own blocking client:
DescribeCluster names the brokers, then each one asked is sent DescribeLogDirs on its
advertised address (with ``--command-config``'s security settings). Kafka's ``error`` field
holds a Java exception class name; strom puts the Kafka error name there (``null`` when none).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from strom.cli.client_common import (
    DEFAULT_BOOTSTRAP_SERVER,
    ClientCommand,
    ClientConfig,
    CliError,
    client_options,
    handle_errors,
)

__all__ = ["log_dirs"]


@click.command("log-dirs", cls=ClientCommand)
@click.option(
    "--describe",
    is_flag=True,
    help="Describe the log directories of the brokers (required, as in Kafka's tool).",
)
@click.option(
    "--broker-list",
    default="",
    metavar="IDS",
    help='Brokers to ask, as "0,1,2" (default: every broker of the cluster).',
)
@click.option(
    "--topic-list",
    default="",
    metavar="TOPICS",
    help='Topics to show, as "topic1,topic2" (default: every topic).',
)
@client_options
@handle_errors
def log_dirs(
    *,
    describe: bool,
    broker_list: str,
    topic_list: str,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Describe the brokers' log directories (DescribeLogDirs), as kafka-log-dirs.sh.

    \b
    Examples:
      strom log-dirs --describe --bootstrap-server localhost:9092
      strom log-dirs --describe --broker-list 1 --topic-list orders,payments
    """
    from strom.cli.quorum_client import connect, describe_cluster  # noqa: PLC0415
    from strom.client.security import librdkafka_security  # noqa: PLC0415

    if not describe:
        raise click.UsageError("--describe is required")
    try:
        wanted_brokers = {int(b) for b in broker_list.split(",") if b}
    except ValueError:
        raise click.BadParameter(
            f"{broker_list!r}: expected broker ids as 0,1,2", param_hint="--broker-list"
        ) from None
    topics = {t for t in topic_list.split(",") if t}
    config = ClientConfig.build(
        bootstrap_server=bootstrap_server or DEFAULT_BOOTSTRAP_SERVER,
        command_config=command_config,
    )
    security = librdkafka_security(config.settings)
    timeout = config.connect_timeout_s + 30
    with connect(config.bootstrap_servers, timeout=timeout, security=security) as connection:
        nodes = {node.node_id: node for node in describe_cluster(connection).nodes}
    missing = wanted_brokers - set(nodes)
    if missing:
        raise CliError(
            "The given brokers do not exist from --broker-list: "
            f"{_ids(missing)}. Current existent brokers: {_ids(set(nodes))}"
        )
    asked = sorted(wanted_brokers or nodes)
    click.echo("Querying brokers for log directories information")
    brokers = []
    for broker_id in asked:
        node = nodes[broker_id]
        with connect(f"{node.host}:{node.port}", timeout=timeout, security=security) as connection:
            brokers.append({"broker": broker_id, "logDirs": _describe(connection, topics)})
    click.echo(f"Received log directory information from brokers {_ids(set(asked))}")
    click.echo(json.dumps({"version": 1, "brokers": brokers}, separators=(",", ":")))


def _describe(connection: Any, topics: set[str]) -> list[dict[str, Any]]:
    """One broker's log directories in Kafka's JSON shape, only ``topics`` when given."""
    from kio.schema.describe_log_dirs.v4.request import DescribeLogDirsRequest  # noqa: PLC0415
    from kio.schema.errors import ErrorCode  # noqa: PLC0415

    try:
        response: Any = connection.request(DescribeLogDirsRequest(topics=None))
    except OSError as error:
        raise CliError(f"DescribeLogDirs failed: {error}") from None
    if response.error_code != ErrorCode.none:
        raise CliError(f"{ErrorCode(response.error_code).name.upper()}: DescribeLogDirs refused")
    return [
        {
            "logDir": result.log_dir,
            "error": None
            if result.error_code == ErrorCode.none
            else ErrorCode(result.error_code).name.upper(),
            "partitions": [
                {
                    "partition": f"{topic.name}-{partition.partition_index}",
                    "size": int(partition.partition_size),
                    "offsetLag": int(partition.offset_lag),
                    "isFuture": bool(partition.is_future_key),
                }
                for topic in result.topics
                if not topics or topic.name in topics
                for partition in topic.partitions
            ],
        }
        for result in response.results
    ]


def _ids(ids: set[int]) -> str:
    return ",".join(str(i) for i in sorted(ids))
