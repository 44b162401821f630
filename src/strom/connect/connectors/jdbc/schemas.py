"""Connect schemas (as JsonConverter writes them in a record's ``schema``) as the JDBC sink
needs them: the Spark type ``from_json`` reads a payload with, the column expression that turns
a payload field into its value (Connect's logical Decimal, Date and Timestamp included), and the
PostgreSQL type of the column it goes to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
)

from strom.connect.converters import DATE, DECIMAL, TIMESTAMP

__all__ = ["Field", "fields_of"]

_TYPES: dict[str, tuple[DataType, str]] = {
    "int8": (ShortType(), "smallint"),
    "int16": (ShortType(), "smallint"),
    "int32": (IntegerType(), "integer"),
    "int64": (LongType(), "bigint"),
    "float32": (FloatType(), "real"),
    "float": (FloatType(), "real"),
    "float64": (DoubleType(), "double precision"),
    "double": (DoubleType(), "double precision"),
    "boolean": (BooleanType(), "boolean"),
    "string": (StringType(), "text"),
    "bytes": (StringType(), "bytea"),  # base64 in the JSON
}


@dataclass(frozen=True)
class Field:
    """One column a record gives: its name, Connect schema, and PostgreSQL type."""

    name: str
    schema: dict[str, Any]

    @property
    def optional(self) -> bool:
        return bool(self.schema.get("optional", False))

    @property
    def logical(self) -> str | None:
        name = self.schema.get("name")
        return name if name in {DECIMAL, DATE, TIMESTAMP} else None

    @property
    def json_type(self) -> DataType:
        """How the payload holds it."""
        if self.logical == DECIMAL:
            return StringType()
        if self.schema.get("type") not in _TYPES:
            raise ValueError(
                f"field {self.name}: Connect type {self.schema.get('type')} is not "
                "supported by the JDBC sink"
            )
        return _TYPES[self.schema["type"]][0]

    @property
    def sql_type(self) -> str:
        if self.logical == DECIMAL:
            return f"numeric(38,{int(self.schema.get('parameters', {}).get('scale', 0))})"
        if self.logical == DATE:
            return "date"
        if self.logical == TIMESTAMP:
            return "timestamp"
        return _TYPES[self.schema["type"]][1]

    def value(self, payload: Column) -> Column:
        """The column's value from the payload's field (as text PostgreSQL's COPY reads)."""
        if self.logical == DECIMAL:
            scale = int(self.schema.get("parameters", {}).get("scale", 0))
            return _decimal(payload, scale).cast("string")
        if self.logical == DATE:
            return F.date_from_unix_date(payload).cast("string")
        if self.logical == TIMESTAMP:
            return F.date_format(F.timestamp_millis(payload), "yyyy-MM-dd HH:mm:ss.SSS")
        if self.schema["type"] == "bytes":
            return F.concat(F.lit("\\x"), F.hex(F.unbase64(payload)))
        return payload.cast("string")


def _decimal(base64: Column, scale: int) -> Column:
    """Connect's Decimal (base64 of the unscaled value's two's complement bytes) as a decimal
    of ``scale`` (up to 16 bytes)."""
    raw = F.unbase64(base64)
    unsigned = F.conv(F.hex(raw), 16, 10).cast("decimal(38,0)")
    negative = F.ascii(F.substring(F.hex(raw), 1, 1)) >= F.ascii(F.lit("8"))
    # 2 ** bits exactly: a double's power turns into 18446744073709552000 for 2 ** 64
    spans = [F.lit(str(2 ** (8 * n))).cast("decimal(38,0)") for n in range(16)]
    span = F.element_at(F.array(*spans), F.length(raw) + 1)
    signed = F.when(negative, unsigned - span).otherwise(unsigned)
    return (signed / F.lit(10**scale)).cast(f"decimal(38,{scale})")


def fields_of(schema: dict[str, Any], prefix: str | None) -> list[Field]:
    """A struct schema's fields, or a primitive schema as one field named ``prefix``."""
    if schema.get("type") == "struct":
        return [Field(f["field"], f) for f in schema.get("fields", [])]
    if prefix is None:
        raise ValueError(f"a {schema.get('type')} schema where a struct is needed")
    return [Field(prefix, schema)]
