"""Pull queries (`SELECT ... FROM table [WHERE key = ...]`, no EMIT CHANGES): the rows of a
table's materialized state (`materialized.TableState`, kept by the engine for the tables of
`CREATE TABLE ... AS SELECT` and `CREATE SOURCE TABLE`), looked up by key or scanned, then
projected. No topic read, no Spark job.

What a pull query may say is ksqlDB's subset: columns (or `*`; a windowed table's is its key
columns, WINDOWSTART, WINDOWEND, then its values), and a WHERE of comparisons of columns with
literals (`row_filter`). One that looks keys up (`KEY = literal` or `KEY IN (...)` for every key
column, ANDed with anything else: window bounds, values) reads those keys only; any other is a
table scan (a key range too), refused with ksqlDB's message when
`ksql.query.pull.table.scan.enabled` is false.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from strom.sql import entities
from strom.sql import expressions as ex
from strom.sql import statements as st
from strom.sql import types as ty
from strom.sql.analyzer import OutputColumn, analyze
from strom.sql.errors import SqlSemanticError
from strom.sql.materialized import BOUNDS, Key, TableState
from strom.sql.row_filter import row_filter

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


def _literal(e: ex.Expression) -> tuple[object] | None:
    match e:
        case (
            ex.StringLiteral(v) | ex.IntegerLiteral(v) | ex.BooleanLiteral(v) | ex.DoubleLiteral(v)
        ):
            return (v,)
    return None


def _key_lookup(where: ex.Expression | None, key: str) -> list[object] | None:
    """The key values a WHERE looks up (`KEY = literal`, `KEY IN (literals)`, either ANDed
    with more conditions); None when it looks up no key (a table scan)."""
    match where:
        case ex.Comparison("=", ex.ColumnRef(name), value) | ex.Comparison(
            "=", value, ex.ColumnRef(name)
        ) if name == key and (found := _literal(value)):
            return [found[0]]
        case ex.InList(ex.ColumnRef(name), items, False) if name == key:
            values = [_literal(i) for i in items]
            return None if None in values else [v[0] for v in values if v]
        case ex.Logical("AND", left, right):
            keys = _key_lookup(left, key)
            return keys if keys is not None else _key_lookup(right, key)
    return None


def _keys_looked_up(where: ex.Expression | None, keys: tuple[str, ...]) -> list[Key] | None:
    """Every key a WHERE looks up (the product of each key column's values), or None (a scan)."""
    values = [_key_lookup(where, k) for k in keys]
    if any(v is None for v in values):
        return None
    return list(itertools.product(*(v for v in values if v is not None)))


class PullQuery:
    """One pull query; `rows` yields the matching rows of the table's state."""

    final_message = None

    def __init__(self, state: TableState, query: st.Query, *, table_scan: bool) -> None:
        source = state.source
        if query.window or query.group_by or query.partition_by:
            raise SqlSemanticError("Windows and grouping are not supported in pull queries yet.")
        resolved = iter(analyze(query, {source.name: source.schema}).columns)
        keys = {c.name for c in source.keys}
        bounds = [OutputColumn(b, ty.BIGINT, True) for b in BOUNDS] if source.windowed else []
        self.names: list[str] = []
        """The row's column each output column reads."""
        columns: list[OutputColumn] = []
        for item in query.select:
            if isinstance(item, st.AllColumns):
                every = [next(resolved) for _ in source.columns]
                star = [c for c in every if c.key] + bounds + [c for c in every if not c.key]
                columns += star
                self.names += [c.name for c in star]
            elif isinstance(item, st.SingleColumn) and isinstance(item.expression, ex.ColumnRef):
                name = item.expression.name
                got = next(resolved)
                columns.append(OutputColumn(got.name, got.type, name in keys or name in BOUNDS))
                self.names.append(name)
            else:
                raise SqlSemanticError("A pull query selects columns only (or *), yet.")
        self.columns: tuple[OutputColumn, ...] = tuple(columns)
        self.id = f"query_{uuid.uuid4().int % 10**13}"
        self.limit = query.limit
        self._wanted = _keys_looked_up(query.where, tuple(c.name for c in source.keys))
        self._filter = row_filter(query.where) if query.where is not None else None
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
        if self._filter is not None:
            found = [row for row in found if self._filter(row)]
        for row in found[: self.limit] if self.limit is not None else found:
            yield [row.get(name) for name in self.names]

    def close(self) -> None:
        """Nothing runs after the rows: there is nothing to stop."""
