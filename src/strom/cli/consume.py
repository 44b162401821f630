"""``strom consume TOPIC``: print messages, one per line (kafka-console-consumer.sh).

How it reads:

- ``--group`` without ``--partition``: joins the group (subscribe), starts at the group's
  committed offsets (``--from-beginning`` for a group with none), commits as it goes.
- ``--partition``: reads that partition by manual assignment, from ``--offset``, else the
  group's committed offset when a ``--group`` is given (committing to it, as Kafka's simple
  consumer groups do), else the end (``--from-beginning``: the start).
- Neither: reads every partition by manual assignment, commits nothing. ``--offset N`` then
  applies to each partition (kafka-console-consumer.sh requires ``--partition`` for it).

The output line is Kafka's DefaultMessageFormatter's: timestamp, partition, offset, headers and
key when asked for, then the value, separated by ``--key-separator``.
"""

from __future__ import annotations

import io
import random
import select
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_STORED,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    Message,
    TopicPartition,
)

from strom.cli.client_common import (
    GROUP_DENIED,
    ClientCommand,
    ClientConfig,
    CliError,
    client_options,
    group_denied,
    handle_errors,
    kafka_error_message,
    parse_assignments,
    property_option,
    wait_for_partitions,
)
from strom.cli.value_formats import registry_options, value_decoder

__all__ = [
    "CONSUMER_DEFAULTS",
    "PrintOptions",
    "consume",
    "consumer_settings",
    "format_message",
    "parse_offset",
]

CONSUMER_DEFAULTS: Mapping[str, str] = {
    # kafka-console-consumer.sh reads uncommitted data unless told otherwise.
    "isolation.level": "read_uncommitted",
    "auto.offset.reset": "latest",
}

_POLL_S = 0.5


@dataclass(frozen=True)
class PrintOptions:
    """What to print before each value (``print.*`` of Kafka's DefaultMessageFormatter)."""

    key: bool = False
    headers: bool = False
    timestamp: bool = False
    partition: bool = False
    offset: bool = False
    separator: str = "\t"
    value: Callable[[bytes], str] | None = None
    """Decodes values (``--value-format``); None prints them as text."""


def _text(data: bytes | str | None) -> str:
    if data is None:
        return "null"
    if isinstance(data, str):
        return data
    return data.decode("utf-8", errors="replace")


def _timestamp(message: Message) -> str:
    kind, value = message.timestamp()
    if kind == TIMESTAMP_CREATE_TIME:
        return f"CreateTime:{value}"
    if kind == TIMESTAMP_LOG_APPEND_TIME:
        return f"LogAppendTime:{value}"
    return "NO_TIMESTAMP"


def _headers(message: Message) -> str:
    headers = message.headers()
    if not headers:
        return "NO_HEADERS"
    pairs = headers.items() if isinstance(headers, dict) else headers
    return ",".join(f"{name}:{_text(value)}" for name, value in pairs)


def format_message(message: Message, options: PrintOptions) -> str:
    """One output line (without its end of line); binary data is decoded with replacement."""
    fields: list[str] = []
    if options.timestamp:
        fields.append(_timestamp(message))
    if options.partition:
        fields.append(f"Partition:{message.partition()}")
    if options.offset:
        fields.append(f"Offset:{message.offset()}")
    if options.headers:
        fields.append(_headers(message))
    if options.key:
        fields.append(_text(message.key()))
    value = message.value()
    decode = options.value
    fields.append(_text(value) if decode is None or value is None else decode(value))
    return options.separator.join(fields)


_NAMED_OFFSETS: Mapping[str, int] = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}


def parse_offset(text: str) -> int:
    """``--offset``: a non-negative offset, ``earliest`` or ``latest`` (librdkafka's value)."""
    named = _NAMED_OFFSETS.get(text.strip().lower())
    if named is not None:
        return named
    try:
        offset = int(text)
    except ValueError:
        offset = -1
    if offset < 0:
        raise click.BadParameter(
            f"expected a non-negative number, 'earliest' or 'latest', got {text!r}",
            param_hint="'--offset'",
        )
    return offset


