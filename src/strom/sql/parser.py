"""Text to statements: ksqlDB's language parsed by lark (LALR) from `ksql.lark` and built into
the frozen trees of `statements`, `expressions` and `types`."""

from __future__ import annotations

import copy
import dataclasses
import decimal
import functools
import importlib.resources
import math
import re
from typing import Any

import lark
from lark import Token, Transformer, Tree

from strom.sql import expressions as ex
from strom.sql import statements as st
from strom.sql import types as ty
from strom.sql.errors import SqlSyntaxError

__all__ = ["parse", "parse_expression", "parse_statement"]


@functools.cache
def _lark() -> lark.Lark:
    grammar = importlib.resources.files("strom.sql").joinpath("ksql.lark").read_text()
    return lark.Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        start=["start", "expr"],
    )


@functools.cache
def keywords() -> frozenset[str]:
    """Every word the grammar reads as a keyword somewhere (upper-case)."""
    words: set[str] = set()
    for terminal in _lark().terminals:
        pattern = terminal.pattern
        if isinstance(pattern, lark.lexer.PatternStr) and pattern.value.isalpha():
            words.add(pattern.value.upper())
        elif isinstance(pattern, lark.lexer.PatternRE):
            words.update(w.upper() for w in re.findall(r"\(\?i:([A-Za-z]+)\)", pattern.value))
    return frozenset(words)


def parse(text: str) -> list[st.Statement]:
    """Every statement of `text` (separated by `;`, the last one's `;` optional), each with
    its own text, `;` included, as `text`."""
    tree = _parse_tree(text, "start")
    out: list[st.Statement] = []
    for entry in tree.children:
        assert isinstance(entry, Tree)
        source = text[entry.meta.start_pos : entry.meta.end_pos]
        body = entry.children[0]
        assert isinstance(body, Tree)
        statement = _build(body)
        out.append(dataclasses.replace(statement, text=source))
    return out


def parse_statement(text: str) -> st.Statement:
    """The one statement of `text`."""
    statements = parse(text)
    if len(statements) != 1:
        raise SqlSyntaxError(
            line=1,
            column=1,
            found=f"{len(statements)} statements",
            detail=f"Expected exactly one statement, got {len(statements)}",
        )
    return statements[0]


def parse_expression(text: str) -> ex.Expression:
    """One expression (ksqlDB's `singleExpression`)."""
    result: ex.Expression = _build(_parse_tree(text, "expr"))
    return result


def _parse_tree(text: str, start: str) -> Tree[Token]:
    parser = _lark()
    try:
        return parser.parse(text, start=start)
    except lark.UnexpectedToken as e:
        at_end = e.token.type == "$END"
        line, column = _end(text) if at_end else (e.line, e.column)
        raise SqlSyntaxError(
            line=line,
            column=column,
            found="<EOF>" if at_end else f"'{e.token}'",
            expected=_describe(parser, e.accepts or e.expected),
        ) from None
    except lark.UnexpectedCharacters as e:
        raise SqlSyntaxError(
            line=e.line,
            column=e.column,
            found=repr(e.char) if e.char == "'" else f"'{e.char}'",
            expected=_describe(parser, _acceptable(e)),
        ) from None
    except lark.UnexpectedEOF as e:
        line, column = _end(text)
        raise SqlSyntaxError(
            line=line, column=column, found="<EOF>", expected=_describe(parser, set(e.expected))
        ) from None


def _end(text: str) -> tuple[int, int]:
    """The line and column just past the end of `text` (where ANTLR puts `<EOF>`)."""
    last = text.rsplit("\n", maxsplit=1)[-1]
    return text.count("\n") + 1, len(last) + 1


def _acceptable(e: lark.UnexpectedCharacters) -> set[str]:
    """What the parser could have taken where the lexer failed: each terminal of the parse
    table's row that the parser really accepts there (as lark's `InteractiveParser.accepts`)."""
    state: Any = e.state
    if not hasattr(state, "feed_token"):
        return set(e.allowed)
    accepted = set()
    for name in state.parse_conf.parse_table.states[state.position]:
        try:
            copy.copy(state).feed_token(Token(name, ""), name == "$END")
        except lark.UnexpectedInput:
            continue
        accepted.add(name)
    return accepted


