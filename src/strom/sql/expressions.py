"""ksqlDB's expression tree as frozen values (ksqlDB's `execution.expression.tree`).

Names are canonical: an unquoted identifier is upper-cased, a quoted one kept as written.
Parentheses leave no node: the tree says what groups with what.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from enum import Enum

from strom.sql.types import SqlType


class TimeUnit(Enum):
    """The units of window sizes, join windows and interval arguments (ksqlDB's `windowUnit`)."""

    MILLISECONDS = "MILLISECONDS"
    SECONDS = "SECONDS"
    MINUTES = "MINUTES"
    HOURS = "HOURS"
    DAYS = "DAYS"

    @classmethod
    def of(cls, word: str) -> TimeUnit:
        """The unit a (singular or plural, any case) unit word names."""
        upper = word.upper()
        return cls(upper if upper.endswith("S") else upper + "S")


@dataclass(frozen=True)
class NullLiteral:
    pass


@dataclass(frozen=True)
class BooleanLiteral:
    value: bool


@dataclass(frozen=True)
class IntegerLiteral:
    """A whole number: INT when it fits 32 bits, BIGINT otherwise, as ksqlDB types it."""

    value: int


@dataclass(frozen=True)
class DecimalLiteral:
    """A number with a point and no exponent (`1.50`): DECIMAL of its digits, as ksqlDB."""

    value: decimal.Decimal


@dataclass(frozen=True)
class DoubleLiteral:
    """A number with an exponent (`1.5E3`): DOUBLE."""

    value: float


@dataclass(frozen=True)
class StringLiteral:
    value: str


@dataclass(frozen=True)
class ColumnRef:
    """A column, qualified by a source name or alias (`o.ID`) or not (`ID`)."""

    name: str
    source: str | None = None


@dataclass(frozen=True)
class Dereference:
    """A struct's field: `base->FIELD`."""

    base: Expression
    field: str


@dataclass(frozen=True)
class Subscript:
    """An array element or a map value: `base[index]`."""

    base: Expression
    index: Expression


@dataclass(frozen=True)
class IntervalUnit:
    """A time unit given as a function argument (`TIMESTAMPADD(SECONDS, 5, ts)`)."""

    unit: TimeUnit


@dataclass(frozen=True)
class FunctionCall:
    """A scalar, aggregate or table function; `star` is `COUNT(*)`."""

    name: str
    args: tuple[Expression, ...] = ()
    star: bool = False


@dataclass(frozen=True)
class Unary:
    """`-x` or `+x`."""

    op: str
    operand: Expression


@dataclass(frozen=True)
class Binary:
    """Arithmetic (`* / % + -`) and string concatenation (`||`)."""

    op: str
    left: Expression
    right: Expression


@dataclass(frozen=True)
class Comparison:
    """`= <> != < <= > >=`; `!=` is kept as `<>`."""

    op: str
    left: Expression
    right: Expression


@dataclass(frozen=True)
class Logical:
    """`AND` / `OR`."""

    op: str
    left: Expression
    right: Expression


@dataclass(frozen=True)
class Not:
    operand: Expression


@dataclass(frozen=True)
class Between:
    value: Expression
    lower: Expression
    upper: Expression
    negated: bool = False


@dataclass(frozen=True)
class InList:
    value: Expression
    items: tuple[Expression, ...]
    negated: bool = False


@dataclass(frozen=True)
class Like:
    value: Expression
    pattern: Expression
    escape: str | None = None
    negated: bool = False


@dataclass(frozen=True)
class IsNull:
    value: Expression
    negated: bool = False


@dataclass(frozen=True)
class IsDistinctFrom:
    left: Expression
    right: Expression
    negated: bool = False


@dataclass(frozen=True)
class WhenClause:
    condition: Expression
    result: Expression


@dataclass(frozen=True)
class Case:
    """`CASE [operand] WHEN ... THEN ... [ELSE ...] END`: searched when `operand` is None."""

    whens: tuple[WhenClause, ...]
    operand: Expression | None = None
    default: Expression | None = None


@dataclass(frozen=True)
class Cast:
    value: Expression
    type: SqlType


@dataclass(frozen=True)
class ArrayConstructor:
    items: tuple[Expression, ...]


@dataclass(frozen=True)
class MapConstructor:
    entries: tuple[tuple[Expression, Expression], ...]


@dataclass(frozen=True)
class StructConstructor:
    fields: tuple[tuple[str, Expression], ...]


@dataclass(frozen=True)
class Lambda:
    """A function argument that is a function: `(X, Y) => body` (TRANSFORM, FILTER, REDUCE);
    in `body` the parameters are `ColumnRef`s without a source."""

    params: tuple[str, ...]
    body: Expression


Literal = (
    NullLiteral | BooleanLiteral | IntegerLiteral | DecimalLiteral | DoubleLiteral | StringLiteral
)

Expression = (
    Literal
    | ColumnRef
    | Dereference
    | Subscript
    | IntervalUnit
    | FunctionCall
    | Unary
    | Binary
    | Comparison
    | Logical
    | Not
    | Between
    | InList
    | Like
    | IsNull
    | IsDistinctFrom
    | Case
    | Cast
    | ArrayConstructor
    | MapConstructor
    | StructConstructor
    | Lambda
)
