"""Spark's Python workers must import strom: the check ``strom.spark.register`` makes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark

from strom.spark.session import WORKER_SITE, worker_python_problem


def test_this_interpreter_is_fine() -> None:
    assert worker_python_problem(sys.executable) is None


def test_an_interpreter_that_cannot_import_strom_is_named_with_the_fix(tmp_path: Path) -> None:
    python = tmp_path / "python3"
    python.write_text("#!/bin/sh\nexit 1\n")  # as a Python without strom answers the import
    python.chmod(0o755)
    problem = worker_python_problem(str(python))
    assert problem is not None
    assert f"would run {python}, which cannot import strom" in problem
    assert f"PYSPARK_PYTHON={sys.executable}" in problem and "spark.pyspark.python" in problem


def test_a_missing_interpreter_is_named() -> None:
    assert worker_python_problem("no-such-python-3.99") == (
        "Spark's Python workers would run 'no-such-python-3.99', which is not found"
    )


def test_without_the_spark_extra_the_import_says_what_to_install() -> None:
    blocked = "import sys; sys.modules['pyspark'] = None; import strom.spark"
    result = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "ImportError: strom.spark needs pyspark, which this environment lacks: "
        "pip install 'strom[spark]'"
    )


def test_workers_import_the_installed_pyspark_not_the_zip_spark_puts_first() -> None:
    installed = Path(pyspark.__file__)
    lib = installed.parent / "python" / "lib"
    spark_path = [str(lib / "pyspark.zip"), *map(str, sorted(lib.glob("py4j-*-src.zip")))]
    probe = "import pyspark, py4j; print(pyspark.__file__); print(py4j.__file__)"
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": os.pathsep.join([*spark_path, WORKER_SITE])},  # as Spark builds it
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    pyspark_file, py4j_file = result.stdout.split()
    assert pyspark_file == str(installed)
    assert ".zip" not in py4j_file
