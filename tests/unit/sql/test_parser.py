"""ksqlDB statements, one or more per clause, parsed into their trees."""

from __future__ import annotations

import decimal

import pytest

from strom.sql import expressions as ex
from strom.sql import statements as st
from strom.sql import types as ty
from strom.sql.parser import parse, parse_expression, parse_statement


def col(name: str, source: str | None = None) -> ex.ColumnRef:
    return ex.ColumnRef(name, source)


def test_create_stream_with_key_headers_and_properties() -> None:
    s = parse_statement(
        """CREATE STREAM pageviews (
             viewtime BIGINT, user_id VARCHAR KEY, page_id STRING,
             hdrs ARRAY<STRUCT<key STRING, value BYTES>> HEADERS, trace BYTES HEADER('trace-id')
           ) WITH (KAFKA_TOPIC='pageviews', value_format='JSON', partitions=4,
                   TIMESTAMP='viewtime');"""
    )
    assert s == st.CreateSource(
        st.SourceKind.STREAM,
        "PAGEVIEWS",
        elements=(
            st.TableElement("VIEWTIME", ty.BIGINT),
            st.TableElement("USER_ID", ty.STRING, st.ColumnConstraint.KEY),
            st.TableElement("PAGE_ID", ty.STRING),
            st.TableElement(
                "HDRS",
                ty.ArrayType(
                    ty.StructType(
                        (ty.StructField("KEY", ty.STRING), ty.StructField("VALUE", ty.BYTES))
                    )
                ),
                st.ColumnConstraint.HEADERS,
            ),
            st.TableElement("TRACE", ty.BYTES, st.ColumnConstraint.HEADER, "trace-id"),
        ),
        properties=(
            st.Property("KAFKA_TOPIC", ex.StringLiteral("pageviews")),
            st.Property("VALUE_FORMAT", ex.StringLiteral("JSON")),
            st.Property("PARTITIONS", ex.IntegerLiteral(4)),
            st.Property("TIMESTAMP", ex.StringLiteral("viewtime")),
        ),
    )
    assert s.text.startswith("CREATE STREAM pageviews (") and s.text.endswith("'viewtime');")


def test_create_table_or_replace_primary_key_every_type() -> None:
    s = parse_statement(
        "create or replace table if not exists `Users` (id INT PRIMARY KEY, ok BOOLEAN, "
        "n INTEGER, b BIGINT, d DOUBLE, amount DECIMAL(10, 2), s STRING, v VARCHAR, raw BYTES, "
        "day DATE, at TIME, ts TIMESTAMP, tags ARRAY<STRING>, attrs MAP<STRING, INT>, "
        "address STRUCT<street STRING, `zip` INT>) with (kafka_topic='users', format='AVRO')"
    )
    assert isinstance(s, st.CreateSource)
    assert (s.kind, s.name, s.or_replace, s.if_not_exists) == (
        st.SourceKind.TABLE,
        "Users",
        True,
        True,
    )
    assert [e.type for e in s.elements] == [
        ty.INT,
        ty.BOOLEAN,
        ty.INT,
        ty.BIGINT,
        ty.DOUBLE,
        ty.DecimalType(10, 2),
        ty.STRING,
        ty.STRING,
        ty.BYTES,
        ty.DATE,
        ty.TIME,
        ty.TIMESTAMP,
        ty.ArrayType(ty.STRING),
        ty.MapType(ty.STRING, ty.INT),
        ty.StructType((ty.StructField("STREET", ty.STRING), ty.StructField("zip", ty.INT))),
    ]
    assert s.elements[0].constraint is st.ColumnConstraint.PRIMARY_KEY


def test_create_source_table_without_columns() -> None:
    s = parse_statement("CREATE SOURCE TABLE t WITH (kafka_topic='t', value_format='AVRO');")
    assert isinstance(s, st.CreateSource)
    assert s.source and s.elements == ()


