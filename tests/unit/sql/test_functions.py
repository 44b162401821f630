"""The function registry: which signature a call's argument types pick, the type it returns,
and ksqlDB's errors for an unknown function or arguments no signature takes."""

from __future__ import annotations

import pytest

from strom.sql import types as ty
from strom.sql.errors import SqlSemanticError
from strom.sql.functions import FUNCTIONS, is_aggregate, resolve


def result(name: str, *args: ty.SqlType | None) -> ty.SqlType | None:
    return resolve(name, args).result(args)


def test_overloads_pick_by_count_and_type() -> None:
    assert result("ROUND", ty.DOUBLE) == ty.BIGINT
    assert result("ROUND", ty.DOUBLE, ty.INT) == ty.DOUBLE
    assert result("ROUND", ty.DecimalType(5, 2)) == ty.DecimalType(5, 2)
    assert result("SUBSTRING", ty.STRING, ty.INT) == ty.STRING
    assert result("SUBSTRING", ty.STRING, ty.INT, ty.INT) == ty.STRING
    assert result("COUNT") == ty.BIGINT


def test_integers_widen_and_nulls_fit_anywhere() -> None:
    assert result("TIMESTAMPTOSTRING", ty.INT, ty.STRING) == ty.STRING
    assert result("SQRT", ty.INT) == ty.DOUBLE
    assert result("UCASE", None) == ty.STRING
    assert result("IFNULL", None, ty.BIGINT) == ty.BIGINT
    assert result("COLLECT_LIST", ty.INT) == ty.ArrayType(ty.INT)


def test_variadic_functions_take_any_count_of_their_last_parameter() -> None:
    assert result("CONCAT", ty.STRING) == ty.STRING
    assert result("CONCAT", ty.STRING, ty.STRING, None, ty.STRING) == ty.STRING
    assert result("COALESCE", None, ty.DOUBLE, ty.DOUBLE) == ty.DOUBLE
    with pytest.raises(SqlSemanticError, match=r"'CONCAT' does not accept .*\(STRING, INTEGER\)"):
        resolve("CONCAT", [ty.STRING, ty.INT])


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("NOPE", [], "Can't find any functions with the name 'NOPE'"),
        ("LEN", [ty.INT], "Function 'LEN' does not accept parameters (INTEGER)."),
        ("LEN", [], "Function 'LEN' does not accept parameters ()."),
        ("SUM", [ty.STRING], "Function 'SUM' does not accept parameters (STRING)."),
    ],
)
def test_errors(name: str, args: list[ty.SqlType], message: str) -> None:
    with pytest.raises(SqlSemanticError) as info:
        resolve(name, args)
    assert str(info.value) == message


def test_aggregates_are_marked() -> None:
    aggregates = {name for name in FUNCTIONS if is_aggregate(name)}
    assert {"COUNT", "SUM", "AVG", "MIN", "MAX", "COLLECT_LIST", "LATEST_BY_OFFSET"} <= aggregates
    assert not aggregates & {"UCASE", "ABS", "IFNULL", "EXTRACTJSONFIELD"}
