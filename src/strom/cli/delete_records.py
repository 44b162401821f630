"""``strom delete-records``: move partitions' log start offsets forward (DeleteRecords), as
``kafka-delete-records.sh`` does from its offset JSON file, with Kafka's output lines.

The file: ``{"partitions": [{"topic": "orders", "partition": 0, "offset": 42}], "version": 1}``;
offset -1 means the high watermark (everything committed). Through confluent-kafka's
AdminClient. Unlike Kafka's tool, the command exits 1 when any partition failed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import click

from strom.cli.client_common import (
    REQUEST_TIMEOUT_S,
    ClientCommand,
    CliError,
    client_options,
    connect_admin,
    exception_message,
    handle_errors,
)

__all__ = ["delete_records", "parse_offset_json"]


@click.command("delete-records", cls=ClientCommand)
@click.option(
    "--offset-json-file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    metavar="FILE",
    help='JSON of the offset per partition: {"partitions": [{"topic": "foo", "partition": 1, '
    '"offset": 1}], "version": 1}; offset -1 is the high watermark.',
)
@client_options
@handle_errors
def delete_records(
    *, offset_json_file: Path, bootstrap_server: str | None, command_config: Path | None
) -> None:
    """Delete the records of partitions below the offsets of a JSON file, as
    kafka-delete-records.sh.

    \b
    Examples:
      echo '{"partitions": [{"topic": "orders", "partition": 0, "offset": 2}], "version": 1}' \\
        > delete.json
      strom delete-records --bootstrap-server localhost:9092 --offset-json-file delete.json
    """
    from confluent_kafka import KafkaException, TopicPartition  # noqa: PLC0415

    try:
        text = offset_json_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CliError(f"cannot read {offset_json_file}: {error}") from None
    offsets = parse_offset_json(text)
    admin, _ = connect_admin(bootstrap_server=bootstrap_server, command_config=command_config)
    click.echo("Executing records delete operation")
    futures = admin.delete_records(
        [TopicPartition(topic, partition, offset) for (topic, partition), offset in offsets],
        request_timeout=REQUEST_TIMEOUT_S,
        operation_timeout=REQUEST_TIMEOUT_S,
    )
    click.echo("Records delete operation completed:")
    failed = 0
    for tp, future in futures.items():
        name = f"{tp.topic}-{tp.partition}"
        try:
            low_watermark = future.result().low_watermark
        except KafkaException as exc:
            failed += 1
            click.echo(f"partition: {name}\terror: {exception_message(exc)}")
            continue
        click.echo(f"partition: {name}\tlow_watermark: {low_watermark}")
    if failed:
        raise CliError(f"{failed} partition(s) failed")


def parse_offset_json(text: str) -> list[tuple[tuple[str, int], int]]:
    """``((topic, partition), offset)`` of the offset JSON (Kafka's version 1), or ``CliError``."""
    try:
        document: Any = json.loads(text)
    except ValueError:
        raise CliError("The input string is not a valid JSON") from None
    if not isinstance(document, dict):
        raise CliError('expected a JSON object with "partitions"')
    version = document.get("version", 1)
    if version != 1:
        raise CliError(f"Not supported version field value {version}")
    entries = document.get("partitions")
    if not isinstance(entries, list):
        raise CliError("Missing partitions field")
    offsets: list[tuple[tuple[str, int], int]] = []
    for entry in entries:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        offset = entry.get("offset") if isinstance(entry, dict) else None
        if not (
            isinstance(topic, str)
            and type(partition) is int
            and type(offset) is int
            and partition >= 0
            and offset >= -1
        ):
            raise CliError(
                f"each partition needs a topic (string), a partition (>= 0) and an offset "
                f"(>= -1): {json.dumps(entry)}"
            )
        offsets.append(((topic, partition), offset))
    duplicates = sorted(f"{t}-{p}" for (t, p), n in Counter(k for k, _ in offsets).items() if n > 1)
    if duplicates:
        raise CliError(
            f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}"
        )
    return offsets
