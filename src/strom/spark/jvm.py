"""strom's own JVM code for Spark (``jvm/*.java``): compiled at first use against this
PySpark's jars into a jar kept in the user's cache (no network: ``javac`` from a JDK is all it
needs), which ``session()`` puts on the driver's and executors' class path.

``ConfluentAvro`` decodes and encodes Avro in Confluent's schema-registry wire format with
spark-sql's own Avro converters (the ones of Spark's built-in Avro file format), where PySpark's
``from_avro``/``to_avro`` need the separate spark-avro package. ``ConfluentProtobuf`` does the
same for Protobuf with the protobuf-java Spark ships shaded (``org.sparkproject.protobuf``),
where ``from_protobuf`` needs spark-protobuf: the ``.proto`` text is compiled here, on the
driver, and the JVM gets its descriptors. Both skip a value that is not a record of the expected
schema id (null), with an entry in ksqlDB's processing log (the ``processing`` logger)."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyspark
from pyspark.sql import Column, SparkSession

__all__ = [
    "JvmBuildError",
    "avro_decode",
    "avro_encode",
    "jar",
    "processing_log",
    "protobuf_decode",
    "protobuf_encode",
]

_SOURCES = sorted((Path(__file__).parent / "jvm").glob("*.java"))


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
            "strom's Avro and Protobuf formats on Spark compile small Java classes at first "
            "use, and this machine has no javac: install a JDK "
            "(apt-get install openjdk-17-jdk-headless)"
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


def _class(name: str) -> Any:
    spark = SparkSession.active()
    assert spark._jvm is not None
    found = getattr(spark._jvm.strom.spark, name)
    if type(found).__name__ != "JavaClass":
        jar()  # says so when this machine cannot build it
        raise JvmBuildError(
            "this Spark session was started without strom's jar: start it with "
            "strom.spark.session(), or add strom.spark.jvm.jar() to its spark.jars"
        )
    return found


def processing_log() -> Any:
    """strom's ``ProcessingLog`` of the active session's JVM: ``capture()``, then ``drain()``
    the entries its decoders logged since (``<epoch ms> <entry JSON>`` each)."""
    return _class("ProcessingLog")


def _column(jc: object) -> Column:
    from pyspark.sql.classic.column import Column as ClassicColumn  # noqa: PLC0415

    return ClassicColumn(jc)


def avro_decode(
    data: Column,
    schema: str,
    schema_id: int,
    topic: str,
    target: str = "value",
    *,
    registry: str | None = None,
) -> Column:
    """Confluent-framed Avro ``data`` of ``schema_id`` decoded with its schema ``schema``
    (JSON text) into a column of its Spark type (records as structs); a value of another id
    is read with that id's schema from ``registry`` (a URL), resolved to ``schema``; one that
    cannot be (no registry, an incompatible schema), or unreadable, is null (logged as a
    ``target``, key or value, of ``topic``)."""
    jc = data._jc
    decode = _class("ConfluentAvro").decode
    return _column(decode(jc, schema, schema_id, topic, target, registry or ""))


def avro_encode(data: Column, ddl: str, schema: str, schema_id: int) -> Column:
    """``data`` (of the Spark type ``ddl``) as Avro of ``schema``, framed with ``schema_id``."""
    jc = data._jc
    return _column(_class("ConfluentAvro").encode(jc, ddl, schema, schema_id))


def _files(schema: str) -> str:
    """The descriptors of a ``.proto`` text and of its well-known imports (imports first), as
    a base64 ``FileDescriptorSet``; the text's own file is the last."""
    from strom.registry.protobuf_schema import file_set  # noqa: PLC0415 - strom[registry]

    return base64.b64encode(file_set(schema).SerializeToString()).decode()


def protobuf_decode(
    data: Column,
    schema: str,
    schema_id: int,
    ddl: str,
    topic: str,
    *,
    target: str = "value",
    message: Sequence[int] = (0,),
) -> Column:
    """Confluent-framed Protobuf ``data`` of ``schema_id`` (the message at the indexes
    ``message``, default the first, of the ``.proto`` text ``schema``) decoded into the struct
    type ``ddl``, whose fields are matched to the message's by name in any case; a value of
    another id or message, or unreadable, is null (logged as a ``target``, key or value, of
    ``topic``)."""
    jc = data._jc
    decode = _class("ConfluentProtobuf").decode
    path = ",".join(map(str, message))
    return _column(decode(jc, _files(schema), path, schema_id, ddl, topic, target))


def protobuf_encode(
    data: Column, ddl: str, schema: str, schema_id: int, message: Sequence[int] = (0,)
) -> Column:
    """``data`` (a struct of the Spark type ``ddl``) as the message at the indexes
    ``message`` (default the first) of the ``.proto`` text ``schema``, framed with
    ``schema_id``."""
    jc = data._jc
    encode = _class("ConfluentProtobuf").encode
    return _column(encode(jc, ddl, _files(schema), ",".join(map(str, message)), schema_id))
