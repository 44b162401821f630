"""A local SparkSession set up for strom, and registering the ``strom`` format in any session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from strom.spark.jvm import JvmBuildError, jar
from strom.spark.source import StromDataSource

__all__ = ["WorkerPythonError", "activate", "register", "session", "worker_python_problem"]

LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.bind.address": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.pyspark.python": sys.executable,
}
"""Settings for one machine: no web UI, few shuffle partitions, loopback only, and
Python workers running this interpreter (so they import strom from the same environment)."""


WORKER_SITE = str(Path(__file__).with_name("worker_site"))
"""Put first on the Python workers' PYTHONPATH (``spark.executorEnv.PYTHONPATH``): its
``sitecustomize`` moves PySpark's zips, which Spark puts before everything else, behind the
installed pyspark, so workers import PySpark's compiled bytecode instead of compiling the zip's
sources in every worker process (measured in docs/benchmarks.md)."""


class WorkerPythonError(RuntimeError):
    """Spark's Python workers on this machine would run an interpreter without strom."""


def register(spark: SparkSession) -> SparkSession:
    """Make ``format("strom")`` available in ``spark``; returns it.

    With a local master, the interpreter Spark starts its Python workers with must import
    strom (Spark uses ``python3`` from PATH unless told otherwise): when it cannot, this fails
    at once with what to set, instead of a ``ModuleNotFoundError`` from inside the first job.
    """
    try:
        conf = spark.sparkContext.getConf()
    except Exception:
        conf = None
    if conf is not None and (conf.get("spark.master") or "").startswith("local"):
        problem = worker_python_problem(
            conf.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON") or "python3"
        )
        if problem is not None:
            raise WorkerPythonError(problem)
    spark.dataSource.register(StromDataSource)
    return spark


def worker_python_problem(python: str) -> str | None:
    """Why the worker interpreter ``python`` cannot run strom's data source, or None."""
    if python == sys.executable or os.path.realpath(python) == os.path.realpath(sys.executable):
        return None
    found = shutil.which(python)
    if found is None:
        return f"Spark's Python workers would run {python!r}, which is not found"
    check = subprocess.run(
        [found, "-c", "import strom.spark"], capture_output=True, timeout=60, check=False
    )
    if check.returncode == 0:
        return None
    return (
        f"Spark's Python workers would run {found}, which cannot import strom; set "
        f"PYSPARK_PYTHON={sys.executable} before the session starts, or the session's "
        f"spark.pyspark.python to it (strom.spark.session() does this)"
    )


def session(
    *,
    master: str = "local[*]",
    app_name: str = "strom",
    conf: Mapping[str, str] | None = None,
    log_level: str | None = "ERROR",
) -> SparkSession:
    """A SparkSession (the active one if any, else a new one) with ``strom`` registered.

    ``conf`` adds to or overrides ``LOCAL_CONF``; settings that only apply to a new session
    (master, UI) are ignored when one is already running. ``log_level``: Spark's log level
    (``ERROR`` keeps its warnings off the console; None leaves Spark's own setting).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # read by the JVM when it starts
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = _with_worker_site(_with_strom_jar({**LOCAL_CONF, **(conf or {})}))
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if log_level is not None:
        spark.sparkContext.setLogLevel(log_level)
    return register(spark)


def _with_strom_jar(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with strom's jar (:mod:`strom.spark.jvm`) added to ``spark.jars``; unchanged
    on a machine without a JDK (what needs the jar then says why it is missing)."""
    try:
        built = str(jar())
    except JvmBuildError:
        return conf
    return {**conf, "spark.jars": ",".join(j for j in (conf.get("spark.jars"), built) if j)}


def _with_worker_site(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with :data:`WORKER_SITE` first in ``spark.executorEnv.PYTHONPATH``."""
    key = "spark.executorEnv.PYTHONPATH"
    return {**conf, key: os.pathsep.join(p for p in (WORKER_SITE, conf.get(key)) if p)}


def activate(spark: SparkSession) -> SparkSession:
    """Make ``spark`` the active session of the calling thread; returns it.

    The JVM keeps the active session per thread, and a streaming query started from a thread
    without one cannot find the Python data sources registered in the session (``strom``
    included): a service that starts queries from its own threads calls this first.
    """
    assert spark._jvm is not None
    SparkSession._get_j_spark_session_class(spark._jvm).setActiveSession(spark._jsparkSession)
    return spark
