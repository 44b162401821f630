"""A SELECT checked against declared sources: unknown sources and columns, operands of the
wrong type, and the output columns of a good query."""

from __future__ import annotations

import pytest

from strom.sql import statements as st
from strom.sql import types as ty
from strom.sql.analyzer import Column, OutputColumn, SourceSchema, analyze
from strom.sql.errors import SqlSemanticError
from strom.sql.parser import parse_statement

ORDERS = SourceSchema(
    "ORDERS",
    st.SourceKind.STREAM,
    (
        Column("ID", ty.BIGINT, key=True),
        Column("CUSTOMER_ID", ty.INT),
        Column("AMOUNT", ty.DecimalType(10, 2)),
        Column("ITEMS", ty.ArrayType(ty.STRING)),
        Column("ATTRS", ty.MapType(ty.STRING, ty.DOUBLE)),
        Column(
            "ADDRESS",
            ty.StructType((ty.StructField("CITY", ty.STRING), ty.StructField("ZIP", ty.INT))),
        ),
        Column("PLACED", ty.TIMESTAMP),
    ),
)
CUSTOMERS = SourceSchema(
    "CUSTOMERS",
    st.SourceKind.TABLE,
    (Column("ID", ty.INT, key=True), Column("NAME", ty.STRING)),
)
SOURCES = {"ORDERS": ORDERS, "CUSTOMERS": CUSTOMERS}


def columns(sql: str) -> tuple[OutputColumn, ...]:
    s = parse_statement(sql)
    query = s.query if isinstance(s, st.QueryStatement | st.CreateAsSelect) else None
    assert query is not None
    return analyze(query, SOURCES).columns


def error(sql: str) -> str:
    with pytest.raises(SqlSemanticError) as info:
        columns(sql)
    return str(info.value)


def test_projection_types_and_names() -> None:
    out = columns(
        "SELECT id, amount * 2 AS doubled, amount + 1.5, address->city, items[1], "
        "attrs['k'], customer_id / 2, CAST(id AS STRING) s, ROWTIME, "
        "CASE WHEN amount > 10 THEN 'big' ELSE 'small' END AS size, UCASE(items[1]) "
        "FROM orders WHERE address->zip IN (1, 2) AND placed > '2024-01-01' EMIT CHANGES;"
    )
    assert out == (
        OutputColumn("ID", ty.BIGINT),
        OutputColumn("DOUBLED", ty.DecimalType(21, 2)),
        OutputColumn("KSQL_COL_0", ty.DecimalType(11, 2)),
        OutputColumn("CITY", ty.STRING),
        OutputColumn("KSQL_COL_1", ty.STRING),
        OutputColumn("KSQL_COL_2", ty.DOUBLE),
        OutputColumn("KSQL_COL_3", ty.INT),
        OutputColumn("S", ty.STRING),
        OutputColumn("ROWTIME", ty.BIGINT),
        OutputColumn("SIZE", ty.STRING),
        OutputColumn("KSQL_COL_4", ty.STRING),
    )


def test_star_on_one_source_and_on_a_join() -> None:
    assert [c.name for c in columns("SELECT * FROM customers;")] == ["ID", "NAME"]
    joined = columns(
        "CREATE STREAM enriched AS SELECT o.*, c.name FROM orders o "
        "JOIN customers c ON o.customer_id = c.id EMIT CHANGES;"
    )
    assert [c.name for c in joined][:3] == ["O_ID", "O_CUSTOMER_ID", "O_AMOUNT"]
    assert joined[-1] == OutputColumn("NAME", ty.STRING)


