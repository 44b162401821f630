"""Stream-stream joins (`FROM a JOIN b WITHIN ... ON a.k = b.k`) as one Spark stream-stream join:
both streams read, each with a watermark of its record time less the grace period, and joined
on the ON condition plus the time bound of WITHIN (`b`'s time from `a`'s less `before` to `a`'s
plus `after`). INNER, LEFT, RIGHT and FULL OUTER are Spark's: an outer join writes a record
without a match, NULLs for the other side, once the watermark passes its window (as ksqlDB
does since its joins have a grace period).

The joined frame names columns `<alias>__<column>` (`joins.JoinNames`); ROWTIME is the later
of the two records' times (ksqlDB's), ROWPARTITION and ROWOFFSET the left record's (else the
right's).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from strom.sql import statements as st
from strom.sql.compiler import Compiler, column
from strom.sql.errors import SqlSemanticError
from strom.sql.joins import JoinNames
from strom.sql.metastore import DataSource
from strom.sql.planner import DEFAULT_GRACE_MS, Plan, millis, plan_query, read_source

__all__ = ["MISSING_WITHIN", "stream_stream_plan"]

MISSING_WITHIN = (
    "Stream-Stream joins must have a WITHIN clause specified. None was provided. To learn "
    "about how to specify a WITHIN clause with a stream-stream join, please visit: "
    "https://docs.confluent.io/current/ksql/docs/syntax-reference.html#create-stream-as-select"
)
_HOW = {
    st.JoinType.INNER: "inner",
    st.JoinType.LEFT: "left_outer",
    st.JoinType.RIGHT: "right_outer",
    st.JoinType.FULL: "full_outer",
}


def _side(
    spark: SparkSession,
    alias: str,
    source: DataSource,
    *,
    options: Mapping[str, str],
    offset_reset: str,
    grace_ms: int,
) -> DataFrame:
    """A stream's records, its columns and pseudo-columns prefixed by its alias, watermarked."""
    frame = read_source(spark, source, options, offset_reset)
    named = [column(c.name).alias(f"{alias}__{c.name}") for c in source.columns]
    pseudo = [column(p).alias(f"{alias}__{p}") for p in ("ROWPARTITION", "ROWOFFSET")]
    time = F.timestamp_millis(F.col("ROWTIME")).alias(f"{alias}__TIME")
    out = frame.select(*named, *pseudo, time)
    return out.withWatermark(f"{alias}__TIME", f"{grace_ms} milliseconds")


def stream_stream_plan(
    spark: SparkSession,
    query: st.Query,
    joined: st.JoinedSource,
    sources: Mapping[str, DataSource],
    *,
    options: Mapping[str, str],
    offset_reset: str,
) -> Plan:
    """The join's query planned over the joined stream (an append stream: no aggregates)."""
    within = joined.within
    if within is None:
        raise SqlSemanticError(MISSING_WITHIN)
    grace = millis(within.grace) if within.grace is not None else DEFAULT_GRACE_MS
    left, right = sources
    left_frame, right_frame = (
        _side(spark, alias, source, options=options, offset_reset=offset_reset, grace_ms=grace)
        for alias, source in sources.items()
    )
    scope = {alias: s.schema for alias, s in sources.items()}
    names = JoinNames(sources)
    criteria = Compiler(scope, names=names).compile(joined.criteria)
    left_time, right_time = F.col(f"{left}__TIME"), F.col(f"{right}__TIME")
    in_window = (
        right_time >= left_time - F.expr(f"INTERVAL {millis(within.before)} MILLISECONDS")
    ) & (right_time <= left_time + F.expr(f"INTERVAL {millis(within.after)} MILLISECONDS"))
    both = left_frame.join(right_frame, criteria & in_window, _HOW[joined.type])
    frame = both.select(
        *[F.col(f"`{c}`") for c in both.columns],
        F.unix_millis(F.greatest(left_time, right_time)).alias("ROWTIME"),
        *[
            F.coalesce(F.col(f"{left}__{p}"), F.col(f"{right}__{p}")).alias(p)
            for p in ("ROWPARTITION", "ROWOFFSET")
        ],
    )
    return plan_query(query, frame, sources, names=names)
