"""strom's own JVM code for Spark (``jvm/*.java``): compiled at first use against this
PySpark's jars into a jar kept in the user's cache (no network: ``javac`` from a JDK is all it
needs), which ``session()`` puts on the driver's and executors' class path.

``ConfluentAvro`` decodes and encodes Avro in Confluent's schema-registry wire format with
spark-sql's own Avro converters (the ones of Spark's built-in Avro file format), where PySpark's
``from_avro``/``to_avro`` need the separate spark-avro package."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pyspark
from pyspark.sql import Column, SparkSession

__all__ = ["JvmBuildError", "avro_decode", "avro_encode", "jar"]

_SOURCES = sorted((Path(__file__).parent / "jvm").glob("*.java"))
_CLASS = "strom.spark.ConfluentAvro"


class JvmBuildError(RuntimeError):
    """strom's JVM code could not be compiled here (no JDK)."""


def _cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "strom" / "jvm"


def jar() -> Path:
    """The jar of strom's JVM code for this PySpark, compiled now if it is not yet."""
    digest = hashlib.sha256(pyspark.__version__.encode())
    for source in _SOURCES:
        digest.update(source.read_bytes())
    target = _cache() / f"strom-spark-{digest.hexdigest()[:16]}.jar"
    if target.exists():
        return target
    javac = shutil.which("javac")
    if javac is None:
        raise JvmBuildError(
            "strom's Avro format on Spark compiles a small Java class at first use, and "
            "this machine has no javac: install a JDK (apt-get install openjdk-17-jdk-headless)"
        )
    jars = Path(pyspark.__file__).parent / "jars"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        classes = Path(work) / "classes"
        built = subprocess.run(
            [javac, "-nowarn", "-cp", f"{jars}/*", "-d", str(classes), *map(str, _SOURCES)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if built.returncode != 0:
            raise JvmBuildError(f"compiling strom's JVM code failed: {built.stderr.strip()}")
        partial = Path(work) / "strom.jar"
        with zipfile.ZipFile(partial, "w") as out:
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        partial.replace(target)  # atomic: a concurrent first use finds a whole jar or none
    return target


def _avro() -> object:
    spark = SparkSession.active()
    assert spark._jvm is not None
    avro = spark._jvm.strom.spark.ConfluentAvro
    if type(avro).__name__ != "JavaClass":
        jar()  # says so when this machine cannot build it
        raise JvmBuildError(
            "this Spark session was started without strom's jar: start it with "
            "strom.spark.session(), or add strom.spark.jvm.jar() to its spark.jars"
        )
    return avro


def avro_decode(data: Column, schema: str) -> Column:
    """Confluent-framed Avro ``data`` decoded with the writer schema ``schema`` (JSON text)
    into a column of its Spark type (records as structs)."""
    from pyspark.sql.classic.column import Column as ClassicColumn  # noqa: PLC0415

    return ClassicColumn(_avro().decode(data._jc, schema))  # type: ignore[attr-defined]


def avro_encode(data: Column, ddl: str, schema: str, schema_id: int) -> Column:
    """``data`` (of the Spark type ``ddl``) as Avro of ``schema``, framed with ``schema_id``."""
    from pyspark.sql.classic.column import Column as ClassicColumn  # noqa: PLC0415

    jc = _avro().encode(data._jc, ddl, schema, schema_id)  # type: ignore[attr-defined]
    return ClassicColumn(jc)
