"""Where a storage sink puts a record, with the settings of Confluent's storage sinks (S3,
HDFS): the partitioner's encoded partition (``partition=0``, ``field=value``, a ``path.format``
of the record's time), the file format and the file's name ``<topic>+<partition>+<start>.<ext>``
under ``<store>/<topics.dir>/<topic>/<encoded partition>/``. Pure settings, and Spark column
expressions for the paths (no per-record Python)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import Column
from pyspark.sql import functions as F

__all__ = [
    "FORMATS",
    "PARTITIONERS",
    "SPARK_READERS",
    "Layout",
    "layout_problems",
    "store_extension",
    "store_path",
    "store_problems",
]

PARTITIONERS = {
    "DefaultPartitioner": "",
    "FieldPartitioner": "",
    "TimeBasedPartitioner": "",
    "DailyPartitioner": "'year'=YYYY/'month'=MM/'day'=dd",
    "HourlyPartitioner": "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH",
}
"""Confluent's partitioners by simple class name, with the ``path.format`` each implies."""
DAY_MS = 24 * 3600 * 1000
DURATIONS = {"DailyPartitioner": DAY_MS, "HourlyPartitioner": 3600 * 1000}
FORMATS = {
    "JsonFormat": "json",
    "ParquetFormat": "parquet",
    "CsvFormat": "csv",
    "AvroFormat": "avro",
}
"""Formats by simple class name (``io.confluent.connect.s3.format.json.JsonFormat``, ...)."""
SPARK_READERS = {"avro": "org.apache.spark.sql.avro.AvroFileFormat"}
"""Spark's reader of an extension, where it is not the extension: Spark's Avro file format is
in spark-sql's jar, but its short name ``avro`` only comes with the spark-avro jar."""
EXTRACTORS = ("Record", "RecordField", "Wallclock")


def _simple(name: str) -> str:
    return name.strip().rpartition(".")[2]


def store_path(url: str) -> Path | None:
    """The local directory of ``store.url`` (``file:///dir`` or a path), None for others."""
    parsed = urlparse(url.strip())
    if parsed.scheme not in ("", "file") or not parsed.path:
        return None
    return Path(parsed.path).absolute()


def store_problems(config: Mapping[str, str]) -> dict[str, list[str]]:
    """The problems of ``store.url`` and ``format.class`` (a storage sink's or source's)."""
    found: dict[str, list[str]] = {}
    url = config.get("store.url", "").strip()
    if not url:
        found["store.url"] = ['Missing required configuration "store.url" (a local directory)']
    elif store_path(url) is None:
        found["store.url"] = [f"strom stores in local or shared directories: {url} is not one"]
    fmt = _simple(config.get("format.class", ""))
    if fmt not in FORMATS:
        known = ", ".join(FORMATS)
        found["format.class"] = [f"Invalid value {fmt or '(none)'}: one of {known} is needed"]
    return found


def store_extension(config: Mapping[str, str]) -> str:
    """The file extension (and Spark format) of a valid ``format.class``."""
    return FORMATS[_simple(config["format.class"])]


def layout_problems(config: Mapping[str, str]) -> dict[str, list[str]]:
    """Every problem of the layout settings, keyed by setting."""
    found = store_problems(config)
    partitioner = _simple(config.get("partitioner.class", "DefaultPartitioner"))
    if partitioner not in PARTITIONERS:
        known = ", ".join(PARTITIONERS)
        found["partitioner.class"] = [f"Invalid value {partitioner}: one of {known}"]
    elif partitioner == "FieldPartitioner" and not _fields(config):
        found["partition.field.name"] = ["FieldPartitioner needs partition.field.name"]
    elif partitioner == "TimeBasedPartitioner":
        if not config.get("path.format", "").strip():
            found["path.format"] = ["TimeBasedPartitioner needs path.format"]
        if int(config.get("partition.duration.ms", "-1") or -1) <= 0:
            found["partition.duration.ms"] = ["TimeBasedPartitioner needs partition.duration.ms"]
    extractor = _simple(config.get("timestamp.extractor", "Wallclock"))
    if extractor not in EXTRACTORS:
        found["timestamp.extractor"] = [
            f"Invalid value {extractor}: one of Record, RecordField, Wallclock"
        ]
    elif extractor == "RecordField" and not config.get("timestamp.field", "").strip():
        found["timestamp.field"] = ["timestamp.extractor=RecordField needs timestamp.field"]
    return found