def _describe(parser: lark.Lark, names: set[str] | frozenset[str]) -> tuple[str, ...]:
    """Terminal names as a user reads them: keywords and symbols quoted, the rest in words."""
    words = {
        "NAME": "an identifier",
        "QUOTED_NAME": "an identifier",
        "BACKQUOTED_NAME": "an identifier",
        "DIGIT_NAME": "an identifier",
        "SQ_STRING": "a string",
        "INT_NUMBER": "a number",
        "DECIMAL_NUMBER": "a number",
        "FLOAT_NUMBER": "a number",
        "UNIT": "a time unit",
        "NEQ": "'<>'",
        "$END": "<EOF>",
    }
    patterns = {t.name: t.pattern for t in parser.terminals}
    shown: set[str] = set()
    for name in names:
        pattern = patterns.get(name)
        if name in words:
            shown.add(words[name])
        elif isinstance(pattern, lark.lexer.PatternStr):
            shown.add(f"'{pattern.value.upper()}'")
        elif pattern is not None:
            # the keywords of one terminal: LIST_SUBJECT, SOURCE_KIND, EMIT_KIND
            keywords = re.findall(r"\(\?i:([^)]*)\)", pattern.value)
            shown.update({f"'{k.upper()}'" for k in keywords} or {name})
    return tuple(sorted(shown))


def _build(tree: Tree[Token]) -> Any:
    try:
        return _Builder().transform(tree)
    except lark.exceptions.VisitError as e:
        if isinstance(e.orig_exc, _BuildError):
            meta = e.obj.meta if isinstance(e.obj, Tree) else None
            line = meta.line if meta is not None and not meta.empty else 1
            column = meta.column if meta is not None and not meta.empty else 1
            raise SqlSyntaxError(
                line=line, column=column, found="", detail=str(e.orig_exc)
            ) from None
        raise


class _BuildError(Exception):
    """Text the grammar accepts but ksqlDB does not (an unknown type, a bad number)."""


def _identifier(token: Token) -> str:
    """ksqlDB's identifier rules: unquoted upper-cased, quoted kept, doubled quotes undone."""
    text = str(token)
    if token.type == "QUOTED_NAME":
        return text[1:-1].replace('""', '"')
    if token.type == "BACKQUOTED_NAME":
        return text[1:-1].replace("``", "`")
    return text.upper()


def _tokens(children: list[Any]) -> set[str]:
    return {c.type for c in children if isinstance(c, Token)}


def _of(children: list[Any], kind: type) -> Any:
    found = [c for c in children if isinstance(c, kind) and not isinstance(c, Token)]
    return found[0] if found else None


class _Wrapped:
    """A clause on its way into its statement: `kind` names the clause."""

    def __init__(self, kind: str, value: Any) -> None:
        self.kind = kind
        self.value = value


def _clauses(children: list[Any]) -> dict[str, Any]:
    return {c.kind: c.value for c in children if isinstance(c, _Wrapped)}


