"""A streaming Spark data source of a PostgreSQL database's row changes, read from a logical
replication slot through SQL (``pg_logical_slot_peek_binary_changes`` with ``pgoutput``):
on the driver, a micro-batch ends at the newest committed transaction's end LSN the slot has; an
executor peeks the slot up to that LSN and decodes the transactions after the start
(``pgoutput.changes``); a completed batch's LSN is confirmed to the slot
(``pg_replication_slot_advance``, so PostgreSQL may recycle the WAL before it) and written as the
connector's offset. A first batch may be the initial snapshot: each table's rows, op ``r``.

The offset is Debezium's ``{"lsn": N}``, with ``"snapshot": true`` while the snapshot is still
to be read."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from strom.connect.connectors.cdc.pgoutput import changes
from strom.connect.connectors.jdbc.database import connect, quote_table
from strom.connect.connectors.offset_writer import OffsetWriter

__all__ = ["ROW", "ChangeSource"]

ROW = (
    "table string, op string, snapshot string, lsn long, xid long, ts_ms long,"
    " before array<string>, after array<string>"
)
"""A change as the source gives it: column values as PostgreSQL's text, in column order."""
_OPTIONS = "'proto_version', '1', 'publication_names', {publication}"


class ChangeSource(DataSource):
    """Options: ``connection`` (psycopg's settings, JSON), ``slot``, ``publication``,
    ``tables`` (``{"schema.table": [column, ...]}`` for the snapshot, JSON), ``offset`` (where a
    new query starts, JSON), ``max.changes`` (per batch, about), and for the offsets topic
    ``connector``, ``partition`` (JSON), ``offsets.topic`` and ``client``."""

    @classmethod
    def name(cls) -> str:
        return "strom-connect-postgres-cdc"

    def schema(self) -> str:
        return ROW

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return _ChangeReader(dict(self.options))


@dataclass(frozen=True)
class _Snapshot(InputPartition):
    table: str
    columns: tuple[str, ...]
    lsn: int


@dataclass(frozen=True)
class _Changes(InputPartition):
    start: int
    end: int


def _peek(publication: str) -> str:
    from psycopg import sql  # noqa: PLC0415

    return _OPTIONS.format(publication=sql.quote(publication))


class _ChangeReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.settings: dict[str, Any] = json.loads(options["connection"])
        self.slot = options["slot"]
        self.options = _peek(options["publication"])
        self.tables: dict[str, list[str]] = json.loads(options["tables"])
        self.start: dict[str, Any] = json.loads(options["offset"])
        self.max_changes = int(options.get("max.changes", "2048"))
        self._confirmed: dict[str, Any] | None = None
        self.offsets = OffsetWriter(
            json.loads(options["client"]),
            options["offsets.topic"],
            options["connector"],
            json.loads(options["partition"]),
        )

    def initialOffset(self) -> dict[str, Any]:
        return self.start

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        # Spark plans a micro-batch once the one before it completed: ``start`` is done.
        self.commit(start)
        if start.get("snapshot"):
            return {"lsn": start["lsn"]}
        with connect(self.settings) as connection:
            found = connection.execute(
                "SELECT (lsn - '0/0')::int8 FROM pg_logical_slot_peek_binary_changes("
                f"%s, NULL, %s, {self.options}) WHERE get_byte(data, 0) = 67"
                " ORDER BY lsn DESC LIMIT 1",
                (self.slot, self.max_changes),
            ).fetchone()
        return {"lsn": max(int(start["lsn"]), found[0])} if found else dict(start)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        parts: list[InputPartition] = []
        if start.get("snapshot"):
            lsn = int(start["lsn"])
            parts += [_Snapshot(t, tuple(c), lsn) for t, c in self.tables.items()]
        if int(end["lsn"]) > int(start["lsn"]):
            parts.append(_Changes(int(start["lsn"]), int(end["lsn"])))
        return parts

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        if isinstance(partition, _Snapshot):
            return self._snapshot(partition)
        assert isinstance(partition, _Changes)
        return self._changes(partition)

    def _snapshot(self, part: _Snapshot) -> Iterator[tuple[Any, ...]]:
        columns = ", ".join(f'"{c}"::text' for c in part.columns)
        now = int(time.time() * 1000)
        with connect(self.settings) as connection:
            cursor = connection.execute(f"SELECT ARRAY[{columns}] FROM {quote_table(part.table)}")
            for (row,) in cursor:
                yield (part.table, "r", "true", part.lsn, None, now, None, row)

    def _changes(self, part: _Changes) -> Iterator[tuple[Any, ...]]:
        with connect(self.settings) as connection:
            messages = connection.execute(
                "SELECT (lsn - '0/0')::int8, data FROM pg_logical_slot_peek_binary_changes("
                f"%s, '0/0'::pg_lsn + %s::numeric, NULL, {self.options})",
                (self.slot, part.end),
            )
            for change in changes(messages):
                if part.start < change.end_lsn <= part.end:
                    table = f"{change.relation.schema}.{change.relation.name}"
                    yield (
                        table,
                        change.op,
                        "false",
                        change.end_lsn,
                        change.xid,
                        change.ts_ms,
                        change.before,
                        change.after,
                    )

    def commit(self, end: dict[str, Any]) -> None:
        """Confirm ``end`` to the slot and write it as the connector's offset."""
        if end == self._confirmed:
            return
        with connect(self.settings) as connection:
            connection.execute(
                "SELECT pg_replication_slot_advance(slot_name, '0/0'::pg_lsn + %s::numeric)"
                " FROM pg_replication_slots WHERE slot_name = %s"
                " AND confirmed_flush_lsn < '0/0'::pg_lsn + %s::numeric",
                (int(end["lsn"]), self.slot, int(end["lsn"])),
            )
        self.offsets.store(end)
        self._confirmed = dict(end)
