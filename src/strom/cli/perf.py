"""``strom perf produce`` and ``strom perf consume`` (kafka-producer-perf-test.sh and
kafka-consumer-perf-test.sh), on confluent-kafka (librdkafka).

Both print a progress line every ``--reporting-interval`` and a final line, in the words of
Kafka's tools (MB = 2^20 bytes, of record values):

- produce: records acknowledged in the interval, records/s, MB/s, average and maximum latency;
  at the end the totals and the latency percentiles. Latency is librdkafka's own per-record
  figure (``Message.latency()``): from ``produce()`` to the broker's acknowledgement, taken
  in librdkafka's thread, so it does not include the time the delivery report waits for
  ``poll``.
- consume: records and MB per second from the first record to the last, and the time from the
  assignment (or subscription) to the first record.

The tool must not be what is measured: per record it makes one ``produce()`` call and one
delivery callback that appends a float to an array; polling, pacing and progress happen every
``_POLL_EVERY`` records (every record when ``--throughput`` paces the run). The consumer takes
records in chunks (``Consumer.consume``) and looks at each only through C-level ``map``s.

``run_produce`` and ``run_consume`` take a ``ClientConfig`` and return a result; ``bench.compare``
drives brokers with them.
"""

from __future__ import annotations

import os
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import click
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.cimpl import NewTopic

from strom.cli.client_common import (
    REQUEST_TIMEOUT_S,
    ClientConfig,
    ClientGroup,
    CliError,
    client_options,
    connect_admin,
    error_code,
    failure,
    handle_errors,
    kafka_error_message,
    parse_assignments,
    wait_for_partitions,
)
from strom.cli.consume import CONSUMER_DEFAULTS, consumer_settings
from strom.cli.produce import ACKS, COMPRESSIONS, PRODUCER_DEFAULTS, producer_settings

__all__ = [
    "PERF_CONSUMER_DEFAULTS",
    "ConsumeResult",
    "ConsumeSpec",
    "LatencyStats",
    "ProduceResult",
    "ProduceSpec",
    "ensure_topic",
    "perf",
    "perf_producer_settings",
    "random_payloads",
    "run_consume",
    "run_produce",
]

MIB = 1024 * 1024
REPORTING_INTERVAL_MS = 5000
MAX_SAMPLES = 500_000
"""Latencies kept for the percentiles (every n-th record beyond it), as Kafka's tool keeps."""
PAYLOAD_POOL_BYTES = 1 << 20
"""Distinct payloads cycled through: this many bytes of them (at most 10,000 values)."""

_POLL_EVERY = 256
_QUEUE_FULL_WAIT_S = 0.005
_PACING_SLACK_S = 0.001
_CONSUME_CHUNK = 10_000
_CONSUME_WAIT_S = 0.1
_FLUSH_STEP_S = 0.1
_LETTERS = bytes(65 + byte % 26 for byte in range(256))

PERF_CONSUMER_DEFAULTS: Mapping[str, str] = {
    **CONSUMER_DEFAULTS,
    # librdkafka (2.3+) stops fetching for a second whenever its local queue holds more than
    # queued.min.messages; a consumer slower than the broker then idles for most of each second.
    "fetch.queue.backoff.ms": "1",
}