def _fields(config: Mapping[str, str]) -> list[str]:
    return [f.strip() for f in config.get("partition.field.name", "").split(",") if f.strip()]


def java_pattern(path_format: str) -> str:
    """Joda's ``path.format`` as Spark's datetime pattern: Joda's ``Y`` is the year of era,
    Spark's ``y`` (Spark refuses week-based years)."""
    parts = re.split(r"('[^']*')", path_format)
    return "".join(p if p.startswith("'") else p.replace("Y", "y") for p in parts)


@dataclass(frozen=True)
class Layout:
    """One sink's layout: ``encoded`` is the partitioner's column of a record (``value`` is its
    converter's JSON text; ``timestamp``, ``partition`` the record's)."""

    root: Path
    topics_dir: str
    extension: str
    partitioner: str
    fields: tuple[str, ...]
    path_format: str
    duration_ms: int
    timezone: str
    extractor: str
    timestamp_field: str
    pad: int

    @classmethod
    def of(cls, config: Mapping[str, str]) -> Layout:
        partitioner = _simple(config.get("partitioner.class", "DefaultPartitioner"))
        root = store_path(config["store.url"])
        assert root is not None  # validated
        return cls(
            root=root,
            topics_dir=config.get("topics.dir", "topics").strip().strip("/"),
            extension=store_extension(config),
            partitioner=partitioner,
            fields=tuple(_fields(config)),
            path_format=config.get("path.format", "").strip() or PARTITIONERS[partitioner],
            duration_ms=int(config.get("partition.duration.ms", "0") or 0)
            or DURATIONS.get(partitioner, 0),
            timezone=config.get("timezone", "UTC").strip() or "UTC",
            extractor=_simple(config.get("timestamp.extractor", "Wallclock")),
            timestamp_field=config.get("timestamp.field", "").strip(),
            pad=int(config.get("filename.offset.zero.pad.width", "10") or 10),
        )

    def encoded(self) -> Column:
        """The encoded partition of each record, as Confluent's partitioner names it."""
        if self.partitioner == "DefaultPartitioner":
            return F.concat(F.lit("partition="), F.col("partition").cast("string"))
        if self.partitioner == "FieldPartitioner":
            return F.concat_ws(
                "/",
                *(
                    F.concat(F.lit(f"{name}="), F.get_json_object("value", f"$.{name}"))
                    for name in self.fields
                ),
            )
        millis = self._millis()
        floored = millis - F.pmod(millis, F.lit(self.duration_ms))
        instant = F.timestamp_millis(floored).cast("timestamp_ntz")
        # the session's wall clock of the instant, moved to ``timezone``'s
        local = F.convert_timezone(F.current_timezone(), F.lit(self.timezone), instant)
        return F.date_format(local, java_pattern(self.path_format))

    def _millis(self) -> Column:
        if self.extractor == "Record":
            return F.unix_millis(F.col("timestamp"))
        if self.extractor == "RecordField":
            field = F.get_json_object("value", f"$.{self.timestamp_field}")
            return F.coalesce(field.cast("long"), F.unix_millis(field.cast("timestamp")))
        return F.unix_millis(F.current_timestamp())

    def directory(self, topic: Column, encoded: Column) -> Column:
        """``<store>/<topics.dir>/<topic>/<encoded>``."""
        base = f"{self.root}/{self.topics_dir}/" if self.topics_dir else f"{self.root}/"
        return F.concat(F.lit(base), topic, F.lit("/"), encoded)

    def file_name(self, topic: Column, partition: Column, start: Column) -> Column:
        """``<topic>+<partition>+<start offset, zero-padded>.<ext>``."""
        return F.concat(
            topic,
            F.lit("+"),
            partition.cast("string"),
            F.lit("+"),
            F.lpad(start.cast("string"), self.pad, "0"),
            F.lit(f".{self.extension}"),
        )
