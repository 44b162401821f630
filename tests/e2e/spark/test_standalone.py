"""A pipeline on a real Spark standalone cluster: a master and a worker started with PySpark's
own ``spark-class`` on free ports, and ``examples/word_count.py`` run there as a driver
(``--master spark://...``), reading a topic with the strom source on the cluster's executor and
writing its counts to another topic."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pyspark
import pytest
from strom_harness import StromServer

from e2e.spark.clients import Record, consume_all, create_topic, produce, unique_topic

pytestmark = pytest.mark.timeout(300)  # a master, a worker and a driver: slow when loaded

SPARK_HOME = Path(pyspark.__file__).resolve().parent
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
START_TIMEOUT_S = 60
RUN_TIMEOUT_S = 120

LINES = ("one fish two fish", "red fish blue fish", "one two")
WORD_COUNTS = {"one": 2, "two": 2, "fish": 4, "red": 1, "blue": 1}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class SparkDaemon:
    """A master or worker JVM started with ``spark-class``, its output kept for waiting on."""

    def __init__(self, main_class: str, args: Sequence[str], env: Mapping[str, str]) -> None:
        self.main_class = main_class
        command = [str(SPARK_HOME / "bin" / "spark-class"), main_class, *args]
        self.process = subprocess.Popen(
            command,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self.lock:
                self.lines.append(line)

    @property
    def output(self) -> str:
        with self.lock:
            return "".join(self.lines)

    def wait_for(self, pattern: str, *, timeout: float = START_TIMEOUT_S) -> str:
        """The first output line matching ``pattern``; fails on exit or timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, self.output)
            if match is not None:
                return match.group(0)
            if self.process.poll() is not None:
                pytest.fail(f"{self.main_class} exited:\n{self.output[-3000:]}")
            time.sleep(0.1)
        pytest.fail(f"no {pattern!r} within {timeout} s:\n{self.output[-3000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, SparkDaemon]]:
    """A standalone master and one worker (one core, 1 GB) on loopback; the master's URL."""
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java (make test installs it when it can)")
    env = {
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM,
        "SPARK_LOG_DIR": str(tmp_path / "logs"),
    }
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    master = SparkDaemon(
        "org.apache.spark.deploy.master.Master",
        ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port())],
        env,
    )
    worker = SparkDaemon(
        "org.apache.spark.deploy.worker.Worker",
        [
            *f"--host 127.0.0.1 --webui-port {free_port()} --cores 1 --memory 1g".split(),
            *("--work-dir", str(tmp_path / "work"), url),
        ],
        env,
    )
    try:
        worker.wait_for(r"Successfully registered with master")
        yield url, worker
    finally:
        worker.stop()
        master.stop()


def test_word_count_runs_on_a_standalone_cluster(
    cluster: tuple[str, SparkDaemon], broker: StromServer
) -> None:
    url, worker = cluster
    lines = create_topic(broker.bootstrap, "standalone-lines")
    produce(broker.bootstrap, lines, [Record(line.encode()) for line in LINES])
    counts = unique_topic("standalone-counts")
    command = [sys.executable, str(EXAMPLES / "word_count.py"), "--once", "--master", url]
    command += ["--bootstrap", broker.bootstrap, "--input", lines, "--output", counts]
    for setting in (
        "spark.executor.memory=512m",
        "spark.sql.shuffle.partitions=1",  # one core: one state store, one task per stage
        f"spark.driver.extraJavaOptions={QUICK_JVM}",
        f"spark.executor.extraJavaOptions={QUICK_JVM}",
    ):
        command += ["--conf", setting]
    driver = subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=EXAMPLES, check=False
    )
    assert driver.returncode == 0, driver.stdout[-2000:] + driver.stderr[-3000:]
    # The work ran on the worker's executor, not in the driver.
    worker.wait_for(r"Asked to launch executor app-\S+ for word-count", timeout=5)
    last: dict[str, int] = {}
    for record in consume_all(broker.bootstrap, counts):
        assert record.key is not None and record.value is not None
        last[record.key.decode()] = int(record.value)
    assert last == WORD_COUNTS
