"""``strom produce TOPIC``: one message per line of stdin (kafka-console-producer.sh).

Each failed message is reported as one ``Error: line N: ...`` line on stderr as soon as its
delivery report arrives; the command reads on, flushes at the end, and exits 1 if any failed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import click
from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._resource import ResourceType

from strom.cli.client_common import (
    ClientCommand,
    ClientConfig,
    CliError,
    client_options,
    exception_message,
    handle_errors,
    kafka_error_message,
    parse_assignment,
    parse_assignments,
    property_option,
    wait_for_partitions,
)
from strom.cli.configs import describe_configs
from strom.cli.value_formats import ValueEncoder, registry_options

__all__ = [
    "ACKS",
    "COMPRESSIONS",
    "PRODUCER_DEFAULTS",
    "Line",
    "produce",
    "producer_settings",
    "split_line",
]

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
ACKS = ("0", "1", "-1", "all")

PRODUCER_DEFAULTS: Mapping[str, str] = {
    # Hash keys as the Java client does, so keyed messages land on the same partitions as
    # those of Java producers (librdkafka's own default is CRC32).
    "partitioner": "murmur2_random",
    # Bounds the final flush when a broker goes away mid-run (librdkafka: 5 minutes).
    "message.timeout.ms": "30000",
}

_QUEUE_FULL_WAIT_S = 0.5
_FLUSH_STEP_S = 1.0

Header = tuple[str, str | bytes | None]


@dataclass(frozen=True)
class Line:
    """One line of input as a message."""

    number: int
    key: bytes | None
    value: bytes


def split_line(raw: bytes, number: int, key_separator: bytes | None) -> Line:
    """A line (its end of line already removed) as key and value; ``ValueError`` when keys
    are expected and the line has no separator."""
    if key_separator is None:
        return Line(number, None, raw)
    key, sep, value = raw.partition(key_separator)
    if not sep:
        raise ValueError(f"no key separator {key_separator.decode()!r} found")
    return Line(number, key, value)


def strip_eol(raw: bytes) -> bytes:
    if raw.endswith(b"\n"):
        raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
    return raw


class KeylessRecordCheck:
    """Why the broker refused a keyless message with INVALID_RECORD, when the topic is compacted.

    The broker says why in ProduceResponse's ``error_message`` and ``record_errors`` (KIP-467),
    but librdkafka passes on only the code ("Broker failed to validate record"). The usual
    cause, a message without a key on a compacted topic, is named from the topic's
    ``cleanup.policy``, asked once.
    """

    def __init__(self, config: ClientConfig, topic: str) -> None:
        self._config = config
        self._topic = topic
        self._policy: str | None = None

    def __call__(self, error: KafkaError, message: Message) -> str | None:
        if error.code() != KafkaError.INVALID_RECORD or message.key() is not None:
            return None
        if self._policy is None:
            self._policy = self._cleanup_policy()
        if "compact" not in self._policy.split(","):
            return None
        return (
            f"topic {self._topic!r} is compacted (cleanup.policy={self._policy}) and takes only "
            "messages with a key: give keys with --key-separator"
        )

    def _cleanup_policy(self) -> str:
        try:
            entries = describe_configs(
                self._config.create(AdminClient), ResourceType.TOPIC, self._topic
            )
        except KafkaException:
            return ""
        return {entry.name: entry.value for entry in entries}.get("cleanup.policy") or ""


class Deliveries:
    """Counts messages and reports each failure as one line."""

    def __init__(self, explain: Callable[[KafkaError, Message], str | None] | None = None) -> None:
        self.lines = 0
        self.failed = 0
        self.explain = explain
        """Adds the reason to a failure report where librdkafka gives only an error code."""

    def fail(self, number: int, reason: str) -> None:
        self.failed += 1
        click.echo(f"Error: line {number}: {reason}", err=True)

    def callback(self, number: int) -> _DeliveryCallback:
        return _DeliveryCallback(self, number)


@dataclass(frozen=True)
class _DeliveryCallback:
    deliveries: Deliveries
    number: int

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            return
        reason = kafka_error_message(error)
        explain = self.deliveries.explain
        why = explain(error, message) if explain is not None else None
        self.deliveries.fail(self.number, reason if why is None else f"{reason}: {why}")


@click.command("produce", cls=ClientCommand)
@click.argument("topic")
@click.option(
    "--key-separator",
    metavar="SEP",
    default=None,
    help="Read keys: each line is KEY<SEP>VALUE, split at the first SEP. Without it, "
    "lines are values with no key.",
)
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="KEY=VALUE",
    help="A header to put on every message. Repeatable.",
)
@click.option(
    "--partition",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Send every message to this partition.  [default: by key hash, or spread]",
)
@click.option(
    "--compression",
    type=click.Choice(COMPRESSIONS),
    default=None,
    help="Compression of the batches.  [default: none]",
)
@click.option(
    "--acks",
    type=click.Choice(ACKS),
    default=None,
    help="Acknowledgements the leader waits for: 0 none, 1 its own write, all (-1) every "
    "in-sync replica.  [default: all]",
)
@registry_options(schema=True)
@property_option("producer")
@client_options
@handle_errors
def produce(
    *,
    topic: str,
    key_separator: str | None,
    headers: tuple[str, ...],
    partition: int | None,
    compression: str | None,
    acks: str | None,
    value_format: str,
    schema_file: Path | None,
    strict: bool,
    registry: str | None,
    properties: tuple[str, ...],
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Send each line of stdin to TOPIC as one message.

    \b
    Examples:
      echo 'hello' | strom produce greetings
      printf 'k1:v1\\nk2:v2\\n' | strom produce orders --key-separator :
      strom produce orders --header source=cli --header v=2 --acks 1 < lines.txt
      strom produce orders --partition 0 --compression zstd --property linger.ms=50 < lines.txt
      strom produce orders --value-format avro --schema order.avsc \\
        --registry http://localhost:8081 < orders.jsonl
    """
    if key_separator == "":
        raise click.BadParameter("must not be empty", param_hint="'--key-separator'")
    header_list: list[Header] = [
        parse_assignment(header, option="'--header'") for header in headers
    ]
    overrides = producer_settings(compression=compression, acks=acks)
    overrides.update(parse_assignments(properties, option="'--property'"))
    config = ClientConfig.build(
        bootstrap_server=bootstrap_server,
        command_config=command_config,
        defaults=PRODUCER_DEFAULTS,
        overrides=overrides,
    )
    encoder = ValueEncoder(
        value_format, topic=topic, schema_file=schema_file, registry=registry, strict=strict
    )
    producer = config.create(Producer)
    partitions = wait_for_partitions(producer, config, topic)
    if partition is not None and partitions and partition not in partitions:
        raise CliError(f"topic {topic!r} has no partition {partition} (it has {len(partitions)})")
    stdin = sys.stdin.buffer
    separator = None if key_separator is None else key_separator.encode()
    deliveries = Deliveries(KeylessRecordCheck(config, topic))
    interrupted = False
    try:
        for number, raw in enumerate(stdin, start=1):
            deliveries.lines = number
            try:
                line = split_line(strip_eol(raw), number, separator)
                line = Line(line.number, line.key, encoder.encode(line.value))
            except ValueError as error:
                deliveries.fail(number, str(error))
                continue
            _send(
                producer,
                config,
                topic=topic,
                line=line,
                partition=partition,
                headers=header_list,
                deliveries=deliveries,
            )
    except KeyboardInterrupt:
        interrupted = True
    _flush(producer, config)
    if interrupted:
        sys.exit(130)
    if deliveries.failed:
        raise CliError(f"{deliveries.failed} of {deliveries.lines} messages were not delivered")