def random_payloads(record_size: int) -> list[bytes]:
    """Distinct values of random letters A-Z (what Kafka's tool sends), about 1 MB of them,
    so that the records of a batch differ and compression sees more than one repeated value."""
    count = max(1, min(PAYLOAD_POOL_BYTES // max(record_size, 1), 10_000))
    letters = os.urandom(count * record_size).translate(_LETTERS)
    return [letters[i * record_size : (i + 1) * record_size] for i in range(count)]


@dataclass(frozen=True)
class Window:
    """The latencies folded in by one ``LatencyStats.fold``."""

    count: int
    avg_s: float
    max_s: float


class LatencyStats:
    """Produce latencies in seconds. The delivery callback appends to ``window``; ``fold``
    moves the window into the totals and keeps every ``step``-th latency for percentiles."""

    def __init__(self, expected: int) -> None:
        self.window = array("d")
        self.samples = array("d")
        self.step = max(1, expected // MAX_SAMPLES)
        self.count = 0
        self.total_s = 0.0
        self.max_s = 0.0

    def fold(self) -> Window:
        window = self.window
        n = len(window)
        if not n:
            return Window(0, 0.0, 0.0)
        window_sum, window_max = sum(window), max(window)
        self.samples.extend(window[(-self.count) % self.step :: self.step])
        self.count += n
        self.total_s += window_sum
        self.max_s = max(self.max_s, window_max)
        del window[:]
        return Window(n, window_sum / n, window_max)

    def percentiles(self, *points: float) -> list[float]:
        """Latencies at the given fractions (0.5 is the median), as Kafka's tool picks them."""
        ordered = sorted(self.samples)
        if not ordered:
            return [0.0 for _ in points]
        return [ordered[min(int(point * len(ordered)), len(ordered) - 1)] for point in points]


@dataclass
class _Failures:
    count: int = 0
    first: KafkaError | None = None

    def add(self, error: KafkaError) -> None:
        self.count += 1
        if self.first is None:
            self.first = error


def _delivery_callback(
    append: Callable[[float], None], failures: _Failures
) -> Callable[[KafkaError | None, Message], None]:
    def on_delivery(error: KafkaError | None, message: Message) -> None:
        if error is None:
            latency = message.latency()  # None only for a failed delivery
            if latency is not None:
                append(latency)
        else:
            failures.add(error)

    return on_delivery


class _Ticker:
    """When the next progress line is due, and the start of its interval."""

    def __init__(self, start: float, interval_s: float) -> None:
        self.interval_s = interval_s
        self.since = start
        self.due = start + interval_s

    def tick(self, now: float) -> float:
        """Start the next interval; the length of the one that ended."""
        elapsed = now - self.since
        self.since = now
        self.due = now + self.interval_s
        return max(elapsed, 1e-9)


def _rates(records: int, value_bytes: int, seconds: float) -> str:
    seconds = max(seconds, 1e-9)
    return f"{records / seconds:.1f} records/sec ({value_bytes / seconds / MIB:.2f} MB/sec)"


@dataclass(frozen=True)
class ProduceSpec:
    """What ``run_produce`` sends: ``throughput`` records/s, or as fast as it can when < 0."""

    topic: str
    num_records: int
    record_size: int
    throughput: float = -1.0


@dataclass(frozen=True)
class ProduceResult:
    """Acknowledged records and their latencies (ms); ``failed`` records were not delivered."""

    records: int
    record_size: int
    elapsed_s: float
    avg_ms: float
    max_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    p999_ms: float
    failed: int = 0
    first_error: KafkaError | None = None

    @property
    def records_per_s(self) -> float:
        return self.records / max(self.elapsed_s, 1e-9)

    @property
    def mb_per_s(self) -> float:
        return self.records_per_s * self.record_size / MIB

    def line(self) -> str:
        """The final line, as kafka-producer-perf-test.sh prints it (with fractions of ms)."""
        rates = _rates(self.records, self.records * self.record_size, self.elapsed_s)
        return (
            f"{self.records} records sent, {rates}, {self.avg_ms:.2f} ms avg latency, "
            f"{self.max_ms:.2f} ms max latency, {self.p50_ms:.2f} ms 50th, "
            f"{self.p95_ms:.2f} ms 95th, {self.p99_ms:.2f} ms 99th, {self.p999_ms:.2f} ms 99.9th."
        )


def run_produce(
    config: ClientConfig,
    spec: ProduceSpec,
    *,
    report: Callable[[str], None] | None = None,
    interval_s: float = REPORTING_INTERVAL_MS / 1000,
) -> ProduceResult:
    """Send ``spec``'s records with a new producer of ``config``, flush, and measure."""
    producer = config.create(Producer)
    wait_for_partitions(producer, config, spec.topic)
    stats = LatencyStats(spec.num_records)
    failures = _Failures()
    on_delivery = _delivery_callback(stats.window.append, failures)
    payloads = random_payloads(spec.record_size)
    pool = len(payloads)
    topic, size, rate = spec.topic, spec.record_size, spec.throughput
    produce, poll, monotonic = producer.produce, producer.poll, time.monotonic
    every = 1 if rate > 0 else _POLL_EVERY

    def progress(now: float) -> None:
        seconds = ticker.tick(now)
        window = stats.fold()
        if report is not None:
            report(
                f"{window.count} records sent, {_rates(window.count, window.count * size, seconds)}"
                f", {window.avg_s * 1000:.1f} ms avg latency,"
                f" {window.max_s * 1000:.1f} ms max latency."
            )

    start = monotonic()
    ticker = _Ticker(start, interval_s)
    for i in range(spec.num_records):
        value = payloads[i % pool]
        while True:
            try:
                produce(topic, value, on_delivery=on_delivery)
                break
            except BufferError:  # the local queue is full: serve delivery reports
                poll(_QUEUE_FULL_WAIT_S)
        if i % every == 0:
            poll(0)
            now = monotonic()
            if rate > 0:
                ahead = start + (i + 1) / rate - now
                if ahead > _PACING_SLACK_S:
                    time.sleep(ahead)
            if now >= ticker.due:
                progress(now)
            config.errors.raise_if_fatal()
    while producer.flush(min(_FLUSH_STEP_S, max(ticker.due - monotonic(), 0.001))) > 0:
        config.errors.raise_if_fatal()
        if monotonic() >= ticker.due:
            progress(monotonic())
    end = monotonic()
    stats.fold()
    p50, p95, p99, p999 = stats.percentiles(0.5, 0.95, 0.99, 0.999)
    return ProduceResult(
        records=stats.count,
        record_size=size,
        elapsed_s=end - start,
        avg_ms=stats.total_s / max(stats.count, 1) * 1000,
        max_ms=stats.max_s * 1000,
        p50_ms=p50 * 1000,
        p95_ms=p95 * 1000,
        p99_ms=p99 * 1000,
        p999_ms=p999 * 1000,
        failed=failures.count,
        first_error=failures.first,
    )


@dataclass(frozen=True)
class ConsumeSpec:
    """What ``run_consume`` reads: ``messages`` records, giving up after ``timeout_s`` without
    one; every partition by assignment, or by subscription as ``group``."""

    topic: str
    messages: int
    timeout_s: float = 10.0
    group: str | None = None
    from_beginning: bool = True


@dataclass(frozen=True)
class ConsumeResult:
    """Records read; the rates are over ``elapsed_s``, from the first record to the last."""

    records: int
    value_bytes: int
    first_record_s: float | None
    elapsed_s: float
    timed_out: bool = False

    @property
    def records_per_s(self) -> float:
        return self.records / max(self.elapsed_s, 1e-9)

    @property
    def mb_per_s(self) -> float:
        return self.value_bytes / max(self.elapsed_s, 1e-9) / MIB

    def line(self) -> str:
        first = (
            "no record"
            if self.first_record_s is None
            else f"{self.first_record_s * 1000:.1f} ms to first record"
        )
        rates = _rates(self.records, self.value_bytes, self.elapsed_s)
        return f"{self.records} records received, {rates}, {first}."


def _check_errors(batch: Sequence[Message]) -> list[Message]:
    """The records of ``batch`` without partition-EOF events; ``CliError`` on any other error."""
    records = []
    for message in batch:
        error = message.error()
        if error is None:
            records.append(message)
        elif error.code() != KafkaError._PARTITION_EOF:
            raise CliError(kafka_error_message(error))
    return records


def run_consume(
    config: ClientConfig,
    spec: ConsumeSpec,
    *,
    report: Callable[[str], None] | None = None,
    interval_s: float = REPORTING_INTERVAL_MS / 1000,
) -> ConsumeResult:
    """Read ``spec``'s records with a new consumer of ``config`` and measure."""
    consumer = config.create(Consumer)
    try:
        partitions = wait_for_partitions(consumer, config, spec.topic)
        if not partitions:
            raise CliError(f"the partitions of topic {spec.topic!r} have no leader yet")
        start = time.monotonic()
        if spec.group is not None:
            consumer.subscribe([spec.topic])
        else:
            offset = OFFSET_BEGINNING if spec.from_beginning else OFFSET_END
            consumer.assign([TopicPartition(spec.topic, p, offset) for p in partitions])
        return _consume_loop(
            consumer, config, spec, start=start, report=report, interval_s=interval_s
        )
    finally:
        consumer.close()


def _consume_loop(
    consumer: Consumer,
    config: ClientConfig,
    spec: ConsumeSpec,
    *,
    start: float,
    report: Callable[[str], None] | None,
    interval_s: float,
) -> ConsumeResult:
    consume, monotonic = consumer.consume, time.monotonic
    count = value_bytes = reported = reported_bytes = 0
    first: float | None = None
    last = start
    ticker = _Ticker(start, interval_s)
    timed_out = False
    while count < spec.messages:
        now = monotonic()
        idle_until = last + spec.timeout_s
        if now >= idle_until:
            timed_out = True
            break
        wait = min(_CONSUME_WAIT_S, idle_until - now, max(ticker.due - now, 0.001))
        batch = consume(min(_CONSUME_CHUNK, spec.messages - count), wait)
        now = monotonic()
        if batch:
            if any(map(Message.error, batch)):
                batch = _check_errors(batch)
            if batch:
                count += len(batch)
                value_bytes += sum(map(len, batch))
                last = now
                if first is None:
                    first = now
        config.errors.raise_if_fatal()
        if now >= ticker.due:
            seconds = ticker.tick(now)
            if report is not None:
                window = _rates(count - reported, value_bytes - reported_bytes, seconds)
                report(f"{count - reported} records received, {window}.")
            reported, reported_bytes = count, value_bytes
    elapsed = last - first if first is not None and last > first else last - start
    return ConsumeResult(
        records=count,
        value_bytes=value_bytes,
        first_record_s=None if first is None else first - start,
        elapsed_s=elapsed,
        timed_out=timed_out,
    )


def ensure_topic(
    *,
    topic: str,
    partitions: int | None,
    bootstrap_server: str | None,
    command_config: Path | None = None,
) -> bool:
    """Create ``topic`` with ``partitions`` (the broker's default when None) unless it exists;
    whether it was created."""
    admin, metadata = connect_admin(
        bootstrap_server=bootstrap_server, command_config=command_config
    )
    if topic in metadata.topics:
        return False
    new_topic = NewTopic(topic, num_partitions=partitions or -1, replication_factor=-1)
    future = admin.create_topics(
        [new_topic], request_timeout=REQUEST_TIMEOUT_S, operation_timeout=REQUEST_TIMEOUT_S
    )[topic]
    try:
        future.result()
    except KafkaException as exc:
        if error_code(exc) != KafkaError.TOPIC_ALREADY_EXISTS:
            raise failure(f"cannot create topic {topic!r}", exc) from None
        return False
    return True


def perf_producer_settings(
    *,
    acks: str | None = None,
    compression_type: str | None = None,
    linger_ms: int | None = None,
    batch_size: int | None = None,
) -> dict[str, str]:
    """librdkafka settings of the perf producer's flags that were given."""
    settings = producer_settings(compression=compression_type, acks=acks)
    if linger_ms is not None:
        settings["linger.ms"] = str(linger_ms)
    if batch_size is not None:
        settings["batch.size"] = str(batch_size)
    return settings


def _throughput(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if value == 0:
        raise click.BadParameter("must be positive, or -1 for no limit")
    return value


def _reporting_interval_option(func: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--reporting-interval",
        type=click.IntRange(min=1),
        default=REPORTING_INTERVAL_MS,
        show_default=True,
        metavar="MS",
        help="Milliseconds between progress lines.",
    )(func)


@click.group("perf", cls=ClientGroup)
def perf() -> None:
    """Measure throughput and latency (like kafka-producer-perf-test.sh and
    kafka-consumer-perf-test.sh)."""


@perf.command("produce")
@click.option("--topic", required=True, help="Topic to produce to.")
@click.option(
    "--num-records", type=click.IntRange(min=1), required=True, metavar="N", help="Records to send."
)
@click.option(
    "--record-size",
    type=click.IntRange(min=0),
    required=True,
    metavar="BYTES",
    help="Size of each record's value (random letters A-Z; no key).",
)
@click.option(
    "--throughput",
    type=float,
    default=-1.0,
    callback=_throughput,
    metavar="RECORDS/S",
    help="Pace the run at about this many records/s; -1 for no limit.  [default: -1]",
)
@click.option(
    "--acks",
    type=click.Choice(ACKS),
    default=None,
    help="Acknowledgements the leader waits for.  [default: all]",
)
@click.option(
    "--compression-type",
    type=click.Choice(COMPRESSIONS),
    default=None,
    help="Compression of the batches.  [default: none]",
)
@click.option(
    "--linger-ms",
    type=click.IntRange(min=0),
    default=None,
    metavar="MS",
    help="How long a batch may wait for more records (linger.ms).  [default: librdkafka's, 5]",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=None,
    metavar="BYTES",
    help="Largest batch of records (batch.size).  [default: librdkafka's, 1000000]",
)
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Create the topic with N partitions if it does not exist.  [default: the broker's "
    "num.partitions]",
)
@click.option(
    "--producer-props",
    multiple=True,
    metavar="NAME=VALUE",
    help="Any librdkafka producer setting; wins over the options above. Repeatable.",
)
@_reporting_interval_option
@client_options
@handle_errors
def perf_produce(
    *,
    topic: str,
    num_records: int,
    record_size: int,
    throughput: float,
    acks: str | None,
    compression_type: str | None,
    linger_ms: int | None,
    batch_size: int | None,
    partitions: int | None,
    producer_props: tuple[str, ...],
    reporting_interval: int,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Send records as fast as possible (or at --throughput) and print throughput and
    latency: a line every --reporting-interval, and a final line with the average, the
    50th, 95th, 99th and 99.9th percentiles and the maximum latency.

    \b
    Examples:
      strom perf produce --topic bench --num-records 1000000 --record-size 100
      strom perf produce --topic bench --num-records 100000 --record-size 1024 \\
          --throughput 5000 --acks 1 --compression-type lz4 --partitions 6
      strom perf produce --topic bench --num-records 100000 --record-size 100 \\
          --producer-props enable.idempotence=true --producer-props batch.num.messages=500
    """
    overrides = perf_producer_settings(
        acks=acks, compression_type=compression_type, linger_ms=linger_ms, batch_size=batch_size
    )
    overrides.update(parse_assignments(producer_props, option="'--producer-props'"))
    config = ClientConfig.build(
        bootstrap_server=bootstrap_server,
        command_config=command_config,
        defaults=PRODUCER_DEFAULTS,
        overrides=overrides,
    )
    ensure_topic(
        topic=topic,
        partitions=partitions,
        bootstrap_server=bootstrap_server,
        command_config=command_config,
    )
    spec = ProduceSpec(topic, num_records, record_size, throughput)
    result = run_produce(config, spec, report=click.echo, interval_s=reporting_interval / 1000)
    click.echo(result.line())
    if result.failed:
        reason = (
            "" if result.first_error is None else f": {kafka_error_message(result.first_error)}"
        )
        raise CliError(f"{result.failed} of {num_records} records were not delivered{reason}")


@perf.command("consume")
@click.option("--topic", required=True, help="Topic to read.")
@click.option(
    "--messages",
    type=click.IntRange(min=1),
    required=True,
    metavar="N",
    help="Records to read.",
)
@click.option(
    "--timeout",
    type=click.IntRange(min=1),
    default=10_000,
    show_default=True,
    metavar="MS",
    help="Give up after this long without a record.",
)
@click.option(
    "--group",
    metavar="ID",
    default=None,
    help="Read as a member of this consumer group (subscribe).  [default: no group, assign "
    "every partition]",
)
@click.option(
    "--from-beginning/--from-latest",
    default=True,
    help="Start at the earliest record, or only read records produced from now on.  "
    "[default: --from-beginning]",
)
@click.option(
    "--consumer-props",
    multiple=True,
    metavar="NAME=VALUE",
    help="Any librdkafka consumer setting, e.g. fetch.max.bytes=1048576. Repeatable.",
)
@_reporting_interval_option
@client_options
@handle_errors
def perf_consume(
    *,
    topic: str,
    messages: int,
    timeout: int,
    group: str | None,
    from_beginning: bool,
    consumer_props: tuple[str, ...],
    reporting_interval: int,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Read --messages records and print the throughput: a line every
    --reporting-interval, and a final line with records/s, MB/s and the time to the first
    record. Fails if --timeout passes without a record before all have been read.

    \b
    Examples:
      strom perf consume --topic bench --messages 1000000
      strom perf consume --topic bench --messages 1000 --from-latest --timeout 60000
      strom perf consume --topic bench --messages 100000 --group perf \\
          --consumer-props fetch.max.bytes=1048576
    """
    overrides = consumer_settings(group=group, from_beginning=from_beginning, isolation_level=None)
    overrides.update(parse_assignments(consumer_props, option="'--consumer-props'"))
    config = ClientConfig.build(
        bootstrap_server=bootstrap_server,
        command_config=command_config,
        defaults=PERF_CONSUMER_DEFAULTS,
        overrides=overrides,
    )
    spec = ConsumeSpec(topic, messages, timeout / 1000, group, from_beginning)
    result = run_consume(config, spec, report=click.echo, interval_s=reporting_interval / 1000)
    click.echo(result.line())
    if result.timed_out:
        raise CliError(f"no record for {timeout} ms: read {result.records} of {messages} records")
