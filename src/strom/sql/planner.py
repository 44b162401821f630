"""A SELECT as a Spark streaming DataFrame over the `strom` source (ksqlDB's `LogicalPlanner`
and `PhysicalPlanBuilder`, here to Catalyst): the source's records decoded into its columns and
ksqlDB's pseudo-columns, then WHERE, GROUP BY with its window and aggregates, HAVING and the
projection; and the sink's `key` and `value` columns for a query that writes a topic.

The output's key columns follow ksqlDB: the grouping expressions of an aggregate, the PARTITION
BY expression (either must be in the projection), else the key columns of the source that the
projection keeps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from strom.sql import expressions as ex
from strom.sql import functions
from strom.sql import statements as st
from strom.sql import types as ty
from strom.sql.analyzer import Column as SqlColumn
from strom.sql.analyzer import OutputColumn, analyze
from strom.sql.compiler import Compiler, column
from strom.sql.errors import SqlSemanticError
from strom.sql.formatter import format_expression
from strom.sql.metastore import DataSource
from strom.sql.serde import encode, read

__all__ = [
    "DEFAULT_GRACE_MS",
    "HAVING",
    "PSEUDO",
    "Plan",
    "millis",
    "plan_query",
    "read_source",
    "sink_frame",
]

PSEUDO = ("ROWTIME", "ROWPARTITION", "ROWOFFSET")
_WINDOW = "__WINDOW"
_ROWTIME = "__ROWTIME"
_EVENT_TIME = "__TIME"
HAVING = "__HAVING"
"""An aggregate's column of whether its HAVING holds (false for NULL): a table's row that
stops passing it is deleted (`having`), so the rows that fail are kept, not filtered."""
DEFAULT_GRACE_MS = 86_400_000
"""ksqlDB's grace period of a window that names none: 24 hours."""
_UNITS_MS = {
    ex.TimeUnit.MILLISECONDS: 1,
    ex.TimeUnit.SECONDS: 1000,
    ex.TimeUnit.MINUTES: 60_000,
    ex.TimeUnit.HOURS: 3_600_000,
    ex.TimeUnit.DAYS: 86_400_000,
}


@dataclass(frozen=True)
class Plan:
    """A query's streaming result: `frame` has one column per output column, by name (and
    `__WINDOW` when windowed); `aggregate` says it is an update stream (a table), `final` that
    it emits each window once, when it closes (EMIT FINAL: Spark's append mode), `session`
    that its windows are sessions."""

    frame: DataFrame
    columns: tuple[OutputColumn, ...]
    aggregate: bool
    windowed: bool
    final: bool = False
    session: bool = False


def read_source(
    spark: SparkSession, source: DataSource, options: Mapping[str, str], offset_reset: str
) -> DataFrame:
    """The source's topic read as a stream of its columns and ROWTIME, ROWPARTITION and
    ROWOFFSET; `offset_reset` is `earliest` or `latest` (ksqlDB's `auto.offset.reset`)."""
    raw = (
        spark.readStream.format("strom")
        .options(**options)
        .option("subscribe", source.topic)
        .option("startingOffsets", offset_reset)
        .load()
    )
    readable, columns = read(raw, source)
    return readable.select(
        *columns,
        F.unix_millis(readable["timestamp"]).alias("ROWTIME"),
        readable["partition"].alias("ROWPARTITION"),
        readable["offset"].alias("ROWOFFSET"),
    )


def millis(span: st.TimeSpan) -> int:
    return span.value * _UNITS_MS[span.unit]


def _calls(node: object) -> Iterator[ex.FunctionCall]:
    """Every function call in an expression tree."""
    if isinstance(node, tuple):
        for item in node:
            yield from _calls(item)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        if isinstance(node, ex.FunctionCall):
            yield node
        for f in dataclasses.fields(node):
            yield from _calls(getattr(node, f.name))


