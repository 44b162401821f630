"""Time to balance partitions onto a new fourth broker at a replication throttle, and the
produce p99 during the moves beside the p99 before them (issue 30).

    .venv/bin/python bench/balance.py            # the issue's: 300 partitions of 50 MB, 20 MB/s
    .venv/bin/python bench/balance.py --quick    # 60 partitions of 5 MB, 20 MB/s
    .venv/bin/python bench/balance.py --quick --controller   # strom.balancer.enable does it
    .venv/bin/python bench/balance.py --replication-factor 1  # the issue's size in 15 GB

The issue's run writes 15 GB (30 GB with two replicas) and copies about a quarter of it to the
new broker: it checks the free disk first and refuses with one line when it would not fit, and
stops (deleting its cluster) when the disk's free space falls below ``--keep-free-gb`` while it
writes. After the moves it checks that replica counts are within 10% of even.
``--quick`` is the same run scaled down for a shared two-core machine (its throttle measured
over 2 s instead of Kafka's 11, so that it bites within the shorter moves).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from click.testing import CliRunner
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.cli.main import cli
from strom.testing import Cluster


def _quantile(samples: list[float], q: float) -> float:
    """The ``q`` quantile of ``samples`` (seconds), in milliseconds."""
    ordered = sorted(samples)
    return ordered[int(len(ordered) * q)] * 1000 if ordered else float("nan")


def _latency_line(what: str, samples: list[float], errors: list[str]) -> str:
    return (
        f"produce {what}: p50 {_quantile(samples, 0.5):.1f} ms, "
        f"p99 {_quantile(samples, 0.99):.1f} ms ({len(samples)} sends, {len(errors)} errors"
        f"{': ' + errors[0] if errors else ''})"
    )


def _latencies(
    servers: str, topic: str, stop: threading.Event, out: list[float], errors: list[str]
) -> None:
    """Small acks=all produces, one at a time, their round trips in seconds; the delivery
    errors (and sends not delivered within 10 s) in ``errors``."""
    producer = Producer({"bootstrap.servers": servers, "acks": "all", "linger.ms": 0})

    def delivered(error: KafkaError | None, _: object) -> None:
        if error is not None:
            errors.append(str(error))

    while not stop.is_set():
        began = time.perf_counter()
        producer.produce(topic, b"x" * 100, on_delivery=delivered)
        if producer.flush(10):
            errors.append("not delivered within 10 s")
        out.append(time.perf_counter() - began)
        time.sleep(0.01)


def _produce(producer: Producer, value: bytes, partition: int) -> None:
    """One record, waiting for room while the client's queue is full."""
    while True:
        try:
            producer.produce("load", value, partition=partition)
        except BufferError:
            producer.poll(0.1)
        else:
            producer.poll(0)
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=300)
    parser.add_argument("--mb-per-partition", type=float, default=50.0)
    parser.add_argument("--throttle-mb", type=float, default=20.0)
    parser.add_argument("--max-concurrent-moves", type=int, default=10)
    parser.add_argument(
        "--replication-factor", type=int, default=2, help="of the load topic (the probe's is 2)"
    )
    parser.add_argument(
        "--keep-free-gb", type=float, default=12.0, help="stop when the disk has less free"
    )
    parser.add_argument(
        "--quick", action="store_true", help="60 partitions of 5 MB (a shared machine's run)"
    )
    parser.add_argument(
        "--controller",
        action="store_true",
        help="let the controller balance (strom.balancer.enable) instead of strom balance",
    )
    args = parser.parse_args()
    if args.quick:
        args.partitions, args.mb_per_partition = 60, 5.0
    # the replicas, and a quarter more for the copies onto the new broker
    needed = args.partitions * args.mb_per_partition * 2**20 * args.replication_factor * 1.25
    needed += args.keep_free_gb * 2**30
    free = shutil.disk_usage(tempfile.gettempdir()).free
    if needed > free:
        sys.exit(
            f"needs about {needed / 2**30:.1f} GiB free in {tempfile.gettempdir()} "
            f"(with --keep-free-gb {args.keep_free_gb:g}), has {free / 2**30:.1f} GiB: "
            "pass --quick, fewer --partitions or --replication-factor 1"
        )
    # Kafka's throttle measures over replication.quota.window.num windows (11 s by default) and
    # lets a move burst until that span's average reaches the rate; a quick run's moves would
    # finish inside the burst, so it measures over 2 windows (the run keeps Kafka's).
    settings: dict[str, object] = {"replication.quota.window.num": 2} if args.quick else {}
    if args.controller:
        settings |= {
            "strom.balancer.enable": "true",
            "strom.balancer.check.interval.ms": 1000,
            "strom.balancer.max.concurrent.moves": args.max_concurrent_moves,
            "strom.balancer.throttle.bytes.per.second": int(args.throttle_mb * 1024 * 1024),
        }
    with Cluster(brokers=4, controllers=1, config=settings) as cluster:
        cluster.terminate(4)
        cluster.wait_for(
            lambda: cluster.unfenced_brokers(via=[1]) == {1, 2, 3}, timeout=30, what="three brokers"
        )
        servers = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": servers})
        new = NewTopic(
            "load", num_partitions=args.partitions, replication_factor=args.replication_factor
        )
        admin.create_topics([new, NewTopic("probe", num_partitions=1, replication_factor=2)])
        time.sleep(2)
        lost: list[str] = []

        def failed(error: KafkaError | None, _: object) -> None:
            if error is not None:
                lost.append(str(error))

        filler = Producer(
            {
                "bootstrap.servers": servers,
                "linger.ms": 50,
                "acks": "all",  # acks=1 lost whole partitions to leader changes at load 20
                "delivery.report.only.error": True,
                "on_delivery": failed,
            }
        )
        chunk = b"v" * 10_000
        filled = time.monotonic()
        for p in range(args.partitions):
            for _ in range(int(args.mb_per_partition * 100)):
                _produce(filler, chunk, p)
            _keep_free(args.keep_free_gb)
        if unsent := filler.flush(600):
            lost.append(f"{unsent} records not sent within 600 s")
        if lost:  # the model would hold partitions smaller than asked for
            sys.exit(f"the fill lost {len(lost)} record(s), first: {lost[0]}")
        filled = time.monotonic() - filled
        print(f"wrote {args.partitions * args.mb_per_partition:g} MB in {filled:.1f} s")
        # followers out of the ISR may still be copying; moves measured meanwhile would compete
        began, least = time.monotonic(), int(args.mb_per_partition * 100) * len(chunk)
        while not _replicated(cluster, "load", args.partitions, args.replication_factor, least):
            if time.monotonic() - began > 3600:
                sys.exit("the followers did not catch up with the leaders within an hour")
            time.sleep(2)
        print(f"followers caught up {time.monotonic() - began:.1f} s later")
        stop, before, errors_before = threading.Event(), list[float](), list[str]()
        probe = threading.Thread(
            target=_latencies, args=(servers, "probe", stop, before, errors_before)
        )
        probe.start()
        time.sleep(10)
        stop.set()
        probe.join()
        cluster.restart(4)
        cluster.wait_for(
            lambda: cluster.unfenced_brokers(via=[1]) == {1, 2, 3, 4}, timeout=30, what="broker 4"
        )
        stop, during, errors_during = threading.Event(), list[float](), list[str]()
        probe = threading.Thread(
            target=_latencies, args=(servers, "probe", stop, during, errors_during)
        )
        probe.start()
        began = time.monotonic()
        outcome, ended = _by_controller(servers) if args.controller else _by_command(servers, args)
        took = ended - began
        stop.set()
        probe.join()
        copied = sum(f.stat().st_size for f in cluster.nodes[4].data_dir.rglob("*.log"))
        counts = _status(servers)[1]
        who = "the controller" if args.controller else "strom balance execute"
        print(
            f"{args.partitions} partitions x {args.mb_per_partition:g} MB, "
            f"RF {args.replication_factor}, throttle "
            f"{args.throttle_mb:g} MB/s, {args.max_concurrent_moves} moves at a time, by {who}"
        )
        print(
            f"balance onto broker 4: {took:.1f} s ({outcome}), {copied / 2**20:.0f} MB on "
            f"broker 4, {copied / 2**20 / took:.1f} MB/s"
        )
        print(f"replicas per broker after: {counts} ({_evenness(counts)})")
        print(_latency_line("before the moves", before, errors_before))
        print(_latency_line("during the moves", during, errors_during))