def test_create_stream_as_select_filter_project() -> None:
    s = parse_statement(
        "CREATE STREAM big_orders WITH (kafka_topic='big') AS "
        "SELECT id, amount * 1.1 AS with_tax, UCASE(name) FROM orders "
        "WHERE amount > 100 AND region IN ('EU', 'US') EMIT CHANGES;"
    )
    assert isinstance(s, st.CreateAsSelect)
    assert s.name == "BIG_ORDERS"
    assert s.properties == (st.Property("KAFKA_TOPIC", ex.StringLiteral("big")),)
    q = s.query
    assert q.select == (
        st.SingleColumn(col("ID")),
        st.SingleColumn(
            ex.Binary("*", col("AMOUNT"), ex.DecimalLiteral(decimal.Decimal("1.1"))), "WITH_TAX"
        ),
        st.SingleColumn(ex.FunctionCall("UCASE", (col("NAME"),))),
    )
    assert q.from_ == st.AliasedRelation("ORDERS")
    assert q.where == ex.Logical(
        "AND",
        ex.Comparison(">", col("AMOUNT"), ex.IntegerLiteral(100)),
        ex.InList(col("REGION"), (ex.StringLiteral("EU"), ex.StringLiteral("US"))),
    )
    assert q.emit is st.Emit.CHANGES


def test_create_table_as_select_windowed_aggregate() -> None:
    s = parse_statement(
        "CREATE TABLE counts AS SELECT region, COUNT(*) AS n, WINDOWSTART AS ws "
        "FROM pageviews WINDOW HOPPING (SIZE 1 HOUR, ADVANCE BY 10 MINUTES, RETENTION 7 DAYS, "
        "GRACE PERIOD 30 SECONDS) GROUP BY region HAVING COUNT(*) > 1 EMIT FINAL;"
    )
    assert isinstance(s, st.CreateAsSelect)
    q = s.query
    assert q.window == st.WindowExpression(
        st.WindowKind.HOPPING,
        st.TimeSpan(1, ex.TimeUnit.HOURS),
        advance=st.TimeSpan(10, ex.TimeUnit.MINUTES),
        retention=st.TimeSpan(7, ex.TimeUnit.DAYS),
        grace=st.TimeSpan(30, ex.TimeUnit.SECONDS),
    )
    assert q.group_by == (col("REGION"),)
    assert q.having == ex.Comparison(">", ex.FunctionCall("COUNT", star=True), ex.IntegerLiteral(1))
    assert q.emit is st.Emit.FINAL
    assert q.select[2] == st.SingleColumn(col("WINDOWSTART"), "WS")


@pytest.mark.parametrize(
    ("clause", "window"),
    [
        (
            "TUMBLING (SIZE 5 SECONDS)",
            st.WindowExpression(st.WindowKind.TUMBLING, st.TimeSpan(5, ex.TimeUnit.SECONDS)),
        ),
        (
            "TUMBLING (SIZE 1 DAY, RETENTION 2 DAYS)",
            st.WindowExpression(
                st.WindowKind.TUMBLING,
                st.TimeSpan(1, ex.TimeUnit.DAYS),
                retention=st.TimeSpan(2, ex.TimeUnit.DAYS),
            ),
        ),
        (
            "SESSION (60 SECONDS, GRACE PERIOD 1 MINUTE)",
            st.WindowExpression(
                st.WindowKind.SESSION,
                st.TimeSpan(60, ex.TimeUnit.SECONDS),
                grace=st.TimeSpan(1, ex.TimeUnit.MINUTES),
            ),
        ),
        (
            "tumbling (size 100 milliseconds)",
            st.WindowExpression(st.WindowKind.TUMBLING, st.TimeSpan(100, ex.TimeUnit.MILLISECONDS)),
        ),
    ],
)
def test_windows(clause: str, window: st.WindowExpression) -> None:
    s = parse_statement(f"SELECT k, COUNT(*) FROM s WINDOW {clause} GROUP BY k EMIT CHANGES;")
    assert isinstance(s, st.QueryStatement)
    assert s.query.window == window


