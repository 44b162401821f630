"""How long a test broker takes from nothing to serving, in-process and as a child process.

Prints the median and the spread over ``--runs`` starts of ``strom.testing.Broker`` (an event
loop thread in this process, strom already imported), of the first ``Broker()`` of a fresh
interpreter, imports included (goal under 0.5 s), of ``Broker(process=True)`` (a ``strom
server`` child: a new interpreter importing strom), and of ``make run``'s command (``strom
server --listener HOST:PORT --data-dir DIR`` in a new directory), timed from the command to its
listener answering an ApiVersions request (goal under 1 s). Each start is timed until the broker
is ready; the next column is until it has answered a Metadata request from confluent-kafka, and
the CPU column the CPU seconds the start took until ready (the fresh interpreter's from its
import of strom, ``make run``'s whole process), which a machine shared with other work moves
much less than the wall-clock time. Then the same for ``strom --help`` (a new interpreter each
run; goal under 0.3 s) beside ``python -c pass``, with the number of modules each imports.
Run: ``.venv/bin/python -m bench.startup [--runs 10]``.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from confluent_kafka.admin import AdminClient

from strom.testing import Broker

GOAL_IN_PROCESS_S = 0.5
"""Import plus the first embedded broker of a fresh interpreter."""
GOAL_PROCESS_S = 1.0
"""A ``strom server`` process ready (``make run``)."""
GOAL_HELP_S = 0.3


Start = tuple[float, float, float | None]
"""Seconds until ready, until a client was served, and the CPU seconds the start took (None:
not measured). On a machine shared with other work the CPU time moves much less than the
wall-clock time, which waits for the cores."""


def time_start(*, process: bool) -> Start:
    """Seconds until the broker is ready, and until a client got its metadata."""
    started = time.monotonic()
    with Broker(process=process) as broker:
        ready = time.monotonic() - started
        AdminClient(broker.admin_config()).list_topics(timeout=10)
        served = time.monotonic() - started
    return ready, served, None


FRESH = """
import time
from confluent_kafka.admin import AdminClient
started, cpu = time.monotonic(), time.process_time()
from strom.testing import Broker
with Broker() as broker:
    ready, cpu = time.monotonic() - started, time.process_time() - cpu
    AdminClient(broker.admin_config()).list_topics(timeout=10)
    print(ready, time.monotonic() - started, cpu)
"""
"""A fresh interpreter's import of strom and first ``Broker()`` (confluent-kafka's import,
which the bench needs for its Metadata request, is not counted)."""


def time_fresh() -> Start:
    result = subprocess.run([sys.executable, "-c", FRESH], check=True, capture_output=True)
    ready, served, cpu = result.stdout.split()
    return float(ready), float(served), float(cpu)


API_VERSIONS_V0 = struct.pack(">ihhih5s", 2 + 2 + 4 + 2 + 5, 18, 0, 1, 5, b"bench")
"""A whole ApiVersions v0 request (size, api key 18, version 0, correlation id 1, client id)."""


def answers_api_versions(address: tuple[str, int]) -> bool:
    """True when the listener at ``address`` answers an ApiVersions request without an error."""
    try:
        with socket.create_connection(address, timeout=5) as connection:
            connection.sendall(API_VERSIONS_V0)
            answer = b""
            while len(answer) < 10:  # size, correlation id, error code
                chunk = connection.recv(4096)
                if not chunk:
                    return False
                answer += chunk
    except OSError:
        return False
    _, correlation_id, error_code = struct.unpack_from(">iih", answer)
    return bool(correlation_id == 1 and error_code == 0)


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` has used so far (Linux's ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def time_make_run() -> Start:
    """Seconds from ``make run``'s command to its listener answering ApiVersions (twice: the
    table's two columns are the same figure here), and the CPU time the process took."""
    with socket.socket() as probe:  # a free port for the listener
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = Path(sys.executable).with_name("strom")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "strom"]
    with tempfile.TemporaryDirectory() as data_dir:
        started = time.monotonic()
        child = subprocess.Popen(
            [*command, "server", "--listener", f"127.0.0.1:{port}", "--data-dir", data_dir],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while not answers_api_versions(("127.0.0.1", port)):
                if child.poll() is not None:
                    raise RuntimeError(f"strom server exited with code {child.returncode}")
                time.sleep(0.005)
            ready, cpu = time.monotonic() - started, cpu_seconds(child.pid)
        finally:
            child.terminate()
            child.wait()
    return ready, ready, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    time_start(process=False)  # the first start pays for this process's imports
    print(
        f"{'mode':<26} {'ready s (median)':>17} {'min':>7} {'max':>7} "
        f"{'first Metadata s':>17} {'CPU s':>7} {'goal s':>7}"
    )
    modes: dict[str, tuple[Callable[[], Start], float | None]] = {
        "in-process": (partial(time_start, process=False), None),
        "fresh interpreter": (time_fresh, GOAL_IN_PROCESS_S),
        "process (strom server)": (partial(time_start, process=True), GOAL_PROCESS_S),
        "make run (ApiVersions)": (time_make_run, GOAL_PROCESS_S),
    }
    for label, (start, goal) in modes.items():
        results = [start() for _ in range(runs)]
        ready = [r for r, _, _ in results]
        served = [s for _, s, _ in results]
        cpu = [c for _, _, c in results if c is not None]
        print(
            f"{label:<26} {statistics.median(ready):>17.3f} {min(ready):>7.3f} "
            f"{max(ready):>7.3f} {statistics.median(served):>17.3f} "
            f"{f'{statistics.median(cpu):.3f}' if cpu else '':>7} "
            f"{'' if goal is None else f'< {goal}':>7}"
        )
    print(f"\n{'command':<22} {'s (median)':>11} {'min':>7} {'max':>7} {'modules':>8}")
    for label, argv in COMMANDS.items():
        commands = [time_command(argv) for _ in range(runs)]
        times = [t for t, _ in commands]
        print(
            f"{label:<22} {statistics.median(times):>11.3f} {min(times):>7.3f} "
            f"{max(times):>7.3f} {commands[0][1]:>8}"
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
