"""strom on Spark: the ``strom`` PySpark data source, value helpers and a session helper.

    import strom.spark
    spark = strom.spark.session()          # a local SparkSession with the format registered
    strom.spark.register(spark)            # or: make "strom" available in a session of yours

    values = df.select(strom.spark.decode_value(df.value, "json", schema).alias("v"))
    query = strom.spark.write_stream(counts, topic="t", checkpoint=..., output_mode="update")

See docs/spark.md for every option.
"""

from __future__ import annotations

import importlib.util

_MISSING = [m for m in ("pyspark", "pyarrow", "fastavro") if importlib.util.find_spec(m) is None]
if _MISSING:
    raise ImportError(
        f"strom.spark needs {', '.join(_MISSING)}, which this environment lacks: "
        "pip install 'strom[spark]'",
        name=_MISSING[0],
    )

from strom.spark.avro import from_avro, to_avro  # noqa: E402
from strom.spark.foreach_batch import write_stream  # noqa: E402
from strom.spark.formats import decode_value, encode_value  # noqa: E402
from strom.spark.session import register, session  # noqa: E402
from strom.spark.source import StromDataSource  # noqa: E402

__all__ = [
    "StromDataSource",
    "decode_value",
    "encode_value",
    "from_avro",
    "register",
    "session",
    "to_avro",
    "write_stream",
]