def test_joins_stream_stream_within_and_table() -> None:
    s = parse_statement(
        "SELECT o.id, c.name, s.status FROM orders o "
        "INNER JOIN shipments s WITHIN (1 HOUR, 2 HOURS) GRACE PERIOD 5 MINUTES "
        "ON o.id = s.order_id "
        "LEFT JOIN customers AS c ON o.customer_id = c.id "
        "FULL OUTER JOIN extra x WITHIN 10 SECONDS ON o.id = x.id "
        "RIGHT JOIN r ON o.id = r.id "
        "JOIN plain ON o.id = plain.id EMIT CHANGES;"
    )
    assert isinstance(s, st.QueryStatement)
    rel = s.query.from_
    assert isinstance(rel, st.Join)
    assert rel.left == st.AliasedRelation("ORDERS", "O")
    assert [j.type for j in rel.joins] == [
        st.JoinType.INNER,
        st.JoinType.LEFT,
        st.JoinType.FULL,
        st.JoinType.RIGHT,
        st.JoinType.INNER,
    ]
    assert rel.joins[0].within == st.WithinExpression(
        st.TimeSpan(1, ex.TimeUnit.HOURS),
        st.TimeSpan(2, ex.TimeUnit.HOURS),
        st.TimeSpan(5, ex.TimeUnit.MINUTES),
    )
    assert rel.joins[0].criteria == ex.Comparison("=", col("ID", "O"), col("ORDER_ID", "S"))
    assert rel.joins[1].relation == st.AliasedRelation("CUSTOMERS", "C")
    assert rel.joins[2].within == st.WithinExpression(
        st.TimeSpan(10, ex.TimeUnit.SECONDS), st.TimeSpan(10, ex.TimeUnit.SECONDS)
    )


def test_insert_into_partition_by_and_limit() -> None:
    s = parse_statement(
        "INSERT INTO all_orders SELECT * FROM eu_orders PARTITION BY customer_id, region LIMIT 10;"
    )
    assert s == st.InsertInto(
        "ALL_ORDERS",
        st.Query(
            (st.AllColumns(),),
            st.AliasedRelation("EU_ORDERS"),
            partition_by=(col("CUSTOMER_ID"), col("REGION")),
            limit=10,
        ),
    )


def test_insert_values() -> None:
    s = parse_statement("INSERT INTO t (id, name) VALUES (1, 'a''b');")
    assert s == st.InsertValues(
        "T", (ex.IntegerLiteral(1), ex.StringLiteral("a'b")), columns=("ID", "NAME")
    )


