"""``strom perf produce`` and ``strom perf consume`` end to end, against a real ``strom server``.

Small record counts: these check the lines' shape and that every record is read back, never
the figures.
"""

from __future__ import annotations

import re

from .conftest import Server

NUMBER = r"\d+(?:\.\d+)?"
PRODUCE_PROGRESS = re.compile(
    rf"^\d+ records sent, {NUMBER} records/sec \({NUMBER} MB/sec\), {NUMBER} ms avg latency, "
    rf"{NUMBER} ms max latency\.$"
)
PRODUCE_FINAL = re.compile(
    rf"^(?P<records>\d+) records sent, {NUMBER} records/sec \({NUMBER} MB/sec\), "
    rf"{NUMBER} ms avg latency, {NUMBER} ms max latency, {NUMBER} ms 50th, {NUMBER} ms 95th, "
    rf"{NUMBER} ms 99th, {NUMBER} ms 99\.9th\.$"
)
CONSUME_PROGRESS = re.compile(
    rf"^\d+ records received, {NUMBER} records/sec \({NUMBER} MB/sec\)\.$"
)
CONSUME_FINAL = re.compile(
    rf"^(?P<records>\d+) records received, {NUMBER} records/sec \({NUMBER} MB/sec\), "
    rf"{NUMBER} ms to first record\.$"
)


def test_produce_then_consume_every_record(server: Server) -> None:
    produced = server.run(
        "perf", "produce", "--topic", "perf-a", "--num-records", "3000", "--record-size", "100",
        "--partitions", "3", "--acks", "1", "--compression-type", "lz4", "--linger-ms", "2",
        "--batch-size", "16384", "--producer-props", "client.id=perf-test",
    )  # fmt: skip
    final = PRODUCE_FINAL.match(produced.lines[-1])
    assert final, produced.stdout
    assert final["records"] == "3000"
    assert all(PRODUCE_PROGRESS.match(line) for line in produced.lines[:-1]), produced.stdout
    described = server.run("topics", "describe", "perf-a")
    assert "PartitionCount: 3" in described.stdout

    consumed = server.run(
        "perf", "consume", "--topic", "perf-a", "--messages", "3000", "--timeout", "20000"
    )
    final = CONSUME_FINAL.match(consumed.lines[-1])
    assert final, consumed.stdout
    assert final["records"] == "3000"
    assert all(CONSUME_PROGRESS.match(line) for line in consumed.lines[:-1]), consumed.stdout


def test_paced_produce_prints_progress(server: Server) -> None:
    produced = server.run(
        "perf", "produce", "--topic", "perf-b", "--num-records", "600", "--record-size", "10",
        "--throughput", "1000", "--reporting-interval", "100",
    )  # fmt: skip
    assert PRODUCE_FINAL.match(produced.lines[-1]), produced.stdout
    progress = produced.lines[:-1]
    assert len(progress) >= 2, produced.stdout
    assert all(PRODUCE_PROGRESS.match(line) for line in progress), produced.stdout
    assert sum(int(line.split()[0]) for line in progress) <= 600


def test_consume_fails_when_records_are_missing(server: Server) -> None:
    server.run(
        "perf", "produce", "--topic", "perf-c", "--num-records", "50", "--record-size", "10",
        "--partitions", "1",
    )  # fmt: skip
    consumed = server.run(
        "perf", "consume", "--topic", "perf-c", "--messages", "80", "--timeout", "1000", ok=False
    )
    assert consumed.returncode == 1
    final = CONSUME_FINAL.match(consumed.lines[-1])
    assert final, consumed.stdout
    assert final["records"] == "50"
    assert consumed.error_lines == ["Error: no record for 1000 ms: read 50 of 80 records"]


def test_help_and_bad_options(server: Server) -> None:
    for command in ("produce", "consume"):
        shown = server.run("perf", command, "--help")
        assert "--topic" in shown.stdout
        assert "--bootstrap-server" in shown.stdout
    refused = server.run(
        "perf", "produce", "--topic", "x", "--num-records", "1", "--record-size", "1",
        "--throughput", "0", ok=False,
    )  # fmt: skip
    assert refused.returncode == 2
    assert refused.error_lines == [
        "Error: Invalid value for '--throughput': must be positive, or -1 for no limit"
    ]
