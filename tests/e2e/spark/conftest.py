"""One local SparkSession and one ``strom server`` for every Spark test of a run (and the
end-to-end tests' PostgreSQL, ``postgres`` of ``tests/e2e/conftest.py``, for the JDBC and CDC
connectors).

The server is the integration tests' (``tests/strom_harness.py``); the session is
``strom.spark.session()`` on ``local[2]`` with the UI off, two shuffle partitions and a quick
JVM (skipped without Java). Tests use topics of their own and ``clients.py`` to create, fill and
read them with confluent-kafka directly, so what Spark reads or writes is checked by a plain
client.
"""

from __future__ import annotations

import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from strom_harness import StromServer, start_strom_server

import strom.spark
from e2e.spark.clients import SERVER_OVERRIDES

QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""The JIT's first tier only, and the serial collector: the tests' queries are many and small,
and C2's compiler threads and a parallel collector only compete for two cores (measured: the
read and write tests ran in 85% of the time)."""


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StromServer]:
    """One ``strom server`` for all Spark tests."""
    base = tmp_path_factory.mktemp("strom-spark")
    server = start_strom_server(data_dir=base / "data", cwd=base, overrides=SERVER_OVERRIDES)
    yield server
    server.stop(signal.SIGTERM)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The run's one SparkSession, with the ``strom`` format registered."""
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java (make test installs it when it can)")
    session = strom.spark.session(
        master="local[2]",
        app_name="strom-tests",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.extraJavaOptions": QUICK_JVM,
        },
    )
    yield session
    session.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With ``pytest -n``, every test of the shared session runs in one worker: one JVM, one
    session. Modules that start Spark processes of their own (the examples, a standalone
    cluster) are groups of their own, free to run on the other worker meanwhile."""
    spark_tests = Path(__file__).parent
    for item in items:
        if spark_tests in item.path.parents:
            uses_session = "spark" in getattr(item, "fixturenames", ())
            group = "spark" if uses_session else f"spark-{item.path.stem}"
            item.add_marker(pytest.mark.xdist_group(group))
