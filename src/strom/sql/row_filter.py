"""A pull query's WHERE as a Python predicate over a row of a table's state (its columns by
name), for the table scans and key ranges ksqlDB answers from its state store: comparisons,
BETWEEN, IN, IS [NOT] NULL and AND/OR/NOT of columns and literals, with SQL's NULL logic (a
comparison with NULL is unknown, and a row is kept only when the WHERE is true). Pure.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from strom.sql import expressions as ex
from strom.sql.errors import SqlSemanticError
from strom.sql.formatter import format_expression

__all__ = ["row_filter"]

Row = Mapping[str, object]
Value = Callable[[Row], Any]
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def row_filter(where: ex.Expression) -> Callable[[Row], bool]:
    """Whether a row is kept; `SqlSemanticError` for a WHERE that is not supported here."""
    test = _condition(where)
    return lambda row: test(row) is True


def _value(e: ex.Expression) -> Value:
    match e:
        case ex.ColumnRef(name):
            return lambda row: row.get(name)
        case ex.NullLiteral():
            return lambda row: None
        case (
            ex.StringLiteral(v)
            | ex.IntegerLiteral(v)
            | ex.BooleanLiteral(v)
            | ex.DoubleLiteral(v)
            | ex.DecimalLiteral(v)
        ):
            return lambda row: v
        case ex.Unary("-", ex.IntegerLiteral(v) | ex.DoubleLiteral(v) | ex.DecimalLiteral(v)):
            return lambda row: -v
    raise SqlSemanticError(
        f"Unsupported pull query WHERE: {format_expression(e)}: a pull query compares columns "
        "with literals only, yet."
    )


def _compare(op: str, left: Value, right: Value) -> Value:
    def test(row: Row) -> bool | None:
        a, b = left(row), right(row)
        if a is None or b is None:
            return None
        try:
            return _COMPARE[op](a, b)
        except TypeError:  # values of types the analyzer let meet (a number and a decimal)
            return _COMPARE[op](float(a), float(b))

    return test


def _condition(e: ex.Expression) -> Value:
    match e:
        case ex.Comparison(op, left, right):
            return _compare(op, _value(left), _value(right))
        case ex.Logical(op, left, right):
            a, b = _condition(left), _condition(right)
            return _and(a, b) if op == "AND" else _or(a, b)
        case ex.Not(operand):
            return _condition_not(_condition(operand))
        case ex.Between(value, lower, upper, negated):
            v = _value(value)
            low, high = _compare(">=", v, _value(lower)), _compare("<=", v, _value(upper))
            between = _and(low, high)
            return _condition_not(between) if negated else between
        case ex.InList(value, items, negated):
            v = _value(value)
            found = [_compare("=", v, _value(i)) for i in items]

            def in_list(row: Row) -> bool | None:
                results = [f(row) for f in found]
                return True if True in results else (None if None in results else False)

            return _condition_not(in_list) if negated else in_list
        case ex.IsNull(value, negated):
            v = _value(value)
            return lambda row: (v(row) is None) != negated
        case ex.BooleanLiteral(flag):
            return lambda row: flag
    raise SqlSemanticError(
        f"Unsupported pull query WHERE: {format_expression(e)} is not supported in pull "
        "queries yet."
    )


def _condition_not(inner: Value) -> Value:
    return lambda row: None if (v := inner(row)) is None else not v


def _and(a: Value, b: Value) -> Value:
    def test(row: Row) -> bool | None:
        x, y = a(row), b(row)
        if x is False or y is False:
            return False
        return None if x is None or y is None else True

    return test


def _or(a: Value, b: Value) -> Value:
    def test(row: Row) -> bool | None:
        x, y = a(row), b(row)
        if x is True or y is True:
            return True
        return None if x is None or y is None else False

    return test
