"""The planner's first step: a SELECT checked against the sources it reads (ksqlDB's
`analyzer` and `ExpressionTypeManager`). Every source must exist, every column resolve to one
source, every operator get operands it can take; the result is the query's output columns.

Function calls are typed by the function registry (`functions.resolve`); NULL's type is
unknown (None), and fits wherever a value does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from strom.sql import expressions as ex
from strom.sql import functions
from strom.sql import statements as st
from strom.sql import types as ty
from strom.sql.errors import SqlSemanticError
from strom.sql.formatter import format_expression, format_type

__all__ = [
    "Column",
    "OutputColumn",
    "ResolvedQuery",
    "SourceSchema",
    "analyze",
    "expression_type",
]


@dataclass(frozen=True)
class Column:
    name: str
    type: ty.SqlType
    key: bool = False


@dataclass(frozen=True)
class SourceSchema:
    """A declared stream or table (what ksqlDB's metastore keeps of it)."""

    name: str
    kind: st.SourceKind
    columns: tuple[Column, ...]
    windowed: bool = False

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)


@dataclass(frozen=True)
class OutputColumn:
    """A column of a query's result; `type` is None where it is a NULL (or a function of
    NULLs alone, such as `COALESCE(NULL, NULL)`)."""

    name: str
    type: ty.SqlType | None
    key: bool = False


@dataclass(frozen=True)
class ResolvedQuery:
    """A checked query: its output columns, in order."""

    columns: tuple[OutputColumn, ...]


# Columns every record has (ksqlDB's pseudo-columns), and those of windowed records.
PSEUDO_COLUMNS = (
    Column("ROWTIME", ty.BIGINT),
    Column("ROWPARTITION", ty.INT),
    Column("ROWOFFSET", ty.BIGINT),
)
WINDOW_BOUNDS = (
    Column("WINDOWSTART", ty.BIGINT, key=True),
    Column("WINDOWEND", ty.BIGINT, key=True),
)

_COMPARISON_NAMES = {
    "=": "EQUAL",
    "<>": "NOT_EQUAL",
    "<": "LESS_THAN",
    "<=": "LESS_THAN_OR_EQUAL",
    ">": "GREATER_THAN",
    ">=": "GREATER_THAN_OR_EQUAL",
}
_NUMERIC_ORDER = (ty.Primitive.INT, ty.Primitive.BIGINT)
_MAX_PRECISION = 38


def analyze(query: st.Query, sources: Mapping[str, SourceSchema]) -> ResolvedQuery:
    """Check `query` against `sources` (by name); raise `SqlSemanticError` naming the problem."""
    relations = _relations(query.from_)
    scope: dict[str, SourceSchema] = {}
    for relation in relations:
        source = sources.get(relation.name)
        if source is None:
            raise SqlSemanticError(f"{relation.name} does not exist.")
        scope[relation.alias or relation.name] = source
    windowed = query.window is not None or any(s.windowed for s in scope.values())
    typer = _Typer(scope, windowed)
    if isinstance(query.from_, st.Join):
        for joined in query.from_.joins:
            typer.boolean(joined.criteria, "JOIN ON")
    if query.where is not None:
        typer.boolean(query.where, "WHERE")
    for e in query.group_by:
        typer.check(e, "GROUP BY")
    for e in query.partition_by:
        typer.check(e, "PARTITION BY")
    if query.having is not None:
        typer.boolean(query.having, "HAVING")
    return ResolvedQuery(tuple(_output(query, scope, typer)))


def expression_type(
    e: ex.Expression, scope: Mapping[str, SourceSchema], *, windowed: bool = False
) -> ty.SqlType | None:
    """The type of `e` over the sources of `scope` (by alias), checked as in a SELECT."""
    return _Typer(dict(scope), windowed).check(e, "SELECT")


def _relations(relation: st.Relation) -> list[st.AliasedRelation]:
    if isinstance(relation, st.AliasedRelation):
        return [relation]
    return [relation.left, *(j.relation for j in relation.joins)]