def _aggregates(e: ex.Expression) -> bool:
    return any(functions.is_aggregate(call.name) for call in _calls(e))


def plan_query(
    query: st.Query,
    frame: DataFrame,
    sources: Mapping[str, DataSource],
    *,
    names: Callable[[ex.ColumnRef], str] | None = None,
) -> Plan:
    """`query` over `sources` (by alias, the one read first) read as `frame` (for a join, the
    joined frame, whose column names `names` gives) planned; `SqlSemanticError` for what
    ksqlDB refuses or strom does not run yet."""
    source = next(iter(sources.values()))
    query = _star_repartitioned(query, sources)
    resolved = analyze(query, {s.name: s.schema for s in sources.values()})
    items = [i for i in query.select if isinstance(i, st.SingleColumn)]
    aggregate = bool(query.group_by) or any(_aggregates(i.expression) for i in items)
    windowed = query.window is not None
    if windowed and not aggregate:
        raise SqlSemanticError("WINDOW clause requires a GROUP BY clause.")
    final = query.emit is st.Emit.FINAL
    if final and not (windowed and query.group_by):
        raise SqlSemanticError("EMIT FINAL is only supported for windowed aggregations.")
    if aggregate and len(sources) > 1:
        raise SqlSemanticError("Aggregating a join is not supported on Spark yet.")
    scope = {alias: s.schema for alias, s in sources.items()}
    compiler = Compiler(scope, windowed=windowed, names=names)
    if query.where is not None:
        frame = frame.filter(compiler.compile(query.where))
    columns = _with_keys(query, resolved.columns, sources, compiler, aggregate)
    session = query.window is not None and query.window.kind is st.WindowKind.SESSION
    gap = millis(query.window.size) if session and query.window else 0
    exprs = _projection(query, sources, compiler, columns, gap)
    if not aggregate:
        if query.having is not None:
            raise SqlSemanticError("HAVING requires GROUP BY.")
        return Plan(frame.select(*exprs, *_rowtime(frame, F.col)), columns, False, False)
    if source.kind is st.SourceKind.TABLE:
        raise SqlSemanticError("Aggregating a TABLE is not supported on Spark yet.")
    if not query.group_by:
        raise SqlSemanticError("Aggregates need a GROUP BY clause (ksqlDB groups by a key).")
    grouping = [compiler.compile(g).alias(f"__K{i}") for i, g in enumerate(query.group_by)]
    if query.window is not None:
        frame = frame.withColumn(_EVENT_TIME, F.timestamp_millis(F.col("ROWTIME")))
        if final:  # a window closes when the watermark passes its end plus the grace period
            grace = query.window.grace
            frame = frame.withWatermark(
                _EVENT_TIME, f"{millis(grace) if grace else DEFAULT_GRACE_MS} milliseconds"
            )
        frame = frame.withColumn(_WINDOW, _window(query.window, final))
        grouping.insert(0, F.col(_WINDOW))
    aggregated = [*exprs, *_rowtime(frame, F.max)]
    if query.having is not None:
        aggregated.append(compiler.compile(query.having).alias(HAVING))
    out = frame.groupBy(*grouping).agg(*aggregated)
    if query.having is not None:
        out = out.withColumn(HAVING, F.coalesce(F.col(HAVING), F.lit(False)))
        if final:  # a window's one row: nothing to delete when it fails
            out = out.filter(F.col(HAVING)).drop(HAVING)
    if session:  # ksqlDB's session ends at its last record; Spark's a gap after it
        bounds = F.struct(
            F.col(_WINDOW).getField("start").alias("start"),
            (F.col(_WINDOW).getField("end") - F.expr(f"INTERVAL {gap} MILLISECONDS")).alias("end"),
        )
        out = out.withColumn(_WINDOW, bounds)
    kept = [column(c.name) for c in columns] + ([F.col(_WINDOW)] if windowed else [])
    kept += [F.col(name) for name in (_ROWTIME, HAVING) if name in out.columns]
    return Plan(out.select(*kept), columns, True, windowed, final, session)


