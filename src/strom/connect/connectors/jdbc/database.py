"""PostgreSQL as the JDBC connectors see it: a JDBC URL translated to psycopg's connection
settings, a connection in UTC, and the columns of a table or query with the Spark type each
becomes and the SQL expression that reads it in bulk (``COPY ... TO STDOUT (FORMAT csv)``,
parsed by Arrow): timestamps as epoch microseconds, dates as days, bytes as hex."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampType,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["Column", "columns", "connect", "connection_settings", "quote_table"]

_PREFIX = "jdbc:postgresql:"
_PARAMETERS = {"user": "user", "password": "password", "sslmode": "sslmode"}
CONNECT_TIMEOUT_S = 10


def connection_settings(url: str, user: str | None, password: str | None) -> dict[str, Any]:
    """psycopg's connection settings of a ``jdbc:postgresql://host[:port]/database[?...]``
    URL; ``connection.user``/``password`` win over the URL's. ``ValueError`` naming what is
    wrong otherwise."""
    if not url.startswith(_PREFIX + "//"):
        raise ValueError(f"{url} is not a jdbc:postgresql://host:port/database URL")
    parts = urlsplit(url.removeprefix("jdbc:"))
    database = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not database:
        raise ValueError(f"{url} names no host or no database")
    settings: dict[str, Any] = {
        "host": parts.hostname,
        "port": parts.port or 5432,
        "dbname": database,
        "connect_timeout": CONNECT_TIMEOUT_S,
        "options": "-c TimeZone=UTC",
    }
    for key, value in parse_qsl(parts.query):
        if key in _PARAMETERS:
            settings[_PARAMETERS[key]] = value
    if user:
        settings["user"] = user
    if password:
        settings["password"] = password
    return settings


_UNREACHABLE = (
    "connection refused",
    "could not connect",
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "server closed the connection unexpectedly",
    "terminating connection due to administrator command",
)
"""What PostgreSQL and libpq say of a server that is down, starting or restarting."""


def unreachable(error: BaseException) -> str | None:
    """Why ``error`` (psycopg's, or a Spark query's that carries one) is a database that
    cannot be reached for now, one line; None for any other failure."""
    direct = type(error).__name__ == "OperationalError"
    for line in str(error).splitlines():
        known = any(marker in line.lower() for marker in _UNREACHABLE)
        if known and (direct or "OperationalError" in line):
            return f"the database cannot be reached ({line.strip()})"
    return None


def connect(settings: dict[str, Any]) -> psycopg.Connection[Any]:
    """An autocommit connection (its session in UTC)."""
    import psycopg  # noqa: PLC0415 - the connect extra, imported where used

    return psycopg.connect(autocommit=True, **settings)


@dataclass(frozen=True)
class Column:
    """One column: its name, Spark type, nullability, and how COPY reads it (``select``, an
    SQL expression over the quoted name) into Arrow (``wire``: the Spark type of the text COPY
    writes, converted to ``spark_type`` by the connector)."""

    name: str
    spark_type: DataType
    nullable: bool
    select: str
    wire: DataType


_SIMPLE: dict[int, DataType] = {
    16: BooleanType(),
    20: LongType(),
    21: ShortType(),
    23: IntegerType(),
    700: FloatType(),
    701: DoubleType(),
    25: StringType(),
    1043: StringType(),
    1042: StringType(),
    19: StringType(),
}
_BYTEA, _DATE, _TIMESTAMP, _TIMESTAMPTZ, _NUMERIC = 17, 1082, 1114, 1184, 1700


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_table(table: str) -> str:
    """``schema.table`` or ``table``, each part quoted."""
    return ".".join(_ident(part) for part in table.split("."))


def _column(
    name: str, oid: int, precision: int | None, scale: int | None, nullable: bool
) -> Column:
    quoted = _ident(name)
    if oid in _SIMPLE:
        return Column(name, _SIMPLE[oid], nullable, quoted, _SIMPLE[oid])
    if oid in {_TIMESTAMP, _TIMESTAMPTZ}:
        micros = f"(extract(epoch from {quoted}) * 1000000)::int8"
        return Column(name, TimestampType(), nullable, micros, LongType())
    if oid == _DATE:
        return Column(name, DateType(), nullable, f"({quoted} - date '1970-01-01')", IntegerType())
    if oid == _BYTEA:
        return Column(name, BinaryType(), nullable, f"encode({quoted}, 'hex')", StringType())
    if oid == _NUMERIC and precision is not None and 0 < precision <= 18:
        decimal = DecimalType(precision, scale or 0)
        return Column(name, decimal, nullable, quoted, decimal)
    return Column(name, StringType(), nullable, f"{quoted}::text", StringType())


def columns(connection: psycopg.Connection[Any], source: str, table: str | None) -> list[Column]:
    """The columns of ``source`` (a quoted table, or a parenthesized query); for a table, the
    nullability PostgreSQL keeps (a query's columns are all nullable)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {source} AS q LIMIT 0")
        described = list(cursor.description or ())
        not_null: set[str] = set()
        if table is not None:
            cursor.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass"
                " AND attnum > 0 AND attnotnull AND NOT attisdropped",
                (quote_table(table),),
            )
            not_null = {row[0] for row in cursor.fetchall()}
    return [
        _column(d.name, d.type_code, d.precision, d.scale, d.name not in not_null)
        for d in described
    ]
