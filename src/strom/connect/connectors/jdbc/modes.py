"""The JDBC source's query modes, without I/O: for ``bulk``, ``incrementing``, ``timestamp``
and ``timestamp+incrementing``, the SQL that finds how far new rows reach (a micro-batch's end
offset) and the SQL that reads the rows between two offsets. Offsets are those of Confluent's
JDBC source: ``{"incrementing": N}``, ``{"timestamp": ms, "timestamp_nanos": ns}`` (ns within
the second), or both; bulk's is a poll count Spark needs and Connect's topic never sees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg import sql

__all__ = ["Mode", "micros_of", "offset_of"]

Offset = dict[str, Any]


def micros_of(offset: Offset) -> int | None:
    """The microseconds since the epoch of an offset's timestamp, or None."""
    if "timestamp" not in offset:
        return None
    millis = int(offset["timestamp"])
    if "timestamp_nanos" not in offset:
        return millis * 1000
    return (millis // 1000) * 1_000_000 + int(offset["timestamp_nanos"]) // 1000


def offset_of(micros: int | None, incrementing: int | None) -> Offset:
    """Confluent's offset of a timestamp (epoch microseconds) and an incrementing value."""
    offset: Offset = {}
    if incrementing is not None:
        offset["incrementing"] = incrementing
    if micros is not None:
        offset["timestamp"] = micros // 1000
        offset["timestamp_nanos"] = (micros % 1_000_000) * 1000
    return offset


def _instant(micros: int) -> sql.Composed:
    return sql.SQL("(timestamptz 'epoch' + {} * interval '1 microsecond')").format(
        sql.Literal(micros)
    )


@dataclass(frozen=True)
class Mode:
    """One source's mode: ``source`` is a quoted table or a parenthesized query."""

    name: str
    source: str
    incrementing: str | None = None
    timestamp: str | None = None

    def initial(self) -> Offset:
        """Where a source without a stored offset starts: every row."""
        if self.name == "bulk":
            return {"polls": 0}
        return {"incrementing": -1} if self.name == "incrementing" else {}

    def _after(self, offset: Offset) -> sql.Composed:
        """Rows beyond ``offset``."""
        inc = sql.Identifier(self.incrementing or "")
        last = sql.Literal(int(offset.get("incrementing", -1)))
        micros = micros_of(offset)
        if self.name == "incrementing":
            return sql.SQL("{} > {}").format(inc, last)
        if micros is None:
            return sql.SQL("TRUE").format()
        ts, at = sql.Identifier(self.timestamp or ""), _instant(micros)
        if self.name == "timestamp":
            return sql.SQL("{} > {}").format(ts, at)
        return sql.SQL("({ts} > {at} OR ({ts} = {at} AND {inc} > {last}))").format(
            ts=ts, at=at, inc=inc, last=last
        )

    def latest(self, start: Offset) -> sql.Composed | None:
        """The query of the newest row's (micros, incrementing), None for bulk."""
        source = sql.SQL(self.source)
        after = self._after(start)
        if self.name == "bulk":
            return None
        if self.name == "incrementing":
            return sql.SQL("SELECT NULL::int8, max({inc}) FROM {src} AS q WHERE {after}").format(
                inc=sql.Identifier(self.incrementing or ""), src=source, after=after
            )
        ts = sql.Identifier(self.timestamp or "")
        micros = sql.SQL("(extract(epoch from {}) * 1000000)::int8").format(ts)
        inc: sql.Composable = sql.SQL("NULL::int8")
        if self.incrementing:
            inc = sql.Identifier(self.incrementing)
        order = sql.SQL(", ").join([sql.SQL("{} DESC").format(ts), sql.SQL("{} DESC").format(inc)])
        return sql.SQL(
            "SELECT {micros}, {inc} FROM {src} AS q WHERE {after} AND {ts} < clock_timestamp()"
            " ORDER BY {order} LIMIT 1"
        ).format(micros=micros, inc=inc, src=source, after=after, ts=ts, order=order)

    def end(self, start: Offset, found: tuple[Any, Any] | None) -> Offset:
        """The end offset of a batch from ``start``, given the row ``latest`` found."""
        if self.name == "bulk":
            return {"polls": int(start["polls"]) + 1}
        if found is None or (found[0] is None and found[1] is None):
            return start
        micros, incrementing = found
        return offset_of(micros, incrementing)

    def rows(self, select: sql.Composable, start: Offset, end: Offset) -> sql.Composed:
        """The query of the rows after ``start`` up to ``end``, in offset order."""
        query = sql.SQL("SELECT {} FROM {} AS q").format(select, sql.SQL(self.source))
        if self.name == "bulk":
            return query
        keys = [k for k in (self.timestamp, self.incrementing) if k]
        where = sql.SQL("{} AND NOT {}").format(self._after(start), self._after(end))
        order = sql.SQL(", ").join(sql.Identifier(k) for k in keys)
        return sql.SQL("{} WHERE {} ORDER BY {}").format(query, where, order)