def _replicated(cluster: Cluster, topic: str, partitions: int, factor: int, least: int) -> bool:
    """Whether each partition of ``topic`` has ``factor`` logs of the same size on disk, of
    ``least`` bytes at least."""
    sizes: dict[str, list[int]] = {}
    for node in (1, 2, 3):
        for directory in cluster.nodes[node].data_dir.rglob(f"{topic}-*"):
            if directory.is_dir() and directory.name.rpartition("-")[2].isdigit():
                logs = directory.glob("*.log")
                sizes.setdefault(directory.name, []).append(sum(f.stat().st_size for f in logs))
    return len(sizes) == partitions and all(
        len(copies) == factor and len(set(copies)) == 1 and copies[0] >= least
        for copies in sizes.values()
    )


def _keep_free(keep_gb: float) -> None:
    """Stop the run (its cluster and data deleted on the way out) when the disk runs low."""
    free = shutil.disk_usage(tempfile.gettempdir()).free / 2**30
    if free < keep_gb:
        sys.exit(f"stopped: {free:.1f} GiB free in {tempfile.gettempdir()}, below {keep_gb:g}")


def _status(servers: str) -> tuple[str, list[int]]:
    """``strom balance status``'s first line, and its replicas per broker (by broker id)."""
    lines = CliRunner().invoke(cli, ["balance", "status", "--bootstrap-server", servers])
    output = lines.output.splitlines()
    counts = json.loads(output[-1]) if output else {}
    return output[0] if output else "", [counts[b]["replicas"] for b in sorted(counts, key=int)]