def producer_settings(*, compression: str | None, acks: str | None) -> dict[str, str]:
    """The librdkafka settings of the ``--compression`` and ``--acks`` flags that were given."""
    settings: dict[str, str] = {}
    if compression is not None:
        settings["compression.type"] = compression
    if acks is not None:
        settings["acks"] = acks
    return settings


def _send(
    producer: Producer,
    config: ClientConfig,
    *,
    topic: str,
    line: Line,
    partition: int | None,
    headers: Iterable[Header],
    deliveries: Deliveries,
) -> None:
    while True:
        try:
            producer.produce(
                topic,
                value=line.value,
                key=line.key,
                partition=-1 if partition is None else partition,
                headers=list(headers) or None,
                on_delivery=deliveries.callback(line.number),
            )
        except BufferError:  # the local queue is full: let deliveries drain it
            producer.poll(_QUEUE_FULL_WAIT_S)
            config.errors.raise_if_fatal()
            continue
        except KafkaException as exc:  # refused locally, e.g. a message over message.max.bytes
            deliveries.fail(line.number, exception_message(exc))
        break
    producer.poll(0)
    config.errors.raise_if_fatal()


def _flush(producer: Producer, config: ClientConfig) -> None:
    """Wait for every delivery report; message.timeout.ms bounds the wait."""
    while producer.flush(_FLUSH_STEP_S) > 0:
        config.errors.raise_if_fatal()
    config.errors.raise_if_fatal()
