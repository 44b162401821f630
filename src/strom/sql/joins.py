"""Stream-table joins (`FROM stream s [LEFT] JOIN table t ON s.col = t.key`): each micro-batch
of the stream is joined (in `foreachBatch`) with a batch read of the table's topic made then
(committed records, the latest per key, tombstones dropping keys), so each stream record meets
the table as it is when its micro-batch runs (ksqlDB's lookup of the current table row, at a
micro-batch's granularity).

In the joined frame every column is named `<alias>__<column>` (the pseudo-columns come from
the stream, unprefixed); `JoinNames` maps the query's column references to those names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from strom.sql import expressions as ex
from strom.sql import statements as st
from strom.sql.compiler import Compiler, column
from strom.sql.errors import SqlSemanticError
from strom.sql.metastore import DataSource
from strom.sql.planner import PSEUDO, Plan, plan_query, read_source
from strom.sql.serde import read

__all__ = ["JoinNames", "JoinQuery", "join_sources"]


class JoinNames:
    """Column references of a join's query to the joined frame's column names."""

    def __init__(self, sources: Mapping[str, DataSource]) -> None:
        self._sources = sources

    def __call__(self, ref: ex.ColumnRef) -> str:
        if ref.source is not None:
            source = self._sources.get(ref.source)
            if source is not None and source.schema.column(ref.name) is not None:
                return f"{ref.source}__{ref.name}"
            return ref.name
        for alias, source in self._sources.items():
            if source.schema.column(ref.name) is not None:
                return f"{alias}__{ref.name}"
        return ref.name


def join_sources(
    join: st.Join, sources: Mapping[str, DataSource]
) -> tuple[dict[str, DataSource], st.JoinedSource]:
    """The join's sources by alias (the left first) and its one joined source (a table, or a
    stream for a stream-stream join); ksqlDB's errors for what strom does not join."""
    if len(join.joins) != 1:
        raise SqlSemanticError("Joins of more than two sources are not supported on Spark yet.")
    joined = join.joins[0]
    by_alias: dict[str, DataSource] = {}
    for relation in (join.left, joined.relation):
        found = sources.get(relation.name)
        if found is None:
            raise SqlSemanticError(f"{relation.name} does not exist.")
        by_alias[relation.alias or relation.name] = found
    left, right = by_alias.values()
    if (left.kind, right.kind) == (st.SourceKind.STREAM, st.SourceKind.STREAM):
        return by_alias, joined
    if (left.kind, right.kind) == (st.SourceKind.TABLE, st.SourceKind.TABLE):
        raise SqlSemanticError(
            "Table-table joins are not supported on Spark: a table's topic is a stream of "
            "updates, and Spark's stream-stream joins cannot retract an earlier result when a "
            "row changes, which a join of two tables must."
        )
    if left.kind is not st.SourceKind.STREAM:
        raise SqlSemanticError(
            "Only stream-table joins (a STREAM joined with a TABLE) and stream-stream joins are "
            "supported on Spark yet."
        )
    if joined.type not in (st.JoinType.INNER, st.JoinType.LEFT):
        raise SqlSemanticError(
            f"Invalid join type: {joined.type.value} join is not supported for stream-table joins."
        )
    if joined.within is not None:
        raise SqlSemanticError("A stream-table join takes no WITHIN clause.")
    return by_alias, joined


def _table_snapshot(
    spark: SparkSession, source: DataSource, options: Mapping[str, str]
) -> DataFrame:
    raw = (
        spark.read.format("strom")
        .options(**options)
        .option("subscribe", source.topic)
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    latest = raw.groupBy("key").agg(
        F.max_by(F.col("value"), F.struct(F.col("partition"), F.col("offset"))).alias("value")
    )
    readable, columns = read(latest.filter(F.col("value").isNotNull()), source)
    return readable.select(*columns)


def _prefixed(frame: DataFrame, alias: str, source: DataSource, pseudo: bool) -> DataFrame:
    named = [column(c.name).alias(f"{alias}__{c.name}") for c in source.columns]
    return frame.select(*named, *([column(p) for p in PSEUDO] if pseudo else []))


@dataclass(frozen=True)
class JoinQuery:
    """A stream-table join query: its stream side, and each micro-batch's plan with the table
    read when the micro-batch runs. (A stream-static join in one streaming plan would read
    the table once: Spark plans the batch side's offsets when the query starts.)"""

    query: st.Query
    join: st.JoinedSource
    sources: Mapping[str, DataSource]
    options: Mapping[str, str]
    offset_reset: str

    def stream(self, spark: SparkSession) -> DataFrame:
        """The stream's records, columns prefixed by its alias."""
        alias, source = next(iter(self.sources.items()))
        frame = read_source(spark, source, self.options, self.offset_reset)
        return _prefixed(frame, alias, source, True)

    def joined(self, spark: SparkSession, stream: DataFrame) -> DataFrame:
        """`stream` (a micro-batch, or the stream itself) joined with the table as it is now."""
        right_alias, right = list(self.sources.items())[1]
        table = _prefixed(_table_snapshot(spark, right, self.options), right_alias, right, False)
        scope = {alias: s.schema for alias, s in self.sources.items()}
        names = JoinNames(self.sources)
        condition = Compiler(scope, names=names).compile(self.join.criteria)
        how = "inner" if self.join.type is st.JoinType.INNER else "left_outer"
        return stream.join(table, condition, how)

    def plan(self, spark: SparkSession, stream: DataFrame) -> Plan:
        frame = self.joined(spark, stream)
        return plan_query(self.query, frame, self.sources, names=JoinNames(self.sources))
