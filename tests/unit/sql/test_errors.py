"""A statement strom cannot read gets an error naming the line, the column and what could
have stood there, as ksqlDB's "line 1:10: Syntax Error"."""

from __future__ import annotations

import pytest

from strom.sql.errors import SqlSyntaxError
from strom.sql.parser import parse, parse_expression, parse_statement


def syntax_error(text: str) -> SqlSyntaxError:
    with pytest.raises(SqlSyntaxError) as info:
        parse(text)
    return info.value


def test_misspelt_keyword_names_position_found_and_expected() -> None:
    e = syntax_error("SELECT * FORM orders;")
    assert (e.line, e.column, e.found) == (1, 10, "'FORM'")
    assert "'FROM'" in e.expected
    assert str(e) == "line 1:10: Syntax Error\nExpecting ',', 'FROM', got 'FORM'"


def test_error_on_a_later_line() -> None:
    e = syntax_error("SHOW STREAMS;\nSELECT a,\n  b FROM s WHERE;")
    assert (e.line, e.column, e.found) == (3, 17, "';'")
    assert {"'NOT'", "'CASE'", "an identifier", "a number"} <= set(e.expected)


def test_unknown_statement_lists_the_statements() -> None:
    e = syntax_error("SELEC 1;")
    assert (e.line, e.column) == (1, 1)
    assert {"'CREATE'", "'SELECT'", "'SHOW'", "'DROP'"} <= set(e.expected)


def test_end_of_input_is_eof_past_the_last_character() -> None:
    e = syntax_error("SELECT a\nFROM")
    assert (e.line, e.column, e.found) == (2, 5, "<EOF>")
    assert e.expected == ("an identifier",)


def test_a_character_no_token_starts() -> None:
    e = syntax_error("SELECT a FROM s WHERE a = $;")
    assert (e.line, e.column, e.found) == (1, 27, "'$'")
    assert "a number" in e.expected


def test_unterminated_string() -> None:
    e = syntax_error("SELECT 'abc FROM s;")
    assert (e.line, e.column, e.found) == (1, 8, '"\'"')


def test_unknown_type_is_named_where_it_stands() -> None:
    e = syntax_error("CREATE STREAM s (id INT KEY,\n  v FOO) WITH (kafka_topic='s');")
    assert (e.line, e.column) == (2, 5)
    assert str(e) == "line 2:5: Unknown type: FOO"


def test_double_overflow() -> None:
    e = syntax_error("SELECT K,\n  1.7976931348623159E308 FROM s;")
    assert str(e) == "line 2:3: Number overflows DOUBLE: 1.7976931348623159E308"


def test_decimal_scale_above_precision() -> None:
    e = syntax_error("SELECT CAST(x AS DECIMAL(2, 5)) FROM s;")
    assert (e.line, e.column) == (1, 18)
    assert "DECIMAL(2, 5)" in str(e)


@pytest.mark.parametrize(
    ("text", "column", "expected"),
    [
        ("CREATE STREAM s (a INT) AS SELECT * FROM t;", 25, "'WITH'"),
        ("SELECT * FROM s WINDOW TUMBLING (SIZE 1 WEEK);", 41, "a time unit"),
        ("SELECT * FROM s WINDOW HOPPING (SIZE 1 HOUR);", 44, "','"),
        ("SELECT * FROM a JOIN b;", 23, "'ON'"),
        ("SELECT * FROM s EMIT NOW;", 22, "'CHANGES'"),
        ("DROP VIEW v;", 6, "'STREAM'"),
        ("SHOW TABLES EXTENDED STREAMS;", 22, "';'"),
        ("SET 'a' 'b';", 9, "'='"),
    ],
)
def test_each_clause_says_what_it_wanted(text: str, column: int, expected: str) -> None:
    e = syntax_error(text)
    assert (e.line, e.column) == (1, column)
    assert expected in e.expected


def test_parse_statement_wants_exactly_one() -> None:
    with pytest.raises(SqlSyntaxError, match="exactly one statement, got 2"):
        parse_statement("SHOW STREAMS; SHOW TABLES;")


def test_expression_errors() -> None:
    with pytest.raises(SqlSyntaxError) as info:
        parse_expression("a +")
    assert (info.value.line, info.value.column, info.value.found) == (1, 4, "<EOF>")


def test_expected_after_a_bad_character_is_what_the_parser_takes_there() -> None:
    e = syntax_error("SELECT a FROM s WHERE a ! b;")
    assert (e.line, e.column, e.found) == (1, 25, "'!'")
    assert {"'='", "'<>'", "'AND'", "'IS'", "'EMIT'"} <= set(e.expected)
    assert "'SELECT'" not in e.expected and "'WINDOW'" not in e.expected


def test_lambda_parameters_are_names() -> None:
    e = syntax_error("SELECT FILTER(a, (x + 1) => x) FROM s;")
    assert str(e) == "line 1:18: A lambda's parameters must be names"


def test_integer_past_bigint() -> None:
    assert str(syntax_error("SELECT 9223372036854775808 FROM s;")) == (
        "line 1:8: Invalid numeric literal: 9223372036854775808"
    )
    parse("SELECT 9223372036854775807 FROM s;")


@pytest.mark.parametrize(
    "text",
    ["SELECT COUNT(*) FROM t GROUP BY a AND b;", "SELECT * FROM t PARTITION BY a = b;"],
)
def test_group_and_partition_by_take_value_expressions(text: str) -> None:
    syntax_error(text)