class _Builder(Transformer[Token, Any]):
    """Each grammar rule to its frozen value."""

    # ---- names, literals, types
    def name(self, c: list[Token]) -> str:
        return _identifier(c[0])

    def string(self, c: list[Token]) -> str:
        return str(c[0])[1:-1].replace("''", "'")

    def string_literal(self, c: list[Token]) -> ex.StringLiteral:
        return ex.StringLiteral(self.string(c))

    def null(self, _: list[Any]) -> ex.NullLiteral:
        return ex.NullLiteral()

    def boolean(self, c: list[Token]) -> ex.BooleanLiteral:
        return ex.BooleanLiteral(c[0].type == "TRUE")

    def integer(self, c: list[Token]) -> ex.IntegerLiteral:
        value = int(c[0])
        if value >= 2**63:
            raise _BuildError(f"Invalid numeric literal: {c[0]}")
        return ex.IntegerLiteral(value)

    def decimal(self, c: list[Token]) -> ex.DecimalLiteral:
        return ex.DecimalLiteral(decimal.Decimal(str(c[0])))

    def double(self, c: list[Token]) -> ex.DoubleLiteral:
        value = float(c[0])
        if math.isinf(value):
            raise _BuildError(f"Number overflows DOUBLE: {c[0]}")
        return ex.DoubleLiteral(value)

    def base_type(self, c: list[str]) -> ty.SqlType:
        primitive = ty.PRIMITIVE_NAMES.get(c[0].upper())
        if primitive is None:
            raise _BuildError(f"Unknown type: {c[0]}")
        return ty.PrimitiveType(primitive)

    def array_type(self, c: list[Any]) -> ty.ArrayType:
        return ty.ArrayType(c[1])

    def map_type(self, c: list[Any]) -> ty.MapType:
        return ty.MapType(c[1], c[2])

    def struct_field(self, c: list[Any]) -> ty.StructField:
        return ty.StructField(c[0], c[1])

    def struct_type(self, c: list[Any]) -> ty.StructType:
        return ty.StructType(tuple(x for x in c if isinstance(x, ty.StructField)))

    def decimal_type(self, c: list[Token]) -> ty.DecimalType:
        precision, scale = int(c[0]), int(c[1])
        if precision < 1 or not 0 <= scale <= precision:
            raise _BuildError(
                f"DECIMAL({precision}, {scale}): the precision must be at least 1 and the "
                "scale between 0 and the precision"
            )
        return ty.DecimalType(precision, scale)

    # ---- expressions
    def column(self, c: list[str]) -> ex.ColumnRef:
        return ex.ColumnRef(c[0])

    def qualified_column(self, c: list[str]) -> ex.ColumnRef:
        return ex.ColumnRef(c[1], source=c[0])

    def dereference(self, c: list[Any]) -> ex.Dereference:
        return ex.Dereference(c[0], c[1])

    def subscript(self, c: list[Any]) -> ex.Subscript:
        return ex.Subscript(c[0], c[1])

    def count_star(self, c: list[Any]) -> ex.FunctionCall:
        return ex.FunctionCall(c[0], star=True)

    def function_call(self, c: list[Any]) -> ex.FunctionCall:
        return ex.FunctionCall(c[0], tuple(c[1:]))

    def interval_unit(self, c: list[Token]) -> ex.IntervalUnit:
        return ex.IntervalUnit(ex.TimeUnit.of(str(c[0])))

    def lambda_function(self, c: list[Any]) -> ex.Lambda:
        *params, body = c
        names = []
        for param in params:
            if isinstance(param, str):
                names.append(param)
            elif isinstance(param, ex.ColumnRef) and param.source is None:
                names.append(param.name)
            else:
                raise _BuildError("A lambda's parameters must be names")
        return ex.Lambda(tuple(names), body)

    def unary(self, c: list[Any]) -> ex.Unary:
        return ex.Unary(str(c[0]), c[1])

    def binary(self, c: list[Any]) -> ex.Binary:
        return ex.Binary(str(c[1]), c[0], c[2])

    def comparison_operator(self, c: list[Token]) -> str:
        return "<>" if str(c[0]) == "!=" else str(c[0])

    def comparison(self, c: list[Any]) -> ex.Comparison:
        return ex.Comparison(c[1], c[0], c[2])

    def and_(self, c: list[Any]) -> ex.Logical:
        return ex.Logical("AND", c[0], c[1])

    def or_(self, c: list[Any]) -> ex.Logical:
        return ex.Logical("OR", c[0], c[1])

    def not_(self, c: list[Any]) -> ex.Not:
        return ex.Not(c[0])

    def between(self, c: list[Any]) -> ex.Between:
        value, lower, upper = (x for x in c if not isinstance(x, Token))
        return ex.Between(value, lower, upper, negated="NOT" in _tokens(c))

    def in_list(self, c: list[Any]) -> ex.InList:
        values = [x for x in c if not isinstance(x, Token)]
        return ex.InList(values[0], tuple(values[1:]), negated="NOT" in _tokens(c))

    def like(self, c: list[Any]) -> ex.Like:
        values = [x for x in c if not isinstance(x, Token)]
        escape = values[2] if len(values) > 2 else None
        return ex.Like(values[0], values[1], escape, negated="NOT" in _tokens(c))

    def is_null(self, c: list[Any]) -> ex.IsNull:
        return ex.IsNull(c[0], negated="NOT" in _tokens(c))

    def is_distinct_from(self, c: list[Any]) -> ex.IsDistinctFrom:
        values = [x for x in c if not isinstance(x, Token)]
        return ex.IsDistinctFrom(values[0], values[1], negated="NOT" in _tokens(c))

    def when_clause(self, c: list[Any]) -> ex.WhenClause:
        return ex.WhenClause(c[0], c[1])

    def searched_case(self, c: list[Any]) -> ex.Case:
        whens = tuple(x for x in c if isinstance(x, ex.WhenClause))
        default = c[-1] if not isinstance(c[-1], ex.WhenClause) else None
        return ex.Case(whens, default=default)

    def simple_case(self, c: list[Any]) -> ex.Case:
        case = self.searched_case(c[1:])
        return dataclasses.replace(case, operand=c[0])

    def cast(self, c: list[Any]) -> ex.Cast:
        return ex.Cast(c[0], c[1])

    def array_constructor(self, c: list[Any]) -> ex.ArrayConstructor:
        return ex.ArrayConstructor(tuple(c))

    def map_entry(self, c: list[Any]) -> tuple[Any, Any]:
        return (c[0], c[1])

    def map_constructor(self, c: list[Any]) -> ex.MapConstructor:
        return ex.MapConstructor(tuple(c))

    def struct_entry(self, c: list[Any]) -> tuple[Any, Any]:
        return (c[0], c[1])

    def struct_constructor(self, c: list[Any]) -> ex.StructConstructor:
        return ex.StructConstructor(tuple(c))

    # ---- queries
    def single_column(self, c: list[Any]) -> st.SingleColumn:
        return st.SingleColumn(c[0], c[1] if len(c) > 1 else None)

    def struct_all(self, c: list[Any]) -> st.StructAll:
        return st.StructAll(c[0])

    def all_columns(self, c: list[Any]) -> st.AllColumns:
        return st.AllColumns(c[0] if len(c) > 1 else None)

    def aliased_relation(self, c: list[str]) -> st.AliasedRelation:
        return st.AliasedRelation(c[0], c[1] if len(c) > 1 else None)

    def join_type(self, c: list[Token]) -> st.JoinType:
        kinds = _tokens(c)
        for kind in ("LEFT", "RIGHT", "FULL"):
            if kind in kinds:
                return st.JoinType[kind]
        return st.JoinType.INNER

    def time_span(self, c: list[Token]) -> st.TimeSpan:
        return st.TimeSpan(int(c[0]), ex.TimeUnit.of(str(c[1])))

    def within(self, c: list[Any]) -> st.WithinExpression:
        spans = [x for x in c if isinstance(x, st.TimeSpan)]
        grace = _of(c, _Wrapped)
        after = spans[1] if len(spans) > 1 else spans[0]
        return st.WithinExpression(spans[0], after, grace.value if grace else None)

    def joined_source(self, c: list[Any]) -> st.JoinedSource:
        within = _of(c, st.WithinExpression)
        return st.JoinedSource(c[0], c[1], c[-1], within)

    def relation(self, c: list[Any]) -> st.Relation:
        if len(c) == 1:
            left: st.AliasedRelation = c[0]
            return left
        return st.Join(c[0], tuple(c[1:]))

    def retention(self, c: list[Any]) -> _Wrapped:
        return _Wrapped("retention", c[0])

    def grace(self, c: list[Any]) -> _Wrapped:
        return _Wrapped("grace", c[0])

    def _window(self, kind: st.WindowKind, c: list[Any]) -> st.WindowExpression:
        spans = [x for x in c if isinstance(x, st.TimeSpan)]
        clauses = _clauses(c)
        return st.WindowExpression(
            kind,
            spans[0],
            advance=spans[1] if len(spans) > 1 else None,
            retention=clauses.get("retention"),
            grace=clauses.get("grace"),
        )

    def tumbling(self, c: list[Any]) -> st.WindowExpression:
        return self._window(st.WindowKind.TUMBLING, c)

    def hopping(self, c: list[Any]) -> st.WindowExpression:
        return self._window(st.WindowKind.HOPPING, c)

    def session(self, c: list[Any]) -> st.WindowExpression:
        return self._window(st.WindowKind.SESSION, c)

    def window(self, c: list[Any]) -> _Wrapped:
        return _Wrapped("window", c[0])

    def where(self, c: list[Any]) -> _Wrapped:
        return _Wrapped("where", c[0])

    def group_by(self, c: list[Any]) -> _Wrapped:
        return _Wrapped("group_by", tuple(c))

    def partition_by(self, c: list[Any]) -> _Wrapped:
        return _Wrapped("partition_by", tuple(c))

    def having(self, c: list[Any]) -> _Wrapped:
        return _Wrapped("having", c[0])

    def emit(self, c: list[Token]) -> _Wrapped:
        return _Wrapped("emit", st.Emit(str(c[0]).upper()))

    def limit(self, c: list[Token]) -> _Wrapped:
        return _Wrapped("limit", int(c[0]))

    def query(self, c: list[Any]) -> st.Query:
        items = tuple(x for x in c if isinstance(x, st.SingleColumn | st.AllColumns | st.StructAll))
        relation = next(x for x in c if isinstance(x, st.AliasedRelation | st.Join))
        return st.Query(items, relation, **_clauses(c))

    # ---- statements
    def query_statement(self, c: list[Any]) -> st.QueryStatement:
        return st.QueryStatement(c[0])

    def list_statement(self, c: list[Token]) -> st.ListStatement:
        subject = next(x for x in c if x.type == "LIST_SUBJECT")
        return st.ListStatement(
            st.ListSubject(str(subject).upper()),
            extended="EXTENDED" in _tokens(c),
            all="ALL" in _tokens(c),
        )

    def describe(self, c: list[Any]) -> st.Describe:
        return st.Describe(c[0], extended="EXTENDED" in _tokens(c))

    def describe_function(self, c: list[Any]) -> st.DescribeFunction:
        return st.DescribeFunction(c[0])

    def from_beginning(self, _: list[Any]) -> _Wrapped:
        return _Wrapped("from_beginning", True)

    def interval(self, c: list[Token]) -> _Wrapped:
        return _Wrapped("interval", int(c[-1]))

    def print_topic(self, c: list[Any]) -> st.PrintTopic:
        return st.PrintTopic(c[0], **_clauses(c))

    def terminate(self, c: list[Any]) -> st.Terminate:
        return st.Terminate(None if isinstance(c[0], Token) else c[0])

    def set_property(self, c: list[str]) -> st.SetProperty:
        return st.SetProperty(c[0], c[1])

    def unset_property(self, c: list[str]) -> st.UnsetProperty:
        return st.UnsetProperty(c[0])

    def run_script(self, c: list[str]) -> st.RunScript:
        return st.RunScript(c[0])

    def or_replace(self, _: list[Any]) -> _Wrapped:
        return _Wrapped("or_replace", True)

    def if_not_exists(self, _: list[Any]) -> _Wrapped:
        return _Wrapped("if_not_exists", True)

    def if_exists(self, _: list[Any]) -> _Wrapped:
        return _Wrapped("if_exists", True)

    def delete_topic(self, _: list[Any]) -> _Wrapped:
        return _Wrapped("delete_topic", True)

    def key_constraint(self, c: list[Token]) -> st.ColumnConstraint:
        return st.ColumnConstraint.PRIMARY_KEY if len(c) == 2 else st.ColumnConstraint.KEY

    def headers_constraint(self, _: list[Any]) -> st.ColumnConstraint:
        return st.ColumnConstraint.HEADERS

    def header_constraint(self, c: list[str]) -> tuple[st.ColumnConstraint, str]:
        return (st.ColumnConstraint.HEADER, c[0])

    def table_element(self, c: list[Any]) -> st.TableElement:
        constraint = c[2] if len(c) > 2 else None
        if isinstance(constraint, tuple):
            return st.TableElement(c[0], c[1], constraint[0], constraint[1])
        return st.TableElement(c[0], c[1], constraint)

    def table_elements(self, c: list[st.TableElement]) -> _Wrapped:
        return _Wrapped("elements", tuple(c))

    def property(self, c: list[Any]) -> st.Property:
        return st.Property(c[0].upper(), c[1])

    def with_properties(self, c: list[st.Property]) -> _Wrapped:
        return _Wrapped("properties", tuple(c))

    def create_source(self, c: list[Any]) -> st.CreateSource:
        kind = next(x for x in c if isinstance(x, Token) and x.type == "SOURCE_KIND")
        return st.CreateSource(
            st.SourceKind(str(kind).upper()),
            _of(c, str),
            source="SOURCE" in _tokens(c),
            **_clauses(c),
        )

    def create_as_select(self, c: list[Any]) -> st.CreateAsSelect:
        kind = next(x for x in c if isinstance(x, Token))
        return st.CreateAsSelect(
            st.SourceKind(str(kind).upper()), _of(c, str), _of(c, st.Query), **_clauses(c)
        )

    def insert_into(self, c: list[Any]) -> st.InsertInto:
        return st.InsertInto(c[0], _of(c, st.Query), **_clauses(c))

    def column_names(self, c: list[str]) -> _Wrapped:
        return _Wrapped("columns", tuple(c))

    def insert_values(self, c: list[Any]) -> st.InsertValues:
        values = tuple(x for x in c[1:] if not isinstance(x, _Wrapped))
        return st.InsertValues(c[0], values, **_clauses(c))

    def drop_source(self, c: list[Any]) -> st.DropSource:
        return st.DropSource(st.SourceKind(str(c[0]).upper()), _of(c, str), **_clauses(c))

    def explain(self, c: list[Any]) -> st.Explain:
        if isinstance(c[0], str):
            return st.Explain(query_id=c[0])
        return st.Explain(statement=c[0])
