"""Pull queries (`SELECT ... FROM table [WHERE key = ...]`, no EMIT CHANGES): the rows of a
table's materialized state (`materialized.TableState`, kept by the engine for the tables of
`CREATE TABLE ... AS SELECT` and `CREATE SOURCE TABLE`), looked up by key or scanned, then
projected. No topic read, no Spark job.

What a pull query may say is ksqlDB's subset: columns (or `*`), and a WHERE on the key: `=` or
`IN` with literals; without one it is a table scan, refused (with ksqlDB's message) when
`ksql.query.pull.table.scan.enabled` is false.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from strom.sql import entities
from strom.sql import expressions as ex
from strom.sql import statements as st
from strom.sql.analyzer import OutputColumn, analyze
from strom.sql.errors import SqlSemanticError
from strom.sql.materialized import TableState

__all__ = ["TABLE_SCAN", "PullQuery", "not_queryable"]

TABLE_SCAN = "ksql.query.pull.table.scan.enabled"
_SYNTAX_HELP = (
    " See https://cnfl.io/queries for more info.\nAdd EMIT CHANGES if you intended to issue a "
    "push query."
)


def not_queryable(name: str) -> SqlSemanticError:
    """ksqlDB's error for a pull query on a table that has no materialized state."""
    return SqlSemanticError(
        f"The `{name}` table isn't queryable. To derive a queryable table, you can do "
        f"'CREATE TABLE QUERYABLE_{name} AS SELECT * FROM {name}'.{_SYNTAX_HELP}"
    )


def _literal(e: ex.Expression) -> object:
    match e:
        case ex.StringLiteral(v) | ex.IntegerLiteral(v) | ex.BooleanLiteral(v):
            return v
        case ex.DoubleLiteral(v):
            return v
    raise SqlSemanticError("A pull query's WHERE compares the key with literals only.")


def _wanted_keys(where: ex.Expression | None, key: str) -> list[object] | None:
    """The key values the WHERE asks for; None for every row (a table scan)."""
    match where:
        case None:
            return None
        case ex.Comparison("=", ex.ColumnRef(name), value) if name == key:
            return [_literal(value)]
        case ex.Comparison("=", value, ex.ColumnRef(name)) if name == key:
            return [_literal(value)]
        case ex.InList(ex.ColumnRef(name), items, False) if name == key:
            return [_literal(i) for i in items]
    raise SqlSemanticError(
        f"Unsupported pull query WHERE: only {key} = literal or {key} IN (literals) are "
        "supported yet."
    )


class PullQuery:
    """One pull query; `rows` yields the matching rows of the table's state."""

    final_message = None

    def __init__(self, state: TableState, query: st.Query, *, table_scan: bool) -> None:
        source = state.source
        if source.windowed or query.window or query.group_by or query.partition_by:
            raise SqlSemanticError("Windows and grouping are not supported in pull queries yet.")
        resolved = analyze(query, {source.name: source.schema})
        self.names: list[str] = []
        for item in query.select:
            if isinstance(item, st.AllColumns):
                self.names += [c.name for c in source.columns]
            elif isinstance(item, st.SingleColumn) and isinstance(item.expression, ex.ColumnRef):
                self.names.append(item.expression.name)
            else:
                raise SqlSemanticError("A pull query selects columns only (or *), yet.")
        keys = {c.name for c in source.keys}
        self.columns: tuple[OutputColumn, ...] = tuple(
            OutputColumn(c.name, c.type, name in keys)
            for c, name in zip(resolved.columns, self.names, strict=True)
        )
        self.id = f"query_{uuid.uuid4().int % 10**13}"
        self.limit = query.limit
        self._wanted = _wanted_keys(query.where, source.keys[0].name)
        if self._wanted is None and not table_scan:
            raise SqlSemanticError(
                "Query requires table scan to be enabled. Table scans can be enabled by "
                f"setting {TABLE_SCAN}=true"
            )
        self._state = state

    def header(self) -> Mapping[str, Any]:
        return entities.stream_header(self.id, self.columns)

    def schema(self) -> str:
        return entities.query_schema(self.columns)

    def rows(self) -> Iterator[list[Any] | None]:
        found = self._state.rows(self._wanted)
        for row in found[: self.limit] if self.limit is not None else found:
            yield [row.get(name) for name in self.names]

    def close(self) -> None:
        """Nothing runs after the rows: there is nothing to stop."""
