"""The formatter writes canonical SQL that parses back to the same tree: over examples of every
statement, and over trees hypothesis generates."""

from __future__ import annotations

import decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from strom.sql import expressions as ex
from strom.sql import statements as st
from strom.sql import types as ty
from strom.sql.formatter import format_expression, format_statement, format_type
from strom.sql.parser import parse, parse_expression, parse_statement

# Names as the parser leaves them: upper-case words, keywords, and quoted odd ones.
names = hs.one_of(
    hs.from_regex(r"[A-Z_][A-Z0-9_@]{0,6}", fullmatch=True),
    hs.sampled_from(["SIZE", "KEY", "SELECT", "FROM", "SECONDS", "DAY", "TRUE", "STREAMS", "1R"]),
    hs.text(min_size=0, max_size=6),
)
upper_names = hs.from_regex(r"[A-Z_][A-Z0-9_.]{0,8}", fullmatch=True)

literals: hs.SearchStrategy[ex.Expression] = hs.one_of(
    hs.just(ex.NullLiteral()),
    hs.builds(ex.BooleanLiteral, hs.booleans()),
    hs.builds(ex.IntegerLiteral, hs.integers(min_value=0, max_value=2**63 - 1)),
    hs.builds(
        ex.DecimalLiteral,
        hs.decimals(min_value=0, allow_nan=False, allow_infinity=False).filter(
            lambda d: not d.is_signed()
        ),
    ),
    hs.builds(ex.DoubleLiteral, hs.floats(min_value=0, allow_infinity=False, allow_nan=False)),
    hs.builds(ex.StringLiteral, hs.text(max_size=8)),
)

sql_types: hs.SearchStrategy[ty.SqlType] = hs.recursive(
    hs.one_of(
        hs.builds(ty.PrimitiveType, hs.sampled_from(ty.Primitive)),
        hs.integers(1, 38).flatmap(
            lambda p: hs.builds(ty.DecimalType, hs.just(p), hs.integers(0, p))
        ),
    ),
    lambda inner: hs.one_of(
        hs.builds(ty.ArrayType, inner),
        hs.builds(ty.MapType, inner, inner),
        hs.builds(
            ty.StructType,
            hs.lists(hs.builds(ty.StructField, names, inner), max_size=3).map(tuple),
        ),
    ),
    max_leaves=5,
)

time_spans = hs.builds(st.TimeSpan, hs.integers(0, 10_000), hs.sampled_from(ex.TimeUnit))


def _compound(inner: hs.SearchStrategy[ex.Expression]) -> hs.SearchStrategy[ex.Expression]:
    some = hs.lists(inner, min_size=1, max_size=3).map(tuple)
    args = hs.lists(
        hs.one_of(inner, hs.builds(ex.IntervalUnit, hs.sampled_from(ex.TimeUnit))), max_size=3
    ).map(tuple)
    return hs.one_of(
        hs.builds(ex.Unary, hs.sampled_from(["-", "+"]), inner),
        hs.builds(ex.Binary, hs.sampled_from(["*", "/", "%", "+", "-", "||"]), inner, inner),
        hs.builds(ex.Comparison, hs.sampled_from(["=", "<>", "<", "<=", ">", ">="]), inner, inner),
        hs.builds(ex.Logical, hs.sampled_from(["AND", "OR"]), inner, inner),
        hs.builds(ex.Not, inner),
        hs.builds(ex.Between, inner, inner, inner, hs.booleans()),
        hs.builds(ex.InList, inner, some, hs.booleans()),
        hs.builds(
            ex.Like, inner, inner, hs.none() | hs.text(min_size=1, max_size=1), hs.booleans()
        ),
        hs.builds(ex.IsNull, inner, hs.booleans()),
        hs.builds(ex.IsDistinctFrom, inner, inner, hs.booleans()),
        hs.builds(
            ex.Case,
            hs.lists(hs.builds(ex.WhenClause, inner, inner), min_size=1, max_size=2).map(tuple),
            hs.none() | inner,
            hs.none() | inner,
        ),
        hs.builds(ex.Cast, inner, sql_types),
        hs.builds(ex.ArrayConstructor, hs.lists(inner, max_size=3).map(tuple)),
        hs.builds(ex.MapConstructor, hs.lists(hs.tuples(inner, inner), max_size=2).map(tuple)),
        hs.builds(ex.StructConstructor, hs.lists(hs.tuples(names, inner), max_size=2).map(tuple)),
        hs.builds(ex.FunctionCall, names, args),
        hs.builds(
            ex.FunctionCall,
            names,
            hs.lists(
                hs.builds(ex.Lambda, hs.lists(names, min_size=1, max_size=2).map(tuple), inner),
                min_size=1,
                max_size=2,
            ).map(tuple),
        ),
        hs.builds(ex.FunctionCall, names, hs.just(()), hs.just(True)),
        hs.builds(ex.Dereference, inner, names),
        hs.builds(ex.Subscript, inner, inner),
    )


