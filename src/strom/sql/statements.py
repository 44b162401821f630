"""ksqlDB's statements as frozen values (ksqlDB's `io.confluent.ksql.parser.tree`).

Each statement keeps the text it was parsed from in `text` (ksqlDB's `statementText`); the
text takes no part in equality, so a statement and its formatted form compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from strom.sql.expressions import Expression, Literal, TimeUnit
from strom.sql.types import SqlType


class SourceKind(Enum):
    STREAM = "STREAM"
    TABLE = "TABLE"


class ColumnConstraint(Enum):
    """What a column is besides a value column: `KEY` (streams), `PRIMARY KEY` (tables), headers."""

    KEY = "KEY"
    PRIMARY_KEY = "PRIMARY KEY"
    HEADERS = "HEADERS"
    HEADER = "HEADER"


@dataclass(frozen=True)
class TableElement:
    """A declared column; `header_key` is the key of `HEADER('key')`."""

    name: str
    type: SqlType
    constraint: ColumnConstraint | None = None
    header_key: str | None = None


@dataclass(frozen=True)
class Property:
    """A `WITH (NAME=value)` entry; names are upper-cased, as ksqlDB does."""

    name: str
    value: Literal


@dataclass(frozen=True)
class TimeSpan:
    value: int
    unit: TimeUnit


class WindowKind(Enum):
    TUMBLING = "TUMBLING"
    HOPPING = "HOPPING"
    SESSION = "SESSION"


@dataclass(frozen=True)
class WindowExpression:
    """`WINDOW TUMBLING (SIZE ..)`, `HOPPING (SIZE .., ADVANCE BY ..)` or `SESSION (..)`."""

    kind: WindowKind
    size: TimeSpan
    advance: TimeSpan | None = None
    retention: TimeSpan | None = None
    grace: TimeSpan | None = None


@dataclass(frozen=True)
class SingleColumn:
    """A projection: an expression and its alias (`AS NAME`), if given."""

    expression: Expression
    alias: str | None = None


@dataclass(frozen=True)
class AllColumns:
    """`*`, or `source.*` when `source` is set."""

    source: str | None = None


@dataclass(frozen=True)
class StructAll:
    """`base->*`: every field of a struct, each as a column."""

    base: Expression


SelectItem = SingleColumn | AllColumns | StructAll


@dataclass(frozen=True)
class AliasedRelation:
    name: str
    alias: str | None = None


class JoinType(Enum):
    INNER = "INNER"
    LEFT = "LEFT OUTER"
    RIGHT = "RIGHT OUTER"
    FULL = "FULL OUTER"


@dataclass(frozen=True)
class WithinExpression:
    """A stream-stream join's window: `WITHIN 1 HOUR` or `WITHIN (before, after)`, grace."""

    before: TimeSpan
    after: TimeSpan
    grace: TimeSpan | None = None


@dataclass(frozen=True)
class JoinedSource:
    type: JoinType
    relation: AliasedRelation
    criteria: Expression
    within: WithinExpression | None = None


@dataclass(frozen=True)
class Join:
    left: AliasedRelation
    joins: tuple[JoinedSource, ...]


Relation = AliasedRelation | Join


class Emit(Enum):
    CHANGES = "CHANGES"
    FINAL = "FINAL"


@dataclass(frozen=True)
class Query:
    select: tuple[SelectItem, ...]
    from_: Relation
    window: WindowExpression | None = None
    where: Expression | None = None
    group_by: tuple[Expression, ...] = ()
    partition_by: tuple[Expression, ...] = ()
    having: Expression | None = None
    emit: Emit | None = None
    limit: int | None = None


@dataclass(frozen=True)
class QueryStatement:
    """A push (`EMIT CHANGES`) or pull query."""

    query: Query
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class CreateSource:
    """`CREATE [OR REPLACE] [SOURCE] STREAM|TABLE [IF NOT EXISTS] name (columns) WITH (...)`."""

    kind: SourceKind
    name: str
    elements: tuple[TableElement, ...] = ()
    properties: tuple[Property, ...] = ()
    or_replace: bool = False
    if_not_exists: bool = False
    source: bool = False
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class CreateAsSelect:
    """`CREATE [OR REPLACE] STREAM|TABLE [IF NOT EXISTS] name [WITH (...)] AS SELECT ...`."""

    kind: SourceKind
    name: str
    query: Query
    properties: tuple[Property, ...] = ()
    or_replace: bool = False
    if_not_exists: bool = False
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class InsertInto:
    """`INSERT INTO target [WITH (...)] SELECT ...`."""

    target: str
    query: Query
    properties: tuple[Property, ...] = ()
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class InsertValues:
    """`INSERT INTO target [(columns)] VALUES (...)`."""

    target: str
    values: tuple[Expression, ...]
    columns: tuple[str, ...] = ()
    text: str = field(default="", compare=False)


class ListSubject(Enum):
    STREAMS = "STREAMS"
    TABLES = "TABLES"
    QUERIES = "QUERIES"
    TOPICS = "TOPICS"
    PROPERTIES = "PROPERTIES"
    FUNCTIONS = "FUNCTIONS"


@dataclass(frozen=True)
class ListStatement:
    """`SHOW|LIST STREAMS|TABLES|QUERIES|TOPICS|PROPERTIES|FUNCTIONS [EXTENDED]`;
    `all` is `SHOW ALL TOPICS` (internal topics too)."""

    subject: ListSubject
    extended: bool = False
    all: bool = False
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class Describe:
    source: str
    extended: bool = False
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class DescribeFunction:
    name: str
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class Explain:
    """`EXPLAIN statement` or `EXPLAIN query_id`: exactly one of the two is set."""

    statement: Statement | None = None
    query_id: str | None = None
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class Terminate:
    """`TERMINATE query_id`, or `TERMINATE ALL` when `query_id` is None."""

    query_id: str | None = None
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class DropSource:
    kind: SourceKind
    name: str
    if_exists: bool = False
    delete_topic: bool = False
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class PrintTopic:
    """`PRINT topic [FROM BEGINNING] [INTERVAL n] [LIMIT n]`; the topic name is kept as written
    when quoted as a string, upper-cased as an identifier when not (as ksqlDB)."""

    topic: str
    from_beginning: bool = False
    interval: int | None = None
    limit: int | None = None
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class SetProperty:
    name: str
    value: str
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class UnsetProperty:
    name: str
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class RunScript:
    path: str
    text: str = field(default="", compare=False)


Statement = (
    QueryStatement
    | CreateSource
    | CreateAsSelect
    | InsertInto
    | InsertValues
    | ListStatement
    | Describe
    | DescribeFunction
    | Explain
    | Terminate
    | DropSource
    | PrintTopic
    | SetProperty
    | UnsetProperty
    | RunScript
)
