"""``strom get-offsets``: the offsets of partitions at a time, as ``kafka-get-offsets.sh`` prints
them (``topic:partition:offset``, one line each, sorted as Kafka sorts ``topic-partition``).

ListOffsets through confluent-kafka's AdminClient. A partition without an offset for the time
asked (a timestamp after its last record) prints nothing, as in Kafka; a partition whose
lookup fails is named on stderr and skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
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

__all__ = ["get_offsets"]

_NAMED_TIMES = {"latest": -1, "earliest": -2, "max-timestamp": -3}
_TOPIC_PARTITION = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")

PartitionFilter = Callable[[int], bool]


@click.command("get-offsets", cls=ClientCommand)
@click.option(
    "--topic",
    metavar="TOPIC",
    help="The topic, or a regular expression of topics (default: every topic).",
)
@click.option(
    "--partitions",
    metavar="IDS",
    help="Comma-separated partition ids (default: every partition).",
)
@click.option(
    "--topic-partitions",
    metavar="PATTERNS",
    help="Comma-separated TOPIC_REGEX[:N|:N-M|:N-|:-M] patterns (M exclusive); "
    "not with --topic or --partitions.",
)
@click.option(
    "--time",
    "time_spec",
    default="latest",
    show_default=True,
    metavar="TIME",
    help="-1 or latest, -2 or earliest, -3 or max-timestamp, or a timestamp in ms: the first "
    "offset whose record's timestamp is at or after it.",
)
@click.option("--exclude-internal-topics", is_flag=True, help="Leave out internal topics.")
@client_options
@handle_errors
def get_offsets(
    *,
    topic: str | None,
    partitions: str | None,
    topic_partitions: str | None,
    time_spec: str,
    exclude_internal_topics: bool,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Print the offset of each partition at a time (ListOffsets), as kafka-get-offsets.sh.

    \b
    Examples:
      strom get-offsets --bootstrap-server localhost:9092 --topic orders
      strom get-offsets --topic orders --partitions 0,1 --time earliest
      strom get-offsets --topic-partitions 'orders:0-2,audit.*' --time -1
      strom get-offsets --topic orders --time 1700000000000
    """
    from confluent_kafka import KafkaException, TopicPartition  # noqa: PLC0415

    if topic_partitions is not None and (topic is not None or partitions is not None):
        raise click.UsageError("--topic-partitions cannot be used with --topic or --partitions")
    timestamp = parse_time(time_spec)
    rules = (
        parse_topic_partitions(topic_partitions)
        if topic_partitions is not None
        else [(_topic_regex(topic or ".*"), _partition_set(partitions))]
    )
    admin, metadata = connect_admin(
        bootstrap_server=bootstrap_server, command_config=command_config
    )
    internal: frozenset[str] = frozenset()
    if exclude_internal_topics:
        from strom.controller.topic_names import INTERNAL_TOPICS  # noqa: PLC0415

        internal = frozenset(INTERNAL_TOPICS)
    wanted = [
        TopicPartition(name, partition)
        for name, found in metadata.topics.items()
        if name not in internal
        for partition in found.partitions
        if any(regex.fullmatch(name) and accepts(partition) for regex, accepts in rules)
    ]
    if not wanted:
        raise CliError("Could not match any topic-partitions with the specified filters")
    spec = _offset_spec(timestamp)
    futures = admin.list_offsets(dict.fromkeys(wanted, spec), request_timeout=REQUEST_TIMEOUT_S)
    for tp in sorted(futures, key=lambda tp: f"{tp.topic}-{tp.partition}"):
        try:
            offset = futures[tp].result().offset
        except KafkaException as exc:
            click.echo(
                f"Skip getting offsets for topic-partition {tp.topic}-{tp.partition} due to "
                f"error: {exception_message(exc)}",
                err=True,
            )
            continue
        if offset != -1:
            click.echo(f"{tp.topic}:{tp.partition}:{offset}")


def parse_time(text: str) -> int:
    """``--time``: a name or a number; -1, -2, -3 or a timestamp (ms, >= 0)."""
    if text in _NAMED_TIMES:
        return _NAMED_TIMES[text]
    try:
        value = int(text)
    except ValueError:
        value = -100
    if value < -3:
        raise click.BadParameter(
            f"{text!r}: use -1 or latest, -2 or earliest, -3 or max-timestamp, or a timestamp "
            "in ms",
            param_hint="--time",
        )
    return value


@dataclass(frozen=True, slots=True)
class _Partitions:
    """Partition ids in ``[low, high)`` (``high`` None: no bound), or exactly ``ids``."""

    low: int = 0
    high: int | None = None
    ids: frozenset[int] | None = None

    def __call__(self, partition: int) -> bool:
        if self.ids is not None:
            return partition in self.ids
        return partition >= self.low and (self.high is None or partition < self.high)


def parse_topic_partitions(text: str) -> list[tuple[re.Pattern[str], PartitionFilter]]:
    """``--topic-partitions``: Kafka's ``TOPIC_REGEX(:N | :N-M | :N- | :-M)?`` rules."""
    rules: list[tuple[re.Pattern[str], PartitionFilter]] = []
    for spec in text.split(","):
        match = _TOPIC_PARTITION.fullmatch(spec)
        if match is None or not spec:
            raise click.BadParameter(f"invalid pattern {spec!r}", param_hint="--topic-partitions")
        topic, single, low, high = match.groups()
        if single:
            partitions = _Partitions(ids=frozenset({int(single)}))
        else:
            partitions = _Partitions(int(low or 0), int(high) if high else None)
        rules.append((_topic_regex(topic or ".*"), partitions))
    return rules


def _offset_spec(timestamp: int) -> Any:
    """confluent-kafka's ``OffsetSpec`` for a ``--time`` value."""
    from confluent_kafka.admin._listoffsets import OffsetSpec  # noqa: PLC0415

    named: dict[int, Callable[[], Any]] = {
        -1: OffsetSpec.latest,
        -2: OffsetSpec.earliest,
        -3: OffsetSpec.max_timestamp,
    }
    return named[timestamp]() if timestamp in named else OffsetSpec.for_timestamp(timestamp)


def _topic_regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as error:
        raise click.BadParameter(f"{text!r} is not a regular expression: {error}") from None


def _partition_set(text: str | None) -> PartitionFilter:
    if not text:
        return _Partitions()
    try:
        ids = frozenset(int(part) for part in text.split(","))
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: expected comma-separated partition ids", param_hint="--partitions"
        ) from None
    return _Partitions(ids=ids)