expressions: hs.SearchStrategy[ex.Expression] = hs.recursive(
    hs.one_of(literals, hs.builds(ex.ColumnRef, names, hs.none() | names)),
    _compound,
    max_leaves=8,
)

maybe = hs.none() | expressions
relations = hs.builds(st.AliasedRelation, names, hs.none() | names)
joins = hs.builds(
    st.Join,
    relations,
    hs.lists(
        hs.builds(
            st.JoinedSource,
            hs.sampled_from(st.JoinType),
            relations,
            expressions,
            hs.none()
            | hs.builds(st.WithinExpression, time_spans, time_spans, hs.none() | time_spans),
        ),
        min_size=1,
        max_size=2,
    ).map(tuple),
)
windows = hs.one_of(
    hs.builds(
        st.WindowExpression,
        hs.sampled_from([st.WindowKind.TUMBLING, st.WindowKind.SESSION]),
        time_spans,
        hs.none(),
        hs.none() | time_spans,
        hs.none() | time_spans,
    ),
    hs.builds(
        st.WindowExpression,
        hs.just(st.WindowKind.HOPPING),
        time_spans,
        time_spans,
        hs.none() | time_spans,
        hs.none() | time_spans,
    ),
)
queries = hs.builds(
    st.Query,
    hs.lists(
        hs.one_of(
            hs.builds(st.SingleColumn, expressions, hs.none() | names),
            hs.builds(st.AllColumns, hs.none() | names),
            hs.builds(st.StructAll, expressions),
        ),
        min_size=1,
        max_size=3,
    ).map(tuple),
    hs.one_of(relations, joins),
    hs.none() | windows,
    maybe,
    hs.lists(expressions, max_size=2).map(tuple),
    hs.lists(expressions, max_size=2).map(tuple),
    maybe,
    hs.none() | hs.sampled_from(st.Emit),
    hs.none() | hs.integers(0, 1000),
)
properties = hs.lists(hs.builds(st.Property, upper_names, literals), max_size=3).map(tuple)
constraints = hs.one_of(
    hs.tuples(
        hs.none()
        | hs.sampled_from(
            [st.ColumnConstraint.KEY, st.ColumnConstraint.PRIMARY_KEY, st.ColumnConstraint.HEADERS]
        ),
        hs.none(),
    ),
    hs.tuples(hs.just(st.ColumnConstraint.HEADER), hs.text(max_size=5)),
)
elements = hs.lists(
    hs.builds(lambda n, t, c: st.TableElement(n, t, c[0], c[1]), names, sql_types, constraints),
    max_size=3,
).map(tuple)
kinds = hs.sampled_from(st.SourceKind)
statements: hs.SearchStrategy[st.Statement] = hs.one_of(
    hs.builds(st.QueryStatement, queries),
    hs.builds(
        st.CreateSource,
        kinds,
        names,
        elements,
        properties,
        hs.booleans(),
        hs.booleans(),
        hs.booleans(),
    ),
    hs.builds(st.CreateAsSelect, kinds, names, queries, properties, hs.booleans(), hs.booleans()),
    hs.builds(st.InsertInto, names, queries, properties),
    hs.builds(
        st.InsertValues,
        names,
        hs.lists(expressions, max_size=3).map(tuple),
        hs.lists(names, max_size=3).map(tuple),
    ),
    hs.builds(st.ListStatement, hs.sampled_from(st.ListSubject), hs.booleans(), hs.booleans()),
    hs.builds(st.Describe, names, hs.booleans()),
    hs.builds(st.DescribeFunction, names),
    hs.builds(st.Explain, hs.none(), names),
    hs.builds(st.Explain, hs.builds(st.QueryStatement, queries)),
    hs.builds(st.Terminate, hs.none() | names),
    hs.builds(st.DropSource, kinds, names, hs.booleans(), hs.booleans()),
    hs.builds(
        st.PrintTopic,
        hs.text(max_size=8),
        hs.booleans(),
        hs.none() | hs.integers(0, 100),
        hs.none() | hs.integers(0, 100),
    ),
    hs.builds(st.SetProperty, hs.text(max_size=8), hs.text(max_size=8)),
    hs.builds(st.UnsetProperty, hs.text(max_size=8)),
    hs.builds(st.RunScript, hs.text(max_size=8)),
)


