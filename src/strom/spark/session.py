"""A local SparkSession set up for strom, and registering the ``strom`` format in any session."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from strom.spark.source import StromDataSource

__all__ = ["register", "session"]

LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.bind.address": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.pyspark.python": sys.executable,
}
"""Settings for one machine: no web UI, few shuffle partitions, loopback only, and
Python workers running this interpreter (so they import strom from the same environment)."""


def register(spark: SparkSession) -> SparkSession:
    """Make ``format("strom")`` available in ``spark``; returns it."""
    spark.dataSource.register(StromDataSource)
    return spark


def session(
    *, master: str = "local[*]", app_name: str = "strom", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """A SparkSession (the active one if any, else a new one) with ``strom`` registered.

    ``conf`` adds to or overrides ``LOCAL_CONF``; settings that only apply to a new session
    (master, UI) are ignored when one is already running.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # read by the JVM when it starts
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**LOCAL_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    return register(builder.getOrCreate())
