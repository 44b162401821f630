"""ksqlDB expressions as Spark Columns (ksqlDB's `SqlToJavaVisitor`, here to Catalyst), with
ksqlDB's semantics where Spark's differ: arrays are indexed from 1 (negative from the end), an
index out of range, a division by zero or a failed CAST give NULL, and INTEGER / INTEGER is an
INTEGER."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

from strom.sql import expressions as ex
from strom.sql import functions
from strom.sql import types as ty
from strom.sql.analyzer import SourceSchema, expression_type
from strom.sql.errors import SqlSemanticError
from strom.sql.formatter import format_expression

__all__ = ["Compiler", "spark_type"]


def spark_type(t: ty.SqlType) -> str:
    """`t` as Spark's DDL type."""
    match t:
        case ty.DecimalType(precision, scale):
            return f"decimal({precision},{scale})"
        case ty.ArrayType(element):
            return f"array<{spark_type(element)}>"
        case ty.MapType(key, value):
            return f"map<{spark_type(key)},{spark_type(value)}>"
        case ty.StructType(fields):
            return "struct<" + ",".join(f"`{f.name}`:{spark_type(f.type)}" for f in fields) + ">"
        case ty.PrimitiveType(p):
            if p is ty.Primitive.TIME:
                raise SqlSemanticError("The TIME type is not supported on Spark yet.")
            return {
                ty.Primitive.BOOLEAN: "boolean",
                ty.Primitive.INT: "int",
                ty.Primitive.BIGINT: "bigint",
                ty.Primitive.DOUBLE: "double",
                ty.Primitive.STRING: "string",
                ty.Primitive.BYTES: "binary",
                ty.Primitive.DATE: "date",
                ty.Primitive.TIMESTAMP: "timestamp",
            }[p]
    raise AssertionError(t)


def column(name: str) -> Column:
    """A column by its exact name (backquoted, so dots and case are kept)."""
    return F.col("`" + name.replace("`", "``") + "`")


def _literal(e: ex.Expression) -> object:
    match e:
        case ex.StringLiteral(v) | ex.IntegerLiteral(v) | ex.BooleanLiteral(v):
            return v
        case ex.DoubleLiteral(v):
            return v
        case ex.DecimalLiteral(v):
            return v
    return None


class Compiler:
    """Compiles the expressions of one query over its sources (by alias)."""

    def __init__(
        self,
        scope: Mapping[str, SourceSchema],
        *,
        windowed: bool = False,
        names: Callable[[ex.ColumnRef], str] | None = None,
    ) -> None:
        self._scope = scope
        self._windowed = windowed
        self.name_of: Callable[[ex.ColumnRef], str] = names or (lambda ref: ref.name)
        """The frame's name for a column reference (a join's frame prefixes them)."""

    def type_of(self, e: ex.Expression) -> ty.SqlType | None:
        return expression_type(e, self._scope, windowed=self._windowed)

    def compile(self, e: ex.Expression) -> Column:
        c = self.compile
        match e:
            case ex.NullLiteral():
                return F.lit(None)
            case (
                ex.BooleanLiteral()
                | ex.IntegerLiteral()
                | ex.DoubleLiteral()
                | ex.DecimalLiteral()
                | ex.StringLiteral()
            ):
                value = _literal(e)
                if isinstance(e, ex.IntegerLiteral) and self.type_of(e) == ty.BIGINT:
                    return F.lit(value).cast("bigint")
                return F.lit(value)
            case ex.ColumnRef():
                return column(self.name_of(e))
            case ex.Dereference(base, field):
                return c(base).getField(field)
            case ex.Subscript(base, index):
                return F.try_element_at(c(base), c(index))
            case ex.Unary(op, operand):
                return -c(operand) if op == "-" else c(operand)
            case ex.Binary(op, left, right):
                return self._binary(e, op, c(left), c(right))
            case ex.Comparison(op, left, right):
                a, b = c(left), c(right)
                return {
                    "=": lambda: a == b,
                    "<>": lambda: a != b,
                    "<": lambda: a < b,
                    "<=": lambda: a <= b,
                    ">": lambda: a > b,
                    ">=": lambda: a >= b,
                }[op]()
            case ex.Logical(op, left, right):
                return c(left) & c(right) if op == "AND" else c(left) | c(right)
            case ex.Not(operand):
                return ~c(operand)
            case ex.Between(value, lower, upper, negated):
                between = c(value).between(c(lower), c(upper))
                return ~between if negated else between
            case ex.InList(value, items, negated):
                within = c(value).isin(*[c(i) for i in items])
                return ~within if negated else within
            case ex.Like(value, pattern, escape, negated):
                like = F.like(c(value), c(pattern), F.lit(escape) if escape else None)
                return ~like if negated else like
            case ex.IsNull(value, negated):
                return c(value).isNotNull() if negated else c(value).isNull()
            case ex.IsDistinctFrom(left, right, negated):
                same = c(left).eqNullSafe(c(right))
                return same if negated else ~same
            case ex.Case(whens, operand, default):
                out: Column | None = None
                for w in whens:
                    test = c(w.condition) if operand is None else c(operand) == c(w.condition)
                    out = F.when(test, c(w.result)) if out is None else out.when(test, c(w.result))
                assert out is not None
                return out.otherwise(c(default)) if default is not None else out
            case ex.Cast(value, target):
                return c(value).try_cast(spark_type(target))
            case ex.ArrayConstructor(items):
                return F.array(*[c(i) for i in items])
            case ex.MapConstructor(entries):
                return F.create_map(*[x for k, v in entries for x in (c(k), c(v))])
            case ex.StructConstructor(fields):
                return F.struct(*[c(v).alias(n) for n, v in fields])
            case ex.FunctionCall(name, args):
                types = [self.type_of(a) for a in args]
                signature = functions.resolve(name, types)
                built: Column = signature.build(
                    F, [c(a) for a in args], [_literal(a) for a in args]
                )
                return built
        raise SqlSemanticError(f"Cannot run the expression {format_expression(e)} on Spark yet.")

    def _binary(self, e: ex.Binary, op: str, a: Column, b: Column) -> Column:
        if op == "||" or (op == "+" and self.type_of(e) in (ty.STRING, ty.BYTES)):
            return F.concat(a, b)
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        result = self.type_of(e)
        quotient = F.try_divide(a, b) if op == "/" else F.try_mod(a, b)
        if result in (ty.INT, ty.BIGINT) or isinstance(result, ty.DecimalType):
            assert result is not None
            return quotient.cast(spark_type(result))
        return quotient