def _offset_option(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    return None if value is None else parse_offset(value)


@dataclass(frozen=True)
class StartPlan:
    """Where reading starts: a subscription, or partitions with their start offsets."""

    subscribe: bool
    partitions: Sequence[int] = ()
    offset: int = OFFSET_END


def plan_start(
    *,
    group: str | None,
    partition: int | None,
    offset: int | None,
    from_beginning: bool,
    partitions: Sequence[int],
) -> StartPlan:
    """Decide between subscribing and assigning, and the start offset of an assignment."""
    if group is not None and partition is None:
        return StartPlan(subscribe=True)
    if offset is None:
        if group is not None:
            offset = OFFSET_STORED
        else:
            offset = OFFSET_BEGINNING if from_beginning else OFFSET_END
    chosen = list(partitions) if partition is None else [partition]
    return StartPlan(subscribe=False, partitions=chosen, offset=offset)


def _check_options(
    *, group: str | None, partition: int | None, offset: int | None, from_beginning: bool
) -> None:
    if from_beginning and offset is not None:
        raise click.UsageError("give --from-beginning or --offset, not both")
    if group is not None and partition is None and offset is not None:
        raise click.UsageError(
            "--offset with --group needs --partition: the group's committed offsets decide "
            "where a subscription starts"
        )


def consumer_settings(
    *, group: str | None, from_beginning: bool, isolation_level: str | None
) -> dict[str, str]:
    """The librdkafka settings of the group, start and isolation flags."""
    settings: dict[str, str] = {}
    if group is None:
        # librdkafka wants a group id even for manual assignment; this one never commits.
        settings["group.id"] = f"strom-console-consumer-{random.randrange(100_000)}"
        settings["enable.auto.commit"] = "false"
        settings["enable.auto.offset.store"] = "false"
    else:
        settings["group.id"] = group
    if from_beginning:
        settings["auto.offset.reset"] = "earliest"
    if isolation_level is not None:
        settings["isolation.level"] = isolation_level
    return settings


@click.command("consume", cls=ClientCommand)
@click.argument("topic")
@click.option(
    "--from-beginning",
    is_flag=True,
    help="Start at the earliest message (a group: only where it has no committed offset).",
)
@click.option(
    "--offset",
    metavar="N|earliest|latest",
    default=None,
    callback=_offset_option,
    help="Start at this offset.  [default: latest]",
)
@click.option(
    "--partition",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Read only this partition.",
)
@click.option(
    "--group",
    metavar="ID",
    default=None,
    help="Consumer group to read in and commit offsets to.  [default: none, commit nothing]",
)
@click.option(
    "--max-messages",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Exit after this many messages.",
)
@click.option(
    "--timeout-ms",
    type=click.IntRange(min=1),
    default=None,
    metavar="MS",
    help="Exit when no message has arrived for this long.",
)
@click.option(
    "--isolation-level",
    type=click.Choice(["read_committed", "read_uncommitted"]),
    default=None,
    help="read_committed hides aborted and open transactions.  [default: read_uncommitted]",
)
@click.option("--print-key", is_flag=True, help="Print each message's key.")
@click.option("--print-headers", is_flag=True, help="Print headers as k1:v1,k2:v2.")
@click.option(
    "--print-timestamp", is_flag=True, help="Print CreateTime:<ms> or LogAppendTime:<ms>."
)
@click.option("--print-partition", is_flag=True, help="Print Partition:<n>.")
@click.option("--print-offset", is_flag=True, help="Print Offset:<n>.")
@click.option(
    "--key-separator",
    default="\t",
    metavar="SEP",
    help="Separator between the printed fields.  [default: a tab]",
)
@registry_options(schema=False)
@property_option("consumer")
@client_options
@handle_errors
def consume(
    *,
    topic: str,
    from_beginning: bool,
    offset: int | None,
    partition: int | None,
    group: str | None,
    max_messages: int | None,
    timeout_ms: int | None,
    isolation_level: str | None,
    print_key: bool,
    print_headers: bool,
    print_timestamp: bool,
    print_partition: bool,
    print_offset: bool,
    key_separator: str,
    value_format: str,
    registry: str | None,
    properties: tuple[str, ...],
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Print the messages of TOPIC to stdout, one per line, until interrupted (or
    --max-messages, or --timeout-ms without a message). The count goes to stderr at the end.

    \b
    Examples:
      strom consume orders --from-beginning
      strom consume orders --from-beginning --max-messages 10 --print-key --print-offset
      strom consume orders --partition 2 --offset 1500 --timeout-ms 5000
      strom consume orders --group billing --print-headers --print-timestamp
      strom consume orders --isolation-level read_committed --property fetch.min.bytes=1024
      strom consume orders --value-format avro --registry http://localhost:8081
    """
    _check_options(group=group, partition=partition, offset=offset, from_beginning=from_beginning)
    decode = value_decoder(value_format, registry)
    overrides = consumer_settings(
        group=group, from_beginning=from_beginning, isolation_level=isolation_level
    )
    overrides.update(parse_assignments(properties, option="'--property'"))
    config = ClientConfig.build(
        bootstrap_server=bootstrap_server,
        command_config=command_config,
        defaults=CONSUMER_DEFAULTS,
        overrides=overrides,
    )
    consumer = config.create(Consumer)
    # SIGTERM ends the command as Ctrl-C does: the consumer closes and leaves its group.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        partitions = wait_for_partitions(consumer, config, topic)
        if not partitions:
            raise CliError(f"the partitions of topic {topic!r} have no leader yet")
        if partition is not None and partition not in partitions:
            raise CliError(
                f"topic {topic!r} has no partition {partition} (it has {len(partitions)})"
            )
        plan = plan_start(
            group=group,
            partition=partition,
            offset=offset,
            from_beginning=from_beginning,
            partitions=partitions,
        )
        if plan.subscribe:
            if not from_beginning:
                click.echo(
                    f"group {group} resumes from its committed offsets; a partition it never "
                    "committed starts at the end of the log (--from-beginning: at the start)",
                    err=True,
                )
            consumer.subscribe([topic])
        else:
            consumer.assign([TopicPartition(topic, p, plan.offset) for p in plan.partitions])
        options = PrintOptions(
            key=print_key,
            headers=print_headers,
            timestamp=print_timestamp,
            partition=print_partition,
            offset=print_offset,
            separator=key_separator,
            value=decode,
        )
        count, interrupted = _print_messages(
            consumer,
            config,
            options,
            max_messages=max_messages,
            idle_s=None if timeout_ms is None else timeout_ms / 1000,
        )
    except CliError as error:
        if group is None or GROUP_DENIED not in error.message:
            raise
        raise CliError(group_denied(error.message, group, "Read", config.settings)) from None
    finally:
        consumer.close()
        signal.signal(signal.SIGTERM, previous)
    click.echo(f"Processed a total of {count} messages", err=True)
    if interrupted:
        sys.exit(130)


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (a quiet topic writes nothing to notice)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), 0)
        events = poller.poll(0)
    except (OSError, ValueError, io.UnsupportedOperation):  # no file descriptor (tests' buffers)
        return False
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in events)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _print_messages(
    consumer: Consumer,
    config: ClientConfig,
    options: PrintOptions,
    *,
    max_messages: int | None,
    idle_s: float | None,
) -> tuple[int, bool]:
    """Print messages until ``max_messages``, ``idle_s`` without one, or Ctrl-C.

    Returns the number printed and whether Ctrl-C ended it.
    """
    count = 0
    last = time.monotonic()
    try:
        while max_messages is None or count < max_messages:
            wait = _POLL_S
            if idle_s is not None:
                remaining = last + idle_s - time.monotonic()
                if remaining <= 0:
                    break
                wait = min(wait, remaining)
            message = consumer.poll(wait)
            config.errors.raise_if_fatal()
            if message is None:
                if _stdout_closed():
                    raise BrokenPipeError  # ``| head`` is done: end now, not at the next write
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise CliError(kafka_error_message(error))
            click.echo(format_message(message, options))
            count += 1
            last = time.monotonic()
    except KeyboardInterrupt:
        return count, True
    return count, False
