"""ksqlDB's built-in functions as a table (ksqlDB's `FunctionRegistry` and its UDF/UDAF
classes): for each name its signatures, each with the argument types it takes, its result type
and how to build it as a Spark Column.

The table is pure data: a signature's `build` receives PySpark's `functions` module, the
argument Columns and the arguments' literal values (None where an argument is not a literal),
so nothing here imports Spark. `resolve` picks the signature a call's argument types match,
which is how the analyzer types calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from strom.sql import types as ty
from strom.sql.errors import SqlSemanticError
from strom.sql.formatter import format_type

__all__ = ["ANY", "FUNCTIONS", "NUMERIC", "Signature", "is_aggregate", "resolve"]

ANY = "ANY"
"""A parameter that takes any type (ksqlDB's generic `T`)."""
NUMERIC = "NUMERIC"
"""A parameter that takes INTEGER, BIGINT, DOUBLE or DECIMAL."""

Param = ty.SqlType | str
ArgTypes = Sequence[ty.SqlType | None]
Build = Callable[[Any, list[Any], list[Any]], Any]
"""(pyspark.sql.functions, argument Columns, argument literals) -> Column."""


@dataclass(frozen=True)
class Signature:
    """One way to call a function: `params` (the last repeats when `variadic`), the result
    type (fixed, or computed from the argument types), and the Spark expression."""

    params: tuple[Param, ...]
    returns: ty.SqlType | Callable[[ArgTypes], ty.SqlType | None]
    build: Build
    variadic: bool = False
    aggregate: bool = False
    description: str = ""

    def result(self, args: ArgTypes) -> ty.SqlType | None:
        return self.returns(args) if callable(self.returns) else self.returns

    def accepts(self, args: ArgTypes) -> bool:
        if self.variadic:
            if len(args) < len(self.params) - 1:
                return False
            params = [*self.params[:-1], *[self.params[-1]] * (len(args) - len(self.params) + 1)]
        else:
            if len(args) != len(self.params):
                return False
            params = list(self.params)
        return all(_matches(p, a) for p, a in zip(params, args, strict=True))


def _numeric(t: ty.SqlType | None) -> bool:
    return isinstance(t, ty.DecimalType) or t in (ty.INT, ty.BIGINT, ty.DOUBLE)


def _matches(param: Param, arg: ty.SqlType | None) -> bool:
    if arg is None or param == ANY:  # NULL fits any parameter
        return True
    if param == NUMERIC:
        return _numeric(arg)
    if param == ty.BIGINT and arg == ty.INT:  # INTEGER widens to BIGINT, as ksqlDB
        return True
    if param == ty.DOUBLE and _numeric(arg):
        return True
    return param == arg


def _first(args: ArgTypes) -> ty.SqlType | None:
    return next((a for a in args if a is not None), None)


def _array_of_first(args: ArgTypes) -> ty.SqlType | None:
    element = args[0] if args else None
    return None if element is None else ty.ArrayType(element)


def _sum_type(args: ArgTypes) -> ty.SqlType | None:
    return args[0]


def _literal_split(F: Any, c: list[Any], lit: list[Any]) -> Any:
    """SPLIT's delimiter is plain text; Spark's `split` takes a regular expression."""
    if isinstance(lit[1], str):
        if lit[1] == "":
            return F.split(c[0], "(?!$)")
        return F.split(c[0], re.escape(lit[1]))
    return F.split(c[0], c[1])


def _format(lit: list[Any], index: int, function: str) -> str:
    """The string literal argument `index` (Spark takes formats and patterns as text)."""
    value = lit[index] if index < len(lit) else None
    if not isinstance(value, str):
        raise SqlSemanticError(f"{function}: argument {index + 1} must be a string literal.")
    return value


def _timestamp_to_string(F: Any, c: list[Any], lit: list[Any]) -> Any:
    ts = F.timestamp_millis(c[0])
    if len(c) > 2:
        ts = F.from_utc_timestamp(ts, c[2])
    return F.date_format(ts, _format(lit, 1, "TIMESTAMPTOSTRING"))


def _string_to_timestamp(F: Any, c: list[Any], lit: list[Any]) -> Any:
    ts = F.to_timestamp(c[0], _format(lit, 1, "STRINGTOTIMESTAMP"))
    if len(c) > 2:
        ts = F.to_utc_timestamp(ts, c[2])
    return F.unix_millis(ts)


def _round(F: Any, c: list[Any], lit: list[Any]) -> Any:
    if len(c) == 1:
        return F.round(c[0]).cast("bigint")
    return F.round(c[0], lit[1] if isinstance(lit[1], int) else 0)


def _round_type(args: ArgTypes) -> ty.SqlType | None:
    if len(args) == 1 and args[0] in (ty.DOUBLE, None):
        return ty.BIGINT
    return args[0]


def _sig(
    params: Sequence[Param],
    returns: ty.SqlType | Callable[[ArgTypes], ty.SqlType | None],
    build: Build,
    description: str,
    *,
    variadic: bool = False,
    aggregate: bool = False,
) -> Signature:
    return Signature(tuple(params), returns, build, variadic, aggregate, description)


S, N, B, D = ty.STRING, ty.INT, ty.BIGINT, ty.DOUBLE

FUNCTIONS: Mapping[str, tuple[Signature, ...]] = {
    # strings
    "UCASE": (_sig([S], S, lambda F, c, _: F.upper(c[0]), "The string in upper case."),),
    "LCASE": (_sig([S], S, lambda F, c, _: F.lower(c[0]), "The string in lower case."),),
    "LEN": (_sig([S], N, lambda F, c, _: F.length(c[0]), "The string's length."),),
    "CONCAT": (_sig([S], S, lambda F, c, _: F.concat(*c), "The strings joined.", variadic=True),),
    "CONCAT_WS": (
        _sig(
            [S, S],
            S,
            lambda F, c, lit: F.concat_ws(_format(lit, 0, "CONCAT_WS"), *c[1:]),
            "The strings after the first joined by the first, NULLs skipped.",
            variadic=True,
        ),
    ),
    "SUBSTRING": (
        _sig(
            [S, N],
            S,
            lambda F, c, _: F.substring(c[0], c[1], F.lit(2**31 - 1)),
            "From a 1-based position (negative: from the end) to the end.",
        ),
        _sig(
            [S, N, N],
            S,
            lambda F, c, _: F.substring(c[0], c[1], c[2]),
            "A given length from a 1-based position.",
        ),
    ),
    "TRIM": (_sig([S], S, lambda F, c, _: F.trim(c[0]), "Without leading and trailing spaces."),),
    "LTRIM": (_sig([S], S, lambda F, c, _: F.ltrim(c[0]), "Without leading spaces."),),
    "RTRIM": (_sig([S], S, lambda F, c, _: F.rtrim(c[0]), "Without trailing spaces."),),
    "REPLACE": (
        _sig(
            [S, S, S],
            S,
            lambda F, c, _: F.replace(c[0], c[1], c[2]),
            "Every occurrence of the second string replaced by the third.",
        ),
    ),
    "SPLIT": (_sig([S, S], ty.ArrayType(S), _literal_split, "The parts between the delimiters."),),
    "INSTR": (
        _sig([S, S], N, lambda F, c, _: F.instr(c[0], c[1]), "1-based position of a substring."),
    ),
    "INITCAP": (
        _sig([S], S, lambda F, c, _: F.initcap(c[0]), "Each word's first letter capitalized."),
    ),
    "LPAD": (
        _sig(
            [S, N, S],
            S,
            lambda F, c, _: F.lpad(c[0], c[1], c[2]),
            "Padded on the left to a length.",
        ),
    ),
    "RPAD": (
        _sig(
            [S, N, S],
            S,
            lambda F, c, _: F.rpad(c[0], c[1], c[2]),
            "Padded on the right to a length.",
        ),
    ),
    "REGEXP_EXTRACT": (
        _sig(
            [S, S],
            S,
            lambda F, c, lit: F.regexp_extract(c[0], _format(lit, 1, "REGEXP_EXTRACT"), 0),
            "The first match of a regular expression.",
        ),
    ),
    "REGEXP_REPLACE": (
        _sig(
            [S, S, S],
            S,
            lambda F, c, _: F.regexp_replace(c[0], c[1], c[2]),
            "Every match of a regular expression replaced.",
        ),
    ),
    # math
    "ABS": (_sig([NUMERIC], _first, lambda F, c, _: F.abs(c[0]), "The absolute value."),),
    "ROUND": (
        _sig([NUMERIC], _round_type, _round, "Rounded half up to a whole number."),
        _sig([NUMERIC, N], _first, _round, "Rounded half up to a number of decimal places."),
    ),
    "FLOOR": (_sig([NUMERIC], _first, lambda F, c, _: F.floor(c[0]), "Rounded down."),),
    "CEIL": (_sig([NUMERIC], _first, lambda F, c, _: F.ceil(c[0]), "Rounded up."),),
    "SQRT": (_sig([D], D, lambda F, c, _: F.sqrt(c[0]), "The square root."),),
    "EXP": (_sig([D], D, lambda F, c, _: F.exp(c[0]), "e to the power of the value."),),
    "LN": (_sig([D], D, lambda F, c, _: F.log(c[0]), "The natural logarithm."),),
    "POWER": (_sig([D, D], D, lambda F, c, _: F.pow(c[0], c[1]), "The first to the second."),),
    "SIGN": (_sig([NUMERIC], N, lambda F, c, _: F.signum(c[0]).cast("int"), "-1, 0 or 1."),),
    "RANDOM": (_sig([], D, lambda F, c, _: F.rand(), "A random DOUBLE in [0, 1)."),),
    # nulls
    "IFNULL": (
        _sig(
            [ANY, ANY],
            _first,
            lambda F, c, _: F.coalesce(c[0], c[1]),
            "The first value, or the second when the first is NULL.",
        ),
    ),
    "COALESCE": (
        _sig(
            [ANY],
            _first,
            lambda F, c, _: F.coalesce(*c),
            "The first value that is not NULL.",
            variadic=True,
        ),
    ),
    # time
    "UNIX_TIMESTAMP": (
        _sig(
            [],
            B,
            lambda F, c, _: F.unix_millis(F.current_timestamp()),
            "Now, in milliseconds since the epoch.",
        ),
    ),
    "TIMESTAMPTOSTRING": (
        _sig([B, S], S, _timestamp_to_string, "Milliseconds since the epoch formatted (UTC)."),
        _sig([B, S, S], S, _timestamp_to_string, "... in a time zone."),
    ),
    "STRINGTOTIMESTAMP": (
        _sig([S, S], B, _string_to_timestamp, "A formatted time (UTC) to milliseconds."),
        _sig([S, S, S], B, _string_to_timestamp, "... in a time zone."),
    ),
    # JSON
    "EXTRACTJSONFIELD": (
        _sig(
            [S, S],
            S,
            lambda F, c, _: F.get_json_object(c[0], c[1]),
            "The value at a JSON path ($.a.b), as a string.",
        ),
    ),
    # aggregates
    "COUNT": (
        _sig([], B, lambda F, c, _: F.count(F.lit(1)), "The number of rows.", aggregate=True),
        _sig(
            [ANY],
            B,
            lambda F, c, _: F.count(c[0]),
            "The number of non-NULL values.",
            aggregate=True,
        ),
    ),
    "COUNT_DISTINCT": (
        _sig(
            [ANY],
            B,
            lambda F, c, _: F.approx_count_distinct(c[0]),
            "The approximate number of distinct values (HyperLogLog, as ksqlDB).",
            aggregate=True,
        ),
    ),
    "SUM": (
        _sig(
            [NUMERIC],
            _sum_type,
            lambda F, c, _: F.sum(c[0]),
            "The sum of the values.",
            aggregate=True,
        ),
    ),
    "MIN": (_sig([ANY], _first, lambda F, c, _: F.min(c[0]), "The least value.", aggregate=True),),
    "MAX": (
        _sig([ANY], _first, lambda F, c, _: F.max(c[0]), "The greatest value.", aggregate=True),
    ),
    "AVG": (
        _sig([NUMERIC], D, lambda F, c, _: F.avg(c[0]), "The mean of the values.", aggregate=True),
    ),
    "COLLECT_LIST": (
        _sig(
            [ANY],
            _array_of_first,
            lambda F, c, _: F.collect_list(c[0]),
            "Every value, as an array.",
            aggregate=True,
        ),
    ),
    "COLLECT_SET": (
        _sig(
            [ANY],
            _array_of_first,
            lambda F, c, _: F.collect_set(c[0]),
            "Every distinct value, as an array.",
            aggregate=True,
        ),
    ),
    "LATEST_BY_OFFSET": (
        _sig(
            [ANY],
            _first,
            lambda F, c, _: F.max_by(c[0], F.struct(F.col("ROWTIME"), F.col("ROWOFFSET"))),
            "The value of the latest record.",
            aggregate=True,
        ),
    ),
    "EARLIEST_BY_OFFSET": (
        _sig(
            [ANY],
            _first,
            lambda F, c, _: F.min_by(c[0], F.struct(F.col("ROWTIME"), F.col("ROWOFFSET"))),
            "The value of the earliest record.",
            aggregate=True,
        ),
    ),
}


def _types(args: ArgTypes) -> str:
    return ", ".join("NULL" if a is None else format_type(a) for a in args)


def resolve(name: str, args: ArgTypes) -> Signature:
    """The signature of `name` that takes `args`, or `SqlSemanticError` as ksqlDB words it."""
    signatures = FUNCTIONS.get(name)
    if signatures is None:
        raise SqlSemanticError(f"Can't find any functions with the name '{name}'")
    for signature in signatures:
        if signature.accepts(args):
            return signature
    raise SqlSemanticError(f"Function '{name}' does not accept parameters ({_types(args)}).")


def is_aggregate(name: str) -> bool:
    return any(s.aggregate for s in FUNCTIONS.get(name, ()))