def _star_repartitioned(query: st.Query, sources: Mapping[str, DataSource]) -> st.Query:
    """ksqlDB's `SELECT * ... PARTITION BY`: the records are re-keyed before the projection, so
    `*` is the partitioning expressions (the new key columns: named as the column or struct
    field, else KSQL_COL_<i>), then the value columns not partitioned by, then the old key
    columns not partitioned by (moved to the value). A query without `*` keeps its own."""
    stars = [i for i in query.select if isinstance(i, st.AllColumns)]
    if not query.partition_by or len(sources) != 1 or not stars:
        return query
    ((alias, source),) = sources.items()
    taken = {
        e.name
        for e in query.partition_by
        if isinstance(e, ex.ColumnRef) and e.source in (None, alias)
    }
    star: list[st.SelectItem] = []
    for i, e in enumerate(query.partition_by):
        match e:
            case ex.ColumnRef(name) | ex.Dereference(_, name):
                star.append(st.SingleColumn(e, name))
            case _:
                star.append(st.SingleColumn(e, f"KSQL_COL_{i}"))
    rest = [c for c in (*source.values, *source.keys) if c.name not in taken]
    star += [st.SingleColumn(ex.ColumnRef(c.name, alias), c.name) for c in rest]
    select: list[st.SelectItem] = []
    for item in query.select:
        covered = isinstance(item, st.AllColumns) and item.source in (None, alias)
        select += star if covered else [item]
    return dataclasses.replace(query, select=tuple(select))


def _rowtime(frame: DataFrame, pick: Callable[[str], Column]) -> list[Column]:
    """The output record's timestamp as ksqlDB sets it (a row's ROWTIME; an aggregate's
    latest), where the frame has ROWTIME (a join's frame names it by alias: none)."""
    return [pick("ROWTIME").alias(_ROWTIME)] if "ROWTIME" in frame.columns else []


def _window(window: st.WindowExpression, final: bool) -> Column:
    time = F.col(_EVENT_TIME)
    size = f"{millis(window.size)} milliseconds"
    if window.kind is st.WindowKind.TUMBLING:
        return F.window(time, size)
    if window.kind is st.WindowKind.HOPPING:
        assert window.advance is not None
        return F.window(time, size, f"{millis(window.advance)} milliseconds")
    if not final:
        raise SqlSemanticError(
            "SESSION windows need EMIT FINAL on Spark: its streaming session windows emit a "
            "session once, when it closes (they cannot run in update mode), so EMIT CHANGES, "
            "a row per change, is not possible."
        )
    return F.session_window(time, size)


def _expanded(
    query: st.Query, sources: Mapping[str, DataSource], columns: tuple[OutputColumn, ...]
) -> list[tuple[str, ex.Expression]]:
    """Each output column's name and expression, `*` expanded (prefixed by alias in a join, as
    ksqlDB names them)."""
    joined = len(sources) > 1
    out: list[tuple[str, ex.Expression]] = []
    for item in query.select:
        if isinstance(item, st.SingleColumn):
            out.append((columns[len(out)].name, item.expression))
        elif isinstance(item, st.AllColumns):
            for alias, source in sources.items():
                if item.source in (None, alias):
                    out += [
                        (f"{alias}_{c.name}" if joined else c.name, ex.ColumnRef(c.name, alias))
                        for c in source.columns
                    ]
        else:
            raise SqlSemanticError("->* in a projection is not supported on Spark yet.")
    return out