def test_pull_query_and_qualified_star() -> None:
    s = parse_statement("SELECT u.*, `Mixed` FROM users u WHERE id = 'k1';")
    assert isinstance(s, st.QueryStatement)
    assert s.query.select == (st.AllColumns("U"), st.SingleColumn(col("Mixed")))
    assert s.query.emit is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a + b * c", ex.Binary("+", col("A"), ex.Binary("*", col("B"), col("C")))),
        ("(a + b) * c", ex.Binary("*", ex.Binary("+", col("A"), col("B")), col("C"))),
        ("a - b - c", ex.Binary("-", ex.Binary("-", col("A"), col("B")), col("C"))),
        (
            "a % 2 / 3",
            ex.Binary("/", ex.Binary("%", col("A"), ex.IntegerLiteral(2)), ex.IntegerLiteral(3)),
        ),
        ("-a * b", ex.Binary("*", ex.Unary("-", col("A")), col("B"))),
        (
            "'a' || b + 1",
            ex.Binary("||", ex.StringLiteral("a"), ex.Binary("+", col("B"), ex.IntegerLiteral(1))),
        ),
        (
            "a OR b AND NOT c",
            ex.Logical("OR", col("A"), ex.Logical("AND", col("B"), ex.Not(col("C")))),
        ),
        ("a != 1", ex.Comparison("<>", col("A"), ex.IntegerLiteral(1))),
        ("a <= 1.5E2", ex.Comparison("<=", col("A"), ex.DoubleLiteral(150.0))),
        (
            "x NOT LIKE 'a\\%' ESCAPE '\\'",
            ex.Like(col("X"), ex.StringLiteral("a\\%"), "\\", negated=True),
        ),
        (
            "x NOT IN (1, 2)",
            ex.InList(col("X"), (ex.IntegerLiteral(1), ex.IntegerLiteral(2)), negated=True),
        ),
        ("x IS NULL", ex.IsNull(col("X"))),
        ("x IS NOT DISTINCT FROM y", ex.IsDistinctFrom(col("X"), col("Y"), negated=True)),
        (
            "x BETWEEN 1 AND 2 AND y",
            ex.Logical(
                "AND", ex.Between(col("X"), ex.IntegerLiteral(1), ex.IntegerLiteral(2)), col("Y")
            ),
        ),
        ("address->city", ex.Dereference(col("ADDRESS"), "CITY")),
        ("a->b->`c`", ex.Dereference(ex.Dereference(col("A"), "B"), "c")),
        ("tags[1]", ex.Subscript(col("TAGS"), ex.IntegerLiteral(1))),
        ("attrs['k']->v", ex.Dereference(ex.Subscript(col("ATTRS"), ex.StringLiteral("k")), "V")),
        ("CAST(x AS DECIMAL(4, 2))", ex.Cast(col("X"), ty.DecimalType(4, 2))),
        (
            "CAST(x AS ARRAY<MAP<STRING, INT>>)",
            ex.Cast(col("X"), ty.ArrayType(ty.MapType(ty.STRING, ty.INT))),
        ),
        ("CASE WHEN a THEN 1 END", ex.Case((ex.WhenClause(col("A"), ex.IntegerLiteral(1)),))),
        (
            "CASE a WHEN 1 THEN 'x' WHEN 2 THEN 'y' ELSE NULL END",
            ex.Case(
                (
                    ex.WhenClause(ex.IntegerLiteral(1), ex.StringLiteral("x")),
                    ex.WhenClause(ex.IntegerLiteral(2), ex.StringLiteral("y")),
                ),
                operand=col("A"),
                default=ex.NullLiteral(),
            ),
        ),
        ("ARRAY[1, 2]", ex.ArrayConstructor((ex.IntegerLiteral(1), ex.IntegerLiteral(2)))),
        ("MAP('a' := 1)", ex.MapConstructor(((ex.StringLiteral("a"), ex.IntegerLiteral(1)),))),
        ("STRUCT(f := TRUE)", ex.StructConstructor((("F", ex.BooleanLiteral(True)),))),
        (
            "TIMESTAMPADD(SECONDS, 5, ts)",
            ex.FunctionCall(
                "TIMESTAMPADD",
                (ex.IntervalUnit(ex.TimeUnit.SECONDS), ex.IntegerLiteral(5), col("TS")),
            ),
        ),
        ("COUNT_DISTINCT(user_id)", ex.FunctionCall("COUNT_DISTINCT", (col("USER_ID"),))),
        ("TOPK(amount, 3)", ex.FunctionCall("TOPK", (col("AMOUNT"), ex.IntegerLiteral(3)))),
        ("NOW()", ex.FunctionCall("NOW")),
        ("9999999999", ex.IntegerLiteral(9999999999)),
        ("0.50", ex.DecimalLiteral(decimal.Decimal("0.50"))),
        ('"quoted ""name"""', col('quoted "name"')),
        (
            "size + key + `select`",
            ex.Binary("+", ex.Binary("+", col("SIZE"), col("KEY")), col("select")),
        ),
    ],
)
def test_expressions(text: str, expected: ex.Expression) -> None:
    assert parse_expression(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("SHOW STREAMS;", st.ListStatement(st.ListSubject.STREAMS)),
        ("list tables extended;", st.ListStatement(st.ListSubject.TABLES, extended=True)),
        ("SHOW QUERIES;", st.ListStatement(st.ListSubject.QUERIES)),
        ("SHOW ALL TOPICS;", st.ListStatement(st.ListSubject.TOPICS, all=True)),
        ("SHOW PROPERTIES;", st.ListStatement(st.ListSubject.PROPERTIES)),
        ("LIST FUNCTIONS;", st.ListStatement(st.ListSubject.FUNCTIONS)),
        ("DESCRIBE orders;", st.Describe("ORDERS")),
        ("DESCRIBE `orders` EXTENDED;", st.Describe("orders", extended=True)),
        ("DESCRIBE FUNCTION substring;", st.DescribeFunction("SUBSTRING")),
        ("EXPLAIN CSAS_BIG_ORDERS_3;", st.Explain(query_id="CSAS_BIG_ORDERS_3")),
        (
            "EXPLAIN SELECT * FROM s EMIT CHANGES;",
            st.Explain(
                statement=st.QueryStatement(
                    st.Query((st.AllColumns(),), st.AliasedRelation("S"), emit=st.Emit.CHANGES)
                )
            ),
        ),
        ("TERMINATE CTAS_COUNTS_1;", st.Terminate("CTAS_COUNTS_1")),
        ("TERMINATE ALL;", st.Terminate()),
        ("DROP STREAM s;", st.DropSource(st.SourceKind.STREAM, "S")),
        (
            "DROP TABLE IF EXISTS t DELETE TOPIC;",
            st.DropSource(st.SourceKind.TABLE, "T", if_exists=True, delete_topic=True),
        ),
        ("PRINT orders;", st.PrintTopic("ORDERS")),
        (
            "PRINT 'orders' FROM BEGINNING INTERVAL 2 LIMIT 5;",
            st.PrintTopic("orders", from_beginning=True, interval=2, limit=5),
        ),
        (
            "SET 'auto.offset.reset'='earliest';",
            st.SetProperty("auto.offset.reset", "earliest"),
        ),
        ("UNSET 'auto.offset.reset';", st.UnsetProperty("auto.offset.reset")),
        ("RUN SCRIPT '/tmp/setup.sql';", st.RunScript("/tmp/setup.sql")),
    ],
)
def test_other_statements(text: str, expected: st.Statement) -> None:
    s = parse_statement(text)
    assert s == expected
    assert s.text == text


