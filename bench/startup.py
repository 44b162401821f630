"""How long a test broker takes from nothing to serving, in-process and as a child process.

Prints the median and the spread over ``--runs`` starts of ``strom.testing.Broker`` (an event
loop thread in this process; the goal is under 0.5 s) and of ``Broker(process=True)`` (a
``strom server`` child: a new interpreter importing strom). Each start is timed until the
broker answers a Metadata request from confluent-kafka, so "ready" means usable by a client.
Run: ``.venv/bin/python -m bench.startup [--runs 10]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from confluent_kafka.admin import AdminClient

from strom.testing import Broker

GOAL_IN_PROCESS_S = 0.5


def time_start(*, process: bool) -> tuple[float, float]:
    """Seconds until the broker is ready, and until a client got its metadata."""
    started = time.monotonic()
    with Broker(process=process) as broker:
        ready = time.monotonic() - started
        AdminClient(broker.admin_config()).list_topics(timeout=10)
        served = time.monotonic() - started
    return ready, served


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    time_start(process=False)  # the first start pays for this process's imports
    print(f"{'mode':<12} {'ready s (median)':>17} {'min':>7} {'max':>7} {'first Metadata s':>17}")
    for label, process in (("in-process", False), ("process", True)):
        results = [time_start(process=process) for _ in range(runs)]
        ready = [r for r, _ in results]
        served = [s for _, s in results]
        print(
            f"{label:<12} {statistics.median(ready):>17.3f} {min(ready):>7.3f} "
            f"{max(ready):>7.3f} {statistics.median(served):>17.3f}"
        )
    print(f"goal: in-process ready < {GOAL_IN_PROCESS_S} s")


if __name__ == "__main__":
    main()