def _output(query: st.Query, scope: dict[str, SourceSchema], typer: _Typer) -> list[OutputColumn]:
    joined = len(scope) > 1
    columns: list[OutputColumn] = []
    generated = 0
    for item in query.select:
        if isinstance(item, st.AllColumns):
            if item.source is not None and item.source not in scope:
                raise SqlSemanticError(f"SELECT column '{item.source}.*' cannot be resolved.")
            for alias, source in scope.items():
                if item.source in (None, alias):
                    columns += [
                        OutputColumn(f"{alias}_{c.name}" if joined else c.name, c.type, c.key)
                        for c in source.columns
                    ]
            continue
        if isinstance(item, st.StructAll):
            t = typer.check(item.base, "SELECT")
            if not isinstance(t, ty.StructType):
                raise SqlSemanticError(
                    f"Expected STRUCT type for {format_expression(item.base)}->* "
                    f"but got {_name(t)}."
                )
            columns += [OutputColumn(f.name, f.type) for f in t.fields]
            continue
        t = typer.check(item.expression, "SELECT")
        name = item.alias
        if name is None:
            match item.expression:
                case ex.ColumnRef(column_name):
                    name = column_name
                case ex.Dereference(_, field):
                    name = field
                case _:
                    name = f"KSQL_COL_{generated}"
                    generated += 1
        columns.append(OutputColumn(name, t))
    return columns


def _name(t: ty.SqlType | None) -> str:
    return "NULL" if t is None else format_type(t)


def _numeric(t: ty.SqlType | None) -> bool:
    return isinstance(t, ty.DecimalType) or t in (ty.INT, ty.BIGINT, ty.DOUBLE)


def _as_decimal(t: ty.SqlType) -> ty.DecimalType:
    if isinstance(t, ty.DecimalType):
        return t
    return ty.DecimalType(10 if t == ty.INT else 19, 0)


def _decimal_result(op: str, a: ty.DecimalType, b: ty.DecimalType) -> ty.DecimalType:
    """The DECIMAL an operation on two DECIMALs gives (ksqlDB's rules, after SQL Server's)."""
    p1, s1, p2, s2 = a.precision, a.scale, b.precision, b.scale
    if op in ("+", "-"):
        scale = max(s1, s2)
        precision = max(p1 - s1, p2 - s2) + scale + 1
    elif op == "*":
        precision, scale = p1 + p2 + 1, s1 + s2
    elif op == "/":
        scale = max(6, s1 + p2 + 1)
        precision = p1 - s1 + s2 + scale
    else:  # %
        scale = max(s1, s2)
        precision = min(p1 - s1, p2 - s2) + scale
    return ty.DecimalType(min(precision, _MAX_PRECISION), min(scale, _MAX_PRECISION))


def _widen(a: ty.SqlType, b: ty.SqlType, op: str = "+") -> ty.SqlType:
    """The numeric type two numeric operands meet in: DOUBLE, then DECIMAL, BIGINT, INTEGER."""
    if ty.DOUBLE in (a, b):
        return ty.DOUBLE
    if isinstance(a, ty.DecimalType) or isinstance(b, ty.DecimalType):
        return _decimal_result(op, _as_decimal(a), _as_decimal(b))
    return ty.BIGINT if ty.BIGINT in (a, b) else ty.INT


def _comparable(a: ty.SqlType | None, b: ty.SqlType | None, op: str) -> bool:
    if a is None or b is None or (a == b and not isinstance(a, ty.StructType | ty.MapType)):
        return True
    if _numeric(a) and _numeric(b):
        return True
    temporal = (ty.DATE, ty.TIME, ty.TIMESTAMP)
    if (a in temporal and b == ty.STRING) or (b in temporal and a == ty.STRING):
        return True
    return a == b and op in ("=", "<>")


