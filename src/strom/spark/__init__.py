"""strom on Spark: the ``strom`` PySpark data source, value helpers and a session helper.

    import strom.spark
    spark = strom.spark.session()          # a local SparkSession with the format registered
    strom.spark.register(spark)            # or: make "strom" available in a session of yours

    values = df.select(strom.spark.decode_value(df.value, "json", schema).alias("v"))

See docs/spark.md for every option.
"""

from __future__ import annotations

from strom.spark.formats import decode_value, encode_value, from_avro, to_avro
from strom.spark.session import register, session
from strom.spark.source import StromDataSource

__all__ = [
    "StromDataSource",
    "decode_value",
    "encode_value",
    "from_avro",
    "register",
    "session",
    "to_avro",
]