def _evenness(replicas: list[int]) -> str:
    """Whether ``replicas`` are within 10% of even (or one replica) on four brokers."""
    average = sum(replicas) / max(len(replicas), 1)
    even = len(replicas) == 4 and all(abs(r - average) <= max(0.1 * average, 1) for r in replicas)
    return "within 10% of even" if even else "NOT within 10% of even"


def _by_command(servers: str, args: argparse.Namespace) -> tuple[str, float]:
    """``strom balance execute --add-broker 4`` in a process of its own (in this one, its polls
    would hold the GIL from the probe); its exit code and what it moved, and when it ended."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "strom",
            "balance",
            "execute",
            "--add-broker",
            "4",
            "--bootstrap-server",
            servers,
            "--throttle",
            str(int(args.throttle_mb * 1024 * 1024)),
            "--max-concurrent-moves",
            str(args.max_concurrent_moves),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    ended = time.monotonic()
    moved = next((line for line in result.stdout.splitlines() if line.startswith("moving")), "")
    return f"exit {result.returncode}, {moved or result.stderr.strip()}", ended


def _by_controller(
    servers: str, settle_s: float = 3.0, timeout_s: float = 3600.0
) -> tuple[str, float]:
    """Until ``strom balance status`` shows no move in progress and replica counts within 10%
    of even for ``settle_s`` (the controller starts its batches a second apart); the counts,
    and when they became so."""
    deadline = time.monotonic() + timeout_s
    even_since: float | None = None
    while time.monotonic() < deadline:
        moves, replicas = _status(servers)
        if _evenness(replicas) == "within 10% of even" and moves.startswith("0 partition move"):
            even_since = even_since or time.monotonic()
            if time.monotonic() - even_since >= settle_s:
                return f"replicas per broker {replicas}", even_since
        else:
            even_since = None
        time.sleep(0.5)
    return "not balanced in time", time.monotonic()


if __name__ == "__main__":
    main()