def test_window_bounds_only_in_windowed_queries() -> None:
    out = columns(
        "SELECT customer_id, WINDOWSTART, COUNT(*) FROM orders "
        "WINDOW TUMBLING (SIZE 1 HOUR) GROUP BY customer_id EMIT CHANGES;"
    )
    assert out[1] == OutputColumn("WINDOWSTART", ty.BIGINT)
    assert error("SELECT WINDOWSTART FROM orders;") == (
        "SELECT column 'WINDOWSTART' cannot be resolved."
    )


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT * FROM nope;", "NOPE does not exist."),
        ("SELECT * FROM orders JOIN nope n ON orders.id = n.id;", "NOPE does not exist."),
        ("SELECT price FROM orders;", "SELECT column 'PRICE' cannot be resolved."),
        ("SELECT id FROM orders WHERE pirce > 1;", "WHERE column 'PIRCE' cannot be resolved."),
        (
            "SELECT x.id FROM orders o;",
            "SELECT column 'X.ID' cannot be resolved.",
        ),
        (
            "SELECT COUNT(*) FROM orders GROUP BY nope;",
            "GROUP BY column 'NOPE' cannot be resolved.",
        ),
        (
            "SELECT id FROM orders o JOIN customers c ON o.customer_id = c.id;",
            "Column 'ID' is ambiguous. Could be any of: O.ID, C.ID",
        ),
        (
            "SELECT id FROM orders WHERE address->street = 'x';",
            "Could not find field 'STREET' in 'ADDRESS'.",
        ),
        (
            "SELECT id FROM orders WHERE amount = 'ten';",
            "Cannot compare AMOUNT (DECIMAL(10, 2)) to 'ten' (STRING) with EQUAL.",
        ),
        (
            "SELECT id FROM orders WHERE id BETWEEN 'a' AND 'z';",
            "Cannot compare ID (BIGINT) to 'a' (STRING) with GREATER_THAN_OR_EQUAL.",
        ),
        (
            "SELECT id + 'x' FROM orders;",
            "Error processing expression: (ID + 'x'). Unsupported arithmetic types. BIGINT STRING",
        ),
        (
            "SELECT id FROM orders WHERE customer_id;",
            "Type error in WHERE expression: Should evaluate to boolean but is CUSTOMER_ID "
            "(INTEGER) instead.",
        ),
        (
            "SELECT id FROM orders WHERE id > 1 AND customer_id;",
            "((ID > 1) AND CUSTOMER_ID): CUSTOMER_ID should be BOOLEAN but is INTEGER.",
        ),
        (
            "SELECT CASE WHEN id > 1 THEN 'a' ELSE 2 END FROM orders;",
            "Invalid CASE expression: all values must have the same type; got STRING and INTEGER.",
        ),
        (
            "SELECT items['a'] FROM orders;",
            "Cannot subscript ITEMS (ARRAY<STRING>) with 'a' (STRING).",
        ),
        (
            "SELECT id FROM orders WHERE id LIKE 'a%';",
            "(ID LIKE 'a%'): LIKE takes STRING operands, ID is BIGINT.",
        ),
    ],
)
def test_errors(sql: str, message: str) -> None:
    assert error(sql) == message


def test_nulls_are_untyped_and_functions_typed_by_the_registry() -> None:
    out = columns(
        "SELECT NULL AS n, ABS(amount), IFNULL(NULL, customer_id), COUNT(*), "
        "SPLIT(address->city, ','), AVG(customer_id) FROM orders WHERE NULL IS NULL;"
    )
    assert out == (
        OutputColumn("N", None),
        OutputColumn("KSQL_COL_0", ty.DecimalType(10, 2)),
        OutputColumn("KSQL_COL_1", ty.INT),
        OutputColumn("KSQL_COL_2", ty.BIGINT),
        OutputColumn("KSQL_COL_3", ty.ArrayType(ty.STRING)),
        OutputColumn("KSQL_COL_4", ty.DOUBLE),
    )
    assert error("SELECT NOPE(id) FROM orders;") == "Can't find any functions with the name 'NOPE'"
    assert error("SELECT UCASE(id) FROM orders;") == (
        "Function 'UCASE' does not accept parameters (BIGINT)."
    )


def test_struct_fields_as_columns_and_lambdas_refused() -> None:
    out = columns("SELECT address->* FROM orders;")
    assert out == (OutputColumn("CITY", ty.STRING), OutputColumn("ZIP", ty.INT))
    assert error("SELECT FILTER(items, x => x = 'a') FROM orders;") == (
        "FILTER: functions taking lambdas are not supported."
    )
    assert error("SELECT id->* FROM orders;") == "Expected STRUCT type for ID->* but got BIGINT."
