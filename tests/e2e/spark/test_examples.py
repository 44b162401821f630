"""The examples of examples/, each run as a user runs it (a child process with ``--once``)
against the tests' ``strom server``, and their output topics checked record by record.

The examples start together when the first test of this module asks for them (each is a Spark
driver of its own, and most of a run is the JVM starting), and each test then waits for its
own. ``word_count.py`` runs in ``test_standalone.py``, on a standalone Spark cluster.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from strom_harness import StromServer

from e2e.spark.clients import consume_all, unique_topic

pytestmark = pytest.mark.timeout(300)  # two Spark drivers at once: slow on a loaded machine

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
RUN_TIMEOUT_S = 150
# The JIT's first tier only, and the serial collector: a driver that lives seconds starts faster.
QUICK_JVM = "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
ONE_PARTITION = "spark.sql.shuffle.partitions=1"  # small data: one state store, one task


def _window(minute: int, page: str, views: int) -> dict[str, object]:
    return {
        "window_start": f"2026-01-01T10:0{minute}:00.000Z",
        "window_end": f"2026-01-01T10:0{minute + 1}:00.000Z",
        "page": page,
        "views": views,
    }


# The windows of windowed_counts.DEMO_VIEWS the watermark closed; 10:05 stays open.
WINDOWS = [
    _window(0, "cart", 1),
    _window(0, "home", 3),
    _window(1, "cart", 2),
    _window(1, "checkout", 1),
    _window(1, "home", 1),
    _window(2, "checkout", 1),
    _window(2, "home", 1),
]

# enrich_join.DEMO_ORDERS joined with examples/data/users.csv; user 9 is unknown.
ENRICHED: list[dict[str, Any]] = [
    {"order": 1001, "user": 2, "name": "Linus", "country": "FI", "amount": 12.5},
    {"order": 1002, "user": 1, "name": "Ada", "country": "GB", "amount": 3.25},
    {"order": 1003, "user": 3, "name": "Grace", "country": "US", "amount": 40.0},
    {"order": 1004, "user": 2, "name": "Linus", "country": "FI", "amount": 7.75},
    {"order": 1005, "user": 9, "amount": 1.0},
]


@dataclass
class Example:
    """A running example: its command line and process."""

    command: list[str]
    process: subprocess.Popen[str]


def run_example(name: str, bootstrap: str, args: Sequence[str]) -> Example:
    """Start ``examples/<name>`` with ``--once`` on a local Spark of one core."""
    command = [sys.executable, str(EXAMPLES / name), "--bootstrap", bootstrap, "--once"]
    command += ["--master", "local[1]", "--conf", QUICK_JVM, "--conf", ONE_PARTITION, *args]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=EXAMPLES
    )
    return Example(command, process)


def finish(example: Example) -> str:
    """Wait for an example to exit; its output, after checking it succeeded."""
    process = example.process
    try:
        output, _ = process.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"{example.command} did not finish within {RUN_TIMEOUT_S} s:\n{output[-3000:]}")
    assert process.returncode == 0, output[-3000:]
    return output


@dataclass
class Runs:
    """The running examples and the topics each writes to."""

    examples: dict[str, Example]
    outputs: dict[str, str]


@pytest.fixture(scope="module")
def runs(broker: StromServer) -> Iterator[Runs]:
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java (make test installs it when it can)")
    bootstrap = broker.bootstrap
    outputs = {name: unique_topic(f"example-{name}") for name in ("windows", "orders")}
    views, orders = unique_topic("example-views"), unique_topic("example-orders")
    examples = {
        "windows": run_example(
            "windowed_counts.py",
            bootstrap,
            ["--seed", "--input", views, "--output", outputs["windows"]],
        ),
        "orders": run_example(
            "enrich_join.py",
            bootstrap,
            ["--seed", "--input", orders, "--output", outputs["orders"]],
        ),
    }
    yield Runs(examples, outputs)
    for example in examples.values():
        if example.process.poll() is None:
            example.process.kill()
            example.process.communicate()


def test_windowed_counts_writes_each_closed_window_once(runs: Runs, broker: StromServer) -> None:
    output = finish(runs.examples["windows"])
    assert "wrote 11 demo records" in output
    # --once ends with what the query wrote: one line per closed window.
    assert f"the query wrote {len(WINDOWS)} record(s) to {runs.outputs['windows']}:" in output
    records = consume_all(broker.bootstrap, runs.outputs["windows"])
    windows = [json.loads(r.value or b"") for r in records]
    assert sorted(windows, key=lambda w: (w["window_start"], w["page"])) == WINDOWS
    assert [r.key for r in records] == [w["page"].encode() for w in windows]


def test_enrich_join_joins_each_order_with_its_user(runs: Runs, broker: StromServer) -> None:
    finish(runs.examples["orders"])
    records = consume_all(broker.bootstrap, runs.outputs["orders"])
    assert [(r.key, json.loads(r.value or b"")) for r in records] == [
        (b"%d" % order["order"], order) for order in ENRICHED
    ]