@settings(max_examples=300, deadline=None)
@given(expressions)
def test_expressions_round_trip(e: ex.Expression) -> None:
    assert parse_expression(format_expression(e)) == e


@settings(max_examples=200, deadline=None)
@given(statements)
def test_statements_round_trip(s: st.Statement) -> None:
    text = format_statement(s)
    again = parse_statement(text)
    assert again == s
    assert again.text == text


@given(hs.lists(statements, max_size=4))
@settings(max_examples=30, deadline=None)
def test_scripts_round_trip(script: list[st.Statement]) -> None:
    assert parse("\n".join(format_statement(s) for s in script)) == script


@given(sql_types)
def test_types_round_trip(t: ty.SqlType) -> None:
    assert parse_expression(f"CAST(X AS {format_type(t)})") == ex.Cast(ex.ColumnRef("X"), t)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        (
            "create stream s (id int key, `v` varchar) with (kafka_topic='s', partitions=2);",
            "CREATE STREAM S (ID INTEGER KEY, `v` STRING) WITH (KAFKA_TOPIC='s', PARTITIONS=2);",
        ),
        (
            "select a, b + c * 2 as total from t where x = 'it''s' and not y emit changes;",
            "SELECT A, (B + (C * 2)) AS TOTAL\nFROM T\nWHERE ((X = 'it''s') AND (NOT Y))\n"
            "EMIT CHANGES;",
        ),
        (
            "create table c as select k, count(*) from s window tumbling (size 1 hour) group by k;",
            "CREATE TABLE C AS SELECT K, COUNT(*)\nFROM S\nWINDOW TUMBLING (SIZE 1 HOURS)\n"
            "GROUP BY K;",
        ),
        (
            "select * from a join b within 5 seconds on a.id = b.id emit changes;",
            "SELECT *\nFROM A\nINNER JOIN B WITHIN 5 SECONDS ON (A.ID = B.ID)\nEMIT CHANGES;",
        ),
        ("select `size`, key from `select`;", "SELECT `size`, `KEY`\nFROM `select`;"),
        ("print 'Orders' from beginning;", "PRINT 'Orders' FROM BEGINNING;"),
        ("list streams", "SHOW STREAMS;"),
        ("select 1.50, 2.5e1 from s;", "SELECT 1.50, 25.0E0\nFROM S;"),
    ],
)
def test_canonical_text(text: str, canonical: str) -> None:
    assert format_statement(parse_statement(text)) == canonical


def test_decimal_without_fraction_stays_decimal() -> None:
    e = ex.DecimalLiteral(decimal.Decimal("100"))
    assert format_expression(e) == "100."
    assert parse_expression("100.") == e
