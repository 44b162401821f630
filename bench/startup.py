"""How long a test broker takes from nothing to serving, in-process and as a child process.

Prints the median and the spread over ``--runs`` starts of ``strom.testing.Broker`` (an event
loop thread in this process, strom already imported), of the first ``Broker()`` of a fresh
interpreter, imports included (goal under 0.5 s), and of ``Broker(process=True)`` (a
``strom server`` child: a new interpreter importing strom, as ``make run`` starts one; goal
under 1 s). Each start is timed until the broker is ready; the last column is until it has
answered a Metadata request from confluent-kafka. Then the same for ``strom --help`` (a new
interpreter each run; goal under 0.3 s) beside ``python -c pass``, with the number of modules
each imports.
Run: ``.venv/bin/python -m bench.startup [--runs 10]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial

from confluent_kafka.admin import AdminClient

from strom.testing import Broker

GOAL_IN_PROCESS_S = 0.5
"""Import plus the first embedded broker of a fresh interpreter."""
GOAL_PROCESS_S = 1.0
"""A ``strom server`` process ready (``make run``)."""
GOAL_HELP_S = 0.3


def time_start(*, process: bool) -> tuple[float, float]:
    """Seconds until the broker is ready, and until a client got its metadata."""
    started = time.monotonic()
    with Broker(process=process) as broker:
        ready = time.monotonic() - started
        AdminClient(broker.admin_config()).list_topics(timeout=10)
        served = time.monotonic() - started
    return ready, served


FRESH = """
import time
from confluent_kafka.admin import AdminClient
started = time.monotonic()
from strom.testing import Broker
with Broker() as broker:
    ready = time.monotonic() - started
    AdminClient(broker.admin_config()).list_topics(timeout=10)
    print(ready, time.monotonic() - started)
"""
"""A fresh interpreter's import of strom and first ``Broker()`` (confluent-kafka's import,
which the bench needs for its Metadata request, is not counted)."""


def time_fresh() -> tuple[float, float]:
    result = subprocess.run([sys.executable, "-c", FRESH], check=True, capture_output=True)
    ready, served = result.stdout.split()
    return float(ready), float(served)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    time_start(process=False)  # the first start pays for this process's imports
    print(
        f"{'mode':<26} {'ready s (median)':>17} {'min':>7} {'max':>7} "
        f"{'first Metadata s':>17} {'goal s':>7}"
    )
    modes: dict[str, tuple[Callable[[], tuple[float, float]], float | None]] = {
        "in-process": (partial(time_start, process=False), None),
        "fresh interpreter": (time_fresh, GOAL_IN_PROCESS_S),
        "process (strom server)": (partial(time_start, process=True), GOAL_PROCESS_S),
    }
    for label, (start, goal) in modes.items():
        results = [start() for _ in range(runs)]
        ready = [r for r, _ in results]
        served = [s for _, s in results]
        print(
            f"{label:<26} {statistics.median(ready):>17.3f} {min(ready):>7.3f} "
            f"{max(ready):>7.3f} {statistics.median(served):>17.3f} "
            f"{'' if goal is None else f'< {goal}':>7}"
        )
    print(f"\n{'command':<22} {'s (median)':>11} {'min':>7} {'max':>7} {'modules':>8}")
    for label, argv in COMMANDS.items():
        results = [time_command(argv) for _ in range(runs)]
        times = [t for t, _ in results]
        print(
            f"{label:<22} {statistics.median(times):>11.3f} {min(times):>7.3f} "
            f"{max(times):>7.3f} {results[0][1]:>8}"
        )
    print(f"goal: strom --help < {GOAL_HELP_S} s")


COMMANDS = {"python -c pass": ["-c", "pass"], "strom --help": ["-m", "strom", "--help"]}
"""What each new interpreter runs: ``python -c pass`` is the floor."""


def time_command(argv: list[str]) -> tuple[float, int]:
    """Seconds a new interpreter takes to run ``argv``, and how many modules it imports
    (``python -X importtime`` lines)."""
    started = time.monotonic()
    subprocess.run([sys.executable, *argv], check=True, capture_output=True)
    elapsed = time.monotonic() - started
    traced = [sys.executable, "-X", "importtime", *argv]
    result = subprocess.run(traced, check=True, capture_output=True, text=True)
    return elapsed, result.stderr.count("import time:") - 1  # less the header line


if __name__ == "__main__":
    main()