class _Typer:
    """The type of each expression of one query, checked as it goes."""

    def __init__(self, scope: dict[str, SourceSchema], windowed: bool) -> None:
        self._scope = scope
        self._windowed = windowed
        self._clause = "SELECT"

    def check(self, e: ex.Expression, clause: str) -> ty.SqlType | None:
        self._clause = clause
        return self._type(e)

    def boolean(self, e: ex.Expression, clause: str) -> None:
        t = self.check(e, clause)
        if t not in (ty.BOOLEAN, None):
            raise SqlSemanticError(
                f"Type error in {clause} expression: Should evaluate to boolean but is "
                f"{format_expression(e)} ({_name(t)}) instead."
            )

    def _column(self, ref: ex.ColumnRef) -> ty.SqlType:
        system = {c.name: c for c in PSEUDO_COLUMNS + (WINDOW_BOUNDS if self._windowed else ())}
        if ref.source is not None:
            source = self._scope.get(ref.source)
            found = None if source is None else source.column(ref.name) or system.get(ref.name)
            if found is None:
                raise SqlSemanticError(
                    f"{self._clause} column '{ref.source}.{ref.name}' cannot be resolved."
                )
            return found.type
        matches = [
            (alias, c) for alias, s in self._scope.items() if (c := s.column(ref.name)) is not None
        ]
        if len(matches) > 1:
            options = ", ".join(f"{alias}.{ref.name}" for alias, _ in matches)
            raise SqlSemanticError(f"Column '{ref.name}' is ambiguous. Could be any of: {options}")
        if matches:
            return matches[0][1].type
        if ref.name in system:
            return system[ref.name].type
        raise SqlSemanticError(f"{self._clause} column '{ref.name}' cannot be resolved.")

    def _bool_operand(self, e: ex.Expression, whole: ex.Expression) -> None:
        t = self._type(e)
        if t not in (ty.BOOLEAN, None):
            raise SqlSemanticError(
                f"{format_expression(whole)}: {format_expression(e)} should be BOOLEAN "
                f"but is {_name(t)}."
            )

    def _compare(self, op: str, left: ex.Expression, right: ex.Expression) -> None:
        a, b = self._type(left), self._type(right)
        if not _comparable(a, b, op):
            raise SqlSemanticError(
                f"Cannot compare {format_expression(left)} ({_name(a)}) to "
                f"{format_expression(right)} ({_name(b)}) with {_COMPARISON_NAMES.get(op, op)}."
            )

    def _arithmetic(self, e: ex.Binary) -> ty.SqlType | None:
        a, b = self._type(e.left), self._type(e.right)
        if a is None or b is None:
            return a or b
        if e.op == "||" or (e.op == "+" and a == b == ty.STRING):
            if a == b and a in (ty.STRING, ty.BYTES):
                return a
        elif _numeric(a) and _numeric(b):
            return _widen(a, b, e.op)
        raise SqlSemanticError(
            f"Error processing expression: {format_expression(e)}. "
            f"Unsupported arithmetic types. {_name(a)} {_name(b)}"
        )

    def _same(self, types: list[ty.SqlType | None], what: str) -> ty.SqlType | None:
        """The one type values that must agree share (numbers widen), or an error."""
        known = [t for t in types if t is not None]
        if not known:
            return None
        result = known[0]
        for t in known[1:]:
            if t == result:
                continue
            if not (_numeric(t) and _numeric(result)):
                raise SqlSemanticError(
                    f"Invalid {what}: all values must have the same type; got {_name(result)} "
                    f"and {_name(t)}."
                )
            result = _widen(result, t)
        return result

    def _type(self, e: ex.Expression) -> ty.SqlType | None:
        match e:
            case ex.NullLiteral() | ex.IntervalUnit():
                return None
            case ex.BooleanLiteral():
                return ty.BOOLEAN
            case ex.IntegerLiteral(value):
                return ty.INT if -(2**31) <= value < 2**31 else ty.BIGINT
            case ex.DecimalLiteral(value):
                digits = value.as_tuple()
                exponent = digits.exponent if isinstance(digits.exponent, int) else 0
                scale = max(-exponent, 0)
                return ty.DecimalType(max(len(digits.digits), scale, 1), scale)
            case ex.DoubleLiteral():
                return ty.DOUBLE
            case ex.StringLiteral():
                return ty.STRING
            case ex.ColumnRef():
                return self._column(e)
            case ex.Dereference(base, field):
                t = self._type(base)
                if not isinstance(t, ty.StructType):
                    raise SqlSemanticError(
                        f"Expected STRUCT type for {format_expression(base)} but got {_name(t)}."
                    )
                found = next((f for f in t.fields if f.name == field), None)
                if found is None:
                    raise SqlSemanticError(
                        f"Could not find field '{field}' in '{format_expression(base)}'."
                    )
                return found.type
            case ex.Subscript(base, index):
                t, i = self._type(base), self._type(index)
                if isinstance(t, ty.ArrayType) and i in (ty.INT, ty.BIGINT, None):
                    return t.element
                if isinstance(t, ty.MapType) and _comparable(t.key, i, "="):
                    return t.value
                raise SqlSemanticError(
                    f"Cannot subscript {format_expression(base)} ({_name(t)}) "
                    f"with {format_expression(index)} ({_name(i)})."
                )
            case ex.FunctionCall(name, args):
                if any(isinstance(arg, ex.Lambda) for arg in args):
                    raise SqlSemanticError(f"{name}: functions taking lambdas are not supported.")
                types = [self._type(arg) for arg in args]
                return functions.resolve(name, types).result(types)
            case ex.Lambda():
                raise SqlSemanticError(f"Unexpected lambda {format_expression(e)}.")
            case ex.Unary(_, operand):
                t = self._type(operand)
                if t is not None and not _numeric(t):
                    raise SqlSemanticError(
                        f"Error processing expression: {format_expression(e)}. "
                        f"Unsupported arithmetic type. {_name(t)}"
                    )
                return t
            case ex.Binary():
                return self._arithmetic(e)
            case ex.Comparison(op, left, right):
                self._compare(op, left, right)
                return ty.BOOLEAN
            case ex.Logical(_, left, right):
                self._bool_operand(left, e)
                self._bool_operand(right, e)
                return ty.BOOLEAN
            case ex.Not(operand):
                self._bool_operand(operand, e)
                return ty.BOOLEAN
            case ex.Between(value, lower, upper):
                self._compare(">=", value, lower)
                self._compare("<=", value, upper)
                return ty.BOOLEAN
            case ex.InList(value, items):
                for item in items:
                    self._compare("=", value, item)
                return ty.BOOLEAN
            case ex.Like(value, pattern):
                for part in (value, pattern):
                    if self._type(part) not in (ty.STRING, None):
                        raise SqlSemanticError(
                            f"{format_expression(e)}: LIKE takes STRING operands, "
                            f"{format_expression(part)} is {_name(self._type(part))}."
                        )
                return ty.BOOLEAN
            case ex.IsNull(value):
                self._type(value)
                return ty.BOOLEAN
            case ex.IsDistinctFrom(left, right):
                self._compare("=", left, right)
                return ty.BOOLEAN
            case ex.Case(whens, operand, default):
                for when in whens:
                    if operand is None:
                        self._bool_operand(when.condition, e)
                    else:
                        self._compare("=", operand, when.condition)
                results = [self._type(w.result) for w in whens]
                if default is not None:
                    results.append(self._type(default))
                return self._same(results, "CASE expression")
            case ex.Cast(value, target):
                self._type(value)
                return target
            case ex.ArrayConstructor(items):
                element = self._same([self._type(i) for i in items], "ARRAY constructor")
                return ty.ArrayType(element or ty.STRING)
            case ex.MapConstructor(entries):
                key = self._same([self._type(k) for k, _ in entries], "MAP constructor")
                mapped = self._same([self._type(v) for _, v in entries], "MAP constructor")
                return ty.MapType(key or ty.STRING, mapped or ty.STRING)
            case ex.StructConstructor(fields):
                return ty.StructType(
                    tuple(ty.StructField(n, self._type(v) or ty.STRING) for n, v in fields)
                )