def test_several_statements_comments_and_texts() -> None:
    text = (
        "-- the sources\n"
        "CREATE STREAM s (id INT KEY) WITH (kafka_topic='s', value_format='JSON');\n"
        "/* a block\n   comment; with a semicolon */ SHOW STREAMS;\n"
        "SELECT * FROM s EMIT CHANGES"
    )
    statements = parse(text)
    assert [type(s) for s in statements] == [st.CreateSource, st.ListStatement, st.QueryStatement]
    assert statements[0].text.startswith("CREATE STREAM s") and statements[0].text.endswith(";")
    assert statements[1].text == "SHOW STREAMS;"
    assert statements[2].text == "SELECT * FROM s EMIT CHANGES"
    assert parse("") == []


def test_keywords_are_case_insensitive_and_names_upper_cased() -> None:
    assert parse_statement("select Id from Orders emit changes;") == parse_statement(
        "SELECT ID FROM ORDERS EMIT CHANGES;"
    )


def test_lambdas_struct_fields_and_digit_names() -> None:
    s = parse_statement(
        "SELECT address->*, TRANSFORM(m, (k, v) => k, x => x + 1) AS t, ROUND(v, -1) AS 1r FROM s;"
    )
    assert isinstance(s, st.QueryStatement)
    assert s.query.select == (
        st.StructAll(col("ADDRESS")),
        st.SingleColumn(
            ex.FunctionCall(
                "TRANSFORM",
                (
                    col("M"),
                    ex.Lambda(("K", "V"), col("K")),
                    ex.Lambda(("X",), ex.Binary("+", col("X"), ex.IntegerLiteral(1))),
                ),
            ),
            "T",
        ),
        st.SingleColumn(
            ex.FunctionCall("ROUND", (col("V"), ex.Unary("-", ex.IntegerLiteral(1)))), "1R"
        ),
    )
