"""The JDBC sink's statements on PostgreSQL, one transaction per table and batch: the table
made or widened to the records' fields (``auto.create``, ``auto.evolve``), the rows copied in
bulk (``COPY ... FROM STDIN (FORMAT csv)``, straight into the table for ``insert``, else into a
temporary staging table), then ``INSERT ... ON CONFLICT`` (``upsert``), ``UPDATE ... FROM``
(``update``), and ``DELETE`` of the tombstones' keys."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from psycopg import sql

from strom.connect.connectors.jdbc.database import quote_table
from strom.connect.connectors.jdbc.schemas import Field

if TYPE_CHECKING:
    import psycopg
    import pyarrow as pa

__all__ = ["TableWrite", "write"]


@dataclass(frozen=True)
class TableWrite:
    """What one batch does to one table: ``rows`` (text columns named as ``fields``) and
    ``deletes`` (the key columns of tombstones)."""

    table: str
    fields: list[Field]
    keys: list[str]
    mode: str
    auto_create: bool
    auto_evolve: bool
    rows: pa.Table | None = None
    deletes: pa.Table | None = None


def _csv(table: pa.Table) -> bytes:
    """COPY's CSV of a table of text columns: nulls unquoted and empty, values quoted."""
    import pyarrow as pa  # noqa: PLC0415
    from pyarrow import csv  # noqa: PLC0415

    out = pa.BufferOutputStream()
    csv.write_csv(table, out, csv.WriteOptions(include_header=False, quoting_style="all_valid"))
    return bytes(out.getvalue())


def _columns(connection: psycopg.Connection[Any], table: str) -> set[str] | None:
    found = connection.execute("SELECT to_regclass(%s)", (quote_table(table),)).fetchone()
    if found is None or found[0] is None:
        return None
    rows = connection.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0"
        " AND NOT attisdropped",
        (quote_table(table),),
    ).fetchall()
    return {row[0] for row in rows}


def _prepare(connection: psycopg.Connection[Any], job: TableWrite) -> None:
    """Make or widen the table as the settings allow; ``ValueError`` with Confluent's words
    when they do not."""
    target = sql.SQL(quote_table(job.table))
    existing = _columns(connection, job.table)
    if existing is None:
        if not job.auto_create:
            raise ValueError(f"Table {job.table} is missing and auto-creation is disabled")
        defs = [
            sql.SQL("{} {}{}").format(
                sql.Identifier(f.name),
                sql.SQL(f.sql_type),
                sql.SQL("" if f.optional else " NOT NULL"),
            )
            for f in job.fields
        ]
        if job.keys:
            keys = sql.SQL(", ").join(map(sql.Identifier, job.keys))
            defs.append(sql.SQL("PRIMARY KEY ({})").format(keys))
        connection.execute(sql.SQL("CREATE TABLE {} ({})").format(target, sql.SQL(", ").join(defs)))
        return
    missing = [f for f in job.fields if f.name not in existing]
    if not missing:
        return
    names = ", ".join(f.name for f in missing)
    if not job.auto_evolve:
        raise ValueError(
            f"Table {job.table} is missing fields ({names}) and auto-evolution is disabled"
        )
    for field in missing:
        if not field.optional:
            raise ValueError(
                f"Cannot ALTER {job.table} to add missing field {field.name}, as the field is "
                "not optional and does not have a default value"
            )
        connection.execute(
            sql.SQL("ALTER TABLE {} ADD COLUMN {} {}").format(
                target, sql.Identifier(field.name), sql.SQL(field.sql_type)
            )
        )


def _copy(connection: psycopg.Connection[Any], into: sql.Composable, table: pa.Table) -> None:
    names = sql.SQL(", ").join(map(sql.Identifier, table.column_names))
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT csv)").format(into, names)
    with connection.cursor().copy(statement) as copy:
        copy.write(_csv(table))


def _stage(connection: psycopg.Connection[Any], name: str, target: str, table: pa.Table) -> None:
    staging = sql.Identifier(name)
    connection.execute(
        sql.SQL("CREATE TEMP TABLE {} ON COMMIT DROP AS SELECT {} FROM {} WITH NO DATA").format(
            staging,
            sql.SQL(", ").join(map(sql.Identifier, table.column_names)),
            sql.SQL(quote_table(target)),
        )
    )
    _copy(connection, staging, table)


def write(connection: psycopg.Connection[Any], job: TableWrite) -> None:
    """One table's share of a batch, in one transaction."""
    target = sql.SQL(quote_table(job.table))
    with connection.transaction():
        if job.rows is not None and job.rows.num_rows:
            _prepare(connection, job)
            if job.mode == "insert":
                _copy(connection, target, job.rows)
            else:
                _stage(connection, "strom_rows", job.table, job.rows)
                connection.execute(_merge(job, target))
        if job.deletes is not None and job.deletes.num_rows and _columns(connection, job.table):
            _stage(connection, "strom_deletes", job.table, job.deletes)
            match = sql.SQL(" AND ").join(
                sql.SQL("t.{k} = d.{k}").format(k=sql.Identifier(k)) for k in job.keys
            )
            connection.execute(
                sql.SQL("DELETE FROM {} AS t USING strom_deletes AS d WHERE {}").format(
                    target, match
                )
            )


def _merge(job: TableWrite, target: sql.Composable) -> sql.Composed:
    """The statement that moves the staged rows into the table."""
    names = [f.name for f in job.fields]
    columns = sql.SQL(", ").join(map(sql.Identifier, names))
    others = [n for n in names if n not in job.keys]
    keys = sql.SQL(", ").join(map(sql.Identifier, job.keys))
    if job.mode == "update":
        if not others:
            return sql.SQL("SELECT 1").format()  # nothing but the key to update
        sets = sql.SQL(", ").join(
            sql.SQL("{c} = s.{c}").format(c=sql.Identifier(c)) for c in others
        )
        match = sql.SQL(" AND ").join(
            sql.SQL("t.{k} = s.{k}").format(k=sql.Identifier(k)) for k in job.keys
        )
        return sql.SQL("UPDATE {} AS t SET {} FROM strom_rows AS s WHERE {}").format(
            target, sets, match
        )
    action: sql.Composable = sql.SQL("NOTHING")
    if others:
        action = sql.SQL("UPDATE SET {}").format(
            sql.SQL(", ").join(
                sql.SQL("{c} = EXCLUDED.{c}").format(c=sql.Identifier(c)) for c in others
            )
        )
    return sql.SQL("INSERT INTO {} ({}) SELECT {} FROM strom_rows ON CONFLICT ({}) DO {}").format(
        target, columns, columns, keys, action
    )
