"""The SQL planner on the suite's SparkSession, over records as the `strom` source gives them
(binary key and value, timestamp, partition, offset) in a static DataFrame: the plan of a
query is the same for a batch and a stream, so these check ksqlDB's semantics in seconds; the
streaming queries themselves run in test_sql_server.py."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from strom.sql import statements as st
from strom.sql.errors import SqlSemanticError
from strom.sql.metastore import DataSource, declared_source
from strom.sql.parser import parse_statement
from strom.sql.planner import HAVING, plan_query, sink_frame
from strom.sql.serde import decode

ORDERS = "CREATE STREAM orders (id INT KEY, name STRING, amount DOUBLE, region STRING, tags ARRAY<STRING>) WITH (KAFKA_TOPIC='orders', VALUE_FORMAT='{fmt}');"  # noqa: E501
RECORDS = [
    (b"\x00\x00\x00\x05", b'{"name":"ann","AMOUNT":2.5,"region":"eu","tags":["a","b"]}', 1000, 7),
    (b"\xff\xff\xff\xfe", b'{"Name":"bob","amount":1,"region":"eu"}', 70000, 8),
    (b"\x00\x00\x00\x01", b'{"name":null,"amount":"x","region":"us"}', 80000, 9),
]


def _source(fmt: str = "JSON") -> DataSource:
    statement = parse_statement(ORDERS.format(fmt=fmt))
    assert isinstance(statement, st.CreateSource)
    return declared_source(statement)


def _frame(spark: SparkSession, source: DataSource, records: list[Any]) -> DataFrame:
    raw = spark.createDataFrame(records, "key binary, value binary, ts long, offset long")
    return raw.select(
        *decode(F.col("key"), source.keys, source.key_format),
        *decode(F.col("value"), source.values, source.value_format),
        F.col("ts").alias("ROWTIME"),
        F.lit(0).alias("ROWPARTITION"),
        F.col("offset").alias("ROWOFFSET"),
    )


def _run(spark: SparkSession, sql: str, records: list[Any] = RECORDS) -> tuple[list[Any], Any]:
    source = _source()
    statement = parse_statement(sql)
    assert isinstance(statement, st.QueryStatement)
    plan = plan_query(statement.query, _frame(spark, source, records), {source.name: source})
    written = [(r.key and bytes(r.key), r.value) for r in sink_frame(plan, source).collect()]
    return written, plan


def test_json_is_read_case_insensitively_and_bad_values_are_null(spark: SparkSession) -> None:
    rows = _frame(spark, _source(), RECORDS).collect()
    assert [(r.ID, r.NAME, r.AMOUNT, r.TAGS) for r in rows] == [
        (5, "ann", 2.5, ["a", "b"]),
        (-2, "bob", 1.0, None),
        (1, None, None, None),
    ]


def test_filter_project_and_functions_with_ksqldb_semantics(spark: SparkSession) -> None:
    written, plan = _run(
        spark,
        "SELECT id, UCASE(name) AS n, id / 2 AS half, amount / 0 AS inf, tags[-1] AS last, "
        "tags[5] AS none, SUBSTRING(name, 2) AS sub, IFNULL(name, 'nobody') AS who, "
        "CASE WHEN amount > 2 THEN 'big' ELSE 'small' END AS size, "
        "TIMESTAMPTOSTRING(ROWTIME, 'yyyy-MM-dd HH:mm:ss') AS at "
        "FROM orders WHERE name LIKE '%n%' OR amount < 2 OR name IS NULL EMIT CHANGES;",
    )
    assert [c.name for c in plan.columns if c.key] == ["ID"]
    assert written == [
        (
            (b"\x00\x00\x00\x05"),
            '{"N":"ANN","HALF":2,"INF":null,"LAST":"b","NONE":null,"SUB":"nn","WHO":"ann",'
            '"SIZE":"big","AT":"1970-01-01 00:00:01"}',
        ),
        (
            (b"\xff\xff\xff\xfe"),
            '{"N":"BOB","HALF":-1,"INF":null,"LAST":null,"NONE":null,"SUB":"ob","WHO":"bob",'
            '"SIZE":"small","AT":"1970-01-01 00:01:10"}',
        ),
        (
            (b"\x00\x00\x00\x01"),
            (
                '{"N":null,"HALF":0,"INF":null,"LAST":null,"NONE":null,"SUB":null,'
                '"WHO":"nobody","SIZE":"small","AT":"1970-01-01 00:01:20"}'
            ),
        ),
    ]


def test_group_by_aggregates_keyed_by_the_grouping(spark: SparkSession) -> None:
    written, plan = _run(
        spark,
        "SELECT region, COUNT(*) AS c, SUM(amount) AS total, LATEST_BY_OFFSET(name) AS last "
        "FROM orders GROUP BY region HAVING COUNT(*) > 1 EMIT CHANGES;",
    )
    assert plan.aggregate and [c.name for c in plan.columns if c.key] == ["REGION"]
    assert sorted(written) == [
        (b"eu", '{"C":2,"TOTAL":3.5,"LAST":"bob"}'),
        (b"us", '{"C":1,"TOTAL":null,"LAST":null}'),
    ]
    # the row that fails the HAVING is kept, marked, for its key's tombstone (engine's having)
    assert sorted(r[HAVING] for r in plan.frame.collect()) == [False, True]


@pytest.mark.parametrize(
    ("sql", "timestamps"),
    [
        ("SELECT id, name FROM orders WHERE id > 0;", [1000, 80000]),
        ("SELECT region, COUNT(*) AS c FROM orders GROUP BY region;", [70000, 80000]),
    ],
)
def test_records_keep_their_rowtime(spark: SparkSession, sql: str, timestamps: list[int]) -> None:
    """ksqlDB writes a row with its ROWTIME, an aggregate with its latest (QTT's timestamps)."""
    source = _source()
    statement = parse_statement(sql)
    assert isinstance(statement, st.QueryStatement)
    plan = plan_query(statement.query, _frame(spark, source, RECORDS), {source.name: source})
    assert sorted(r.timestamp for r in sink_frame(plan, source).collect()) == timestamps


def test_tumbling_windows_key_with_the_window_start(spark: SparkSession) -> None:
    written, _ = _run(
        spark,
        "SELECT region, WINDOWSTART AS ws, COUNT(*) AS c FROM orders "
        "WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY region EMIT CHANGES;",
    )
    assert sorted(written) == [
        ((b"eu" + (0).to_bytes(8, "big")), '{"WS":0,"C":1}'),
        ((b"eu" + (60000).to_bytes(8, "big")), '{"WS":60000,"C":1}'),
        ((b"us" + (60000).to_bytes(8, "big")), '{"WS":60000,"C":1}'),
    ]


def test_partition_by_rekeys_the_stream(spark: SparkSession) -> None:
    written, plan = _run(
        spark, "SELECT region, id, name FROM orders PARTITION BY region EMIT CHANGES;"
    )
    assert [c.name for c in plan.columns if c.key] == ["REGION"]
    assert written[0] == (b"eu", '{"ID":5,"NAME":"ann"}')
    with pytest.raises(SqlSemanticError, match="partitioning expression REGION"):
        _run(spark, "SELECT id FROM orders PARTITION BY region;")


@pytest.mark.parametrize(
    ("by", "columns", "first"),
    [
        ("id", ["ID KEY", "NAME", "AMOUNT", "REGION", "TAGS"], b"\x00\x00\x00\x05"),
        ("region", ["REGION KEY", "NAME", "AMOUNT", "TAGS", "ID"], b"eu"),
        (
            "ABS(id)",
            ["KSQL_COL_0 KEY", "NAME", "AMOUNT", "REGION", "TAGS", "ID"],
            b"\x00\x00\x00\x05",
        ),
    ],
)
def test_select_star_partition_by_covers_the_new_key(
    spark: SparkSession, by: str, columns: list[str], first: bytes
) -> None:
    """ksqlDB's `partition by key` and `... - select star` QTT cases: `*` is the re-keyed
    columns, the old key moved to the value's end."""
    written, plan = _run(spark, f"SELECT * FROM orders PARTITION BY {by} EMIT CHANGES;")
    assert [c.name + (" KEY" if c.key else "") for c in plan.columns] == columns
    assert written[0][0] == first


def test_delimited_values(spark: SparkSession) -> None:
    with pytest.raises(SqlSemanticError, match="'DELIMITED' format does not support type 'ARRAY'"):
        _frame(spark, _source("DELIMITED"), [])
    statement = parse_statement(
        "CREATE STREAM orders (id INT KEY, name STRING, amount DOUBLE, region STRING) "
        "WITH (KAFKA_TOPIC='orders', VALUE_FORMAT='DELIMITED');"
    )
    assert isinstance(statement, st.CreateSource)
    source = declared_source(statement)
    frame = _frame(spark, source, [(b"\x00\x00\x00\x03", b"cy,1.5,,ignored", 0, 0)])
    statement = parse_statement("SELECT * FROM orders;")
    assert isinstance(statement, st.QueryStatement)
    plan = plan_query(statement.query, frame, {source.name: source})
    row = sink_frame(plan, source).collect()[0]
    assert (bytes(row.key), row.value) == ((b"\x00\x00\x00\x03"), "cy,1.5,")


def test_bigint_keys_in_kafka_format(spark: SparkSession) -> None:
    """8-byte signed keys (QTT's tumbling-windows cases; 2**63 once crashed the plan)."""
    statement = parse_statement(
        "CREATE STREAM t (id BIGINT KEY, v BIGINT) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON');"
    )
    assert isinstance(statement, st.CreateSource)
    source = declared_source(statement)
    keys = [b"\x00" * 7 + b"\x05", b"\xff" * 8, b"\x80" + b"\x00" * 7]
    frame = _frame(spark, source, [(k, b'{"v": 1}', 0, 0) for k in keys])
    assert [r.ID for r in frame.collect()] == [5, -1, -(2**63)]


def test_delimited_values_with_commas_or_quotes_are_quoted(spark: SparkSession) -> None:
    """As ksqlDB's CSV printer (QTT's project-filter "project string with embedded code")."""
    statement = parse_statement(
        "CREATE STREAM notes (id INT KEY, a STRING, b STRING, c STRING) "
        "WITH (KAFKA_TOPIC='notes', VALUE_FORMAT='JSON');"
    )
    assert isinstance(statement, st.CreateSource)
    source = declared_source(statement)
    value = b'{"a": "say \\"hi\\"", "b": "x,y", "c": "plain"}'
    frame = _frame(spark, source, [(b"\x00\x00\x00\x03", value, 0, 0)])
    query = parse_statement("SELECT * FROM notes;")
    assert isinstance(query, st.QueryStatement)
    plan = plan_query(query.query, frame, {source.name: source})
    sink = replace(source, value_format="DELIMITED")
    row = sink_frame(plan, sink).collect()[0]
    assert row.value == '"say ""hi""","x,y",plain'


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT COUNT(*) AS c FROM orders GROUP BY region;", "Key missing from projection"),
        ("SELECT id FROM orders WINDOW TUMBLING (SIZE 1 SECOND);", "requires a GROUP BY"),
        ("SELECT nope FROM orders;", "SELECT column 'NOPE' cannot be resolved."),
    ],
)
def test_refusals(spark: SparkSession, sql: str, message: str) -> None:
    with pytest.raises(SqlSemanticError, match=message):
        _run(spark, sql)
