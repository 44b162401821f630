"""ksqlDB's SQL types as frozen values: the primitives, DECIMAL(p, s), ARRAY, MAP and STRUCT.

Aliases are resolved when parsed, as ksqlDB does: INT is INTEGER, VARCHAR is STRING; the
canonical names are the ones ksqlDB writes (SqlFormatter, DESCRIBE, its error messages).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Primitive(Enum):
    """The types without parameters, by their canonical names."""

    BOOLEAN = "BOOLEAN"
    INT = "INTEGER"
    BIGINT = "BIGINT"
    DOUBLE = "DOUBLE"
    STRING = "STRING"
    BYTES = "BYTES"
    DATE = "DATE"
    TIME = "TIME"
    TIMESTAMP = "TIMESTAMP"


# The names a type may be written as, upper-cased, to the type they mean.
PRIMITIVE_NAMES: dict[str, Primitive] = {
    **{p.value: p for p in Primitive},
    "INT": Primitive.INT,
    "VARCHAR": Primitive.STRING,
}


@dataclass(frozen=True)
class PrimitiveType:
    primitive: Primitive


@dataclass(frozen=True)
class DecimalType:
    precision: int
    scale: int


@dataclass(frozen=True)
class ArrayType:
    element: SqlType


@dataclass(frozen=True)
class MapType:
    key: SqlType
    value: SqlType


@dataclass(frozen=True)
class StructField:
    name: str
    type: SqlType


@dataclass(frozen=True)
class StructType:
    fields: tuple[StructField, ...]


SqlType = PrimitiveType | DecimalType | ArrayType | MapType | StructType

BOOLEAN = PrimitiveType(Primitive.BOOLEAN)
INT = PrimitiveType(Primitive.INT)
BIGINT = PrimitiveType(Primitive.BIGINT)
DOUBLE = PrimitiveType(Primitive.DOUBLE)
STRING = PrimitiveType(Primitive.STRING)
BYTES = PrimitiveType(Primitive.BYTES)
DATE = PrimitiveType(Primitive.DATE)
TIME = PrimitiveType(Primitive.TIME)
TIMESTAMP = PrimitiveType(Primitive.TIMESTAMP)