def _with_keys(
    query: st.Query,
    columns: tuple[OutputColumn, ...],
    sources: Mapping[str, DataSource],
    compiler: Compiler,
    aggregate: bool,
) -> tuple[OutputColumn, ...]:
    """The output columns with their key flags, ksqlDB's way."""
    if aggregate and query.partition_by:
        raise SqlSemanticError("PARTITION BY cannot be combined with GROUP BY (or aggregates).")
    keyed = query.group_by if aggregate else query.partition_by
    word = "grouping" if aggregate else "partitioning"
    expressions = _expanded(query, sources, columns)
    names: list[str] = []
    for key in keyed:
        found = [name for name, e in expressions if e == key]
        if not found:
            shown = format_expression(key)
            raise SqlSemanticError(
                "Key missing from projection (ie, SELECT). The query used to build the result "
                f"must include the {word} expression {shown} in its projection "
                f"(eg, SELECT {shown}...)."
            )
        names.append(found[0])
    if not keyed:
        if isinstance(query.from_, st.Join):  # keyed by the join's columns
            refs = _refs(query.from_.joins[0].criteria)
        else:
            alias = next(iter(sources))
            refs = [ex.ColumnRef(c.name, alias) for c in sources[alias].keys]
        key_names = {compiler.name_of(r) for r in refs}
        names = [
            name
            for name, e in expressions
            if isinstance(e, ex.ColumnRef) and compiler.name_of(e) in key_names
        ]
    return tuple(OutputColumn(c.name, c.type, c.name in names) for c in columns)


def _refs(e: ex.Expression) -> list[ex.ColumnRef]:
    """The columns an equality join compares."""
    if isinstance(e, ex.Comparison) and e.op == "=":
        return [x for x in (e.left, e.right) if isinstance(x, ex.ColumnRef)]
    return []


def _projection(
    query: st.Query,
    sources: Mapping[str, DataSource],
    compiler: Compiler,
    columns: tuple[OutputColumn, ...],
    session_gap: int,
) -> list[Column]:
    return [
        _bound(e, compiler, session_gap).alias(name)
        for name, e in _expanded(query, sources, columns)
    ]


def _bound(e: ex.Expression, compiler: Compiler, session_gap: int) -> Column:
    """`e` compiled, with the window bounds read from the window column (a session's end is
    its last record's time: Spark's session window ends `session_gap` ms after it)."""
    if e == ex.ColumnRef("WINDOWSTART"):
        return F.unix_millis(F.col(_WINDOW).getField("start"))
    if e == ex.ColumnRef("WINDOWEND"):
        return F.unix_millis(F.col(_WINDOW).getField("end")) - session_gap
    return compiler.compile(e)


def sink_frame(plan: Plan, sink: DataSource) -> DataFrame:
    """The plan's rows as the sink writes them: `key` (when the sink has key columns, with the
    window's start after it as ksqlDB's time-windowed keys, its end and start after it as its
    session-windowed keys), `value`, `timestamp` (ms) where the plan has the rows' ROWTIME, and
    the HAVING's value where the plan has it (for `having`)."""
    keys = [SqlColumn(c.name, c.type or ty.STRING) for c in plan.columns if c.key]
    values = [SqlColumn(c.name, c.type or ty.STRING) for c in plan.columns if not c.key]
    value = encode(
        values,
        sink.value_format,
        sink.value_schema_id,
        sink.value_schema,
        sink.value_schema_name,
    )
    out = [value.alias("value")]
    if keys:
        key = encode(
            keys, sink.key_format, sink.key_schema_id, sink.key_schema, sink.key_schema_name
        ).cast("binary")
        if plan.windowed:
            bounds = ("end", "start") if plan.session else ("start",)
            longs = [
                F.unhex(F.lpad(F.hex(F.unix_millis(F.col(_WINDOW)[b])), 16, "0")) for b in bounds
            ]
            key = F.concat(key, *longs)
        out.insert(0, key.alias("key"))
    if _ROWTIME in plan.frame.columns:
        out.append(F.col(_ROWTIME).alias("timestamp"))
    if HAVING in plan.frame.columns:
        out.append(F.col(HAVING))
    return plan.frame.select(*out)
