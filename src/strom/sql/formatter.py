"""Statements back to canonical SQL, as ksqlDB's SqlFormatter writes the command topic and
`statementText`: keywords upper-case, names quoted only where they must be, every compound
expression in parentheses, so `parse(format(s))` is `s` again."""

from __future__ import annotations

import functools
import re

from strom.sql import expressions as ex
from strom.sql import statements as st
from strom.sql import types as ty
from strom.sql.parser import keywords

__all__ = ["format_expression", "format_statement", "format_type", "quote_identifier"]

_UNQUOTED = re.compile(r"[A-Z_][A-Z0-9_@]*")


@functools.cache
def _keywords() -> frozenset[str]:
    """The grammar's keywords and the time units (also read as words in function arguments):
    a name spelled as one is quoted, wherever it stands."""
    units = {u.value for u in ex.TimeUnit} | {u.value[:-1] for u in ex.TimeUnit}
    return keywords() | units


def quote_identifier(name: str) -> str:
    """A name as it must be written to read back the same: bare when it is upper-case and no
    keyword, in backquotes otherwise."""
    if _UNQUOTED.fullmatch(name) and name not in _keywords():
        return name
    return "`" + name.replace("`", "``") + "`"


def _string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def format_type(t: ty.SqlType) -> str:
    match t:
        case ty.PrimitiveType(primitive):
            return primitive.value
        case ty.DecimalType(precision, scale):
            return f"DECIMAL({precision}, {scale})"
        case ty.ArrayType(element):
            return f"ARRAY<{format_type(element)}>"
        case ty.MapType(key, value):
            return f"MAP<{format_type(key)}, {format_type(value)}>"
        case ty.StructType(fields):
            inner = ", ".join(f"{quote_identifier(f.name)} {format_type(f.type)}" for f in fields)
            return f"STRUCT<{inner}>"


def _decimal(value: ex.DecimalLiteral) -> str:
    text = format(value.value, "f")
    return text if "." in text else text + "."


def _double(value: float) -> str:
    text = repr(value)
    return text if "e" in text else text + "E0"


def _not(negated: bool) -> str:
    return "NOT " if negated else ""


def _list(items: tuple[ex.Expression, ...]) -> str:
    return ", ".join(format_expression(i) for i in items)


def format_expression(e: ex.Expression) -> str:
    """An expression as ksqlDB's ExpressionFormatter writes it."""
    match e:
        case ex.NullLiteral():
            return "NULL"
        case ex.BooleanLiteral(value):
            return "TRUE" if value else "FALSE"
        case ex.IntegerLiteral(value):
            return str(value)
        case ex.DecimalLiteral():
            return _decimal(e)
        case ex.DoubleLiteral(value):
            return _double(value)
        case ex.StringLiteral(value):
            return _string(value)
        case ex.ColumnRef(name, source):
            column = quote_identifier(name)
            return column if source is None else f"{quote_identifier(source)}.{column}"
        case ex.Dereference(base, field):
            return f"{format_expression(base)}->{quote_identifier(field)}"
        case ex.Subscript(base, index):
            return f"{format_expression(base)}[{format_expression(index)}]"
        case ex.IntervalUnit(unit):
            return unit.value
        case ex.FunctionCall(name, args, star):
            return f"{quote_identifier(name)}({'*' if star else _list(args)})"
        case ex.Unary(op, operand):
            inner = format_expression(operand)
            return f"({op}{' ' if inner[0] in '+-' else ''}{inner})"
        case ex.Binary(op, left, right) | ex.Comparison(op, left, right):
            return f"({format_expression(left)} {op} {format_expression(right)})"
        case ex.Logical(op, left, right):
            return f"({format_expression(left)} {op} {format_expression(right)})"
        case ex.Not(operand):
            return f"(NOT {format_expression(operand)})"
        case ex.Between(value, lower, upper, negated):
            return (
                f"({format_expression(value)} {_not(negated)}BETWEEN "
                f"{format_expression(lower)} AND {format_expression(upper)})"
            )
        case ex.InList(value, items, negated):
            return f"({format_expression(value)} {_not(negated)}IN ({_list(items)}))"
        case ex.Like(value, pattern, escape, negated):
            tail = "" if escape is None else f" ESCAPE {_string(escape)}"
            return (
                f"({format_expression(value)} {_not(negated)}LIKE "
                f"{format_expression(pattern)}{tail})"
            )
        case ex.IsNull(value, negated):
            return f"({format_expression(value)} IS {_not(negated)}NULL)"
        case ex.IsDistinctFrom(left, right, negated):
            return (
                f"({format_expression(left)} IS {_not(negated)}DISTINCT FROM "
                f"{format_expression(right)})"
            )
        case ex.Case(whens, operand, default):
            parts = ["(CASE"]
            if operand is not None:
                parts.append(format_expression(operand))
            for when in whens:
                parts += [
                    "WHEN",
                    format_expression(when.condition),
                    "THEN",
                    format_expression(when.result),
                ]
            if default is not None:
                parts += ["ELSE", format_expression(default)]
            return " ".join([*parts, "END)"])
        case ex.Cast(value, type_):
            return f"CAST({format_expression(value)} AS {format_type(type_)})"
        case ex.ArrayConstructor(items):
            return f"ARRAY[{_list(items)}]"
        case ex.MapConstructor(entries):
            inner = ", ".join(f"{format_expression(k)}:={format_expression(v)}" for k, v in entries)
            return f"MAP({inner})"
        case ex.StructConstructor(fields):
            inner = ", ".join(f"{quote_identifier(n)}:={format_expression(v)}" for n, v in fields)
            return f"STRUCT({inner})"
        case ex.Lambda(params, body):
            names = ", ".join(quote_identifier(n) for n in params)
            return f"({names}) => {format_expression(body)}"


def _span(span: st.TimeSpan) -> str:
    return f"{span.value} {span.unit.value}"


def _window(w: st.WindowExpression) -> str:
    parts = [_span(w.size)] if w.kind is st.WindowKind.SESSION else [f"SIZE {_span(w.size)}"]
    if w.advance is not None:
        parts.append(f"ADVANCE BY {_span(w.advance)}")
    if w.retention is not None:
        parts.append(f"RETENTION {_span(w.retention)}")
    if w.grace is not None:
        parts.append(f"GRACE PERIOD {_span(w.grace)}")
    return f"{w.kind.value} ({', '.join(parts)})"


def _aliased(r: st.AliasedRelation) -> str:
    name = quote_identifier(r.name)
    return name if r.alias is None else f"{name} {quote_identifier(r.alias)}"


def _within(w: st.WithinExpression) -> str:
    text = _span(w.before) if w.before == w.after else f"({_span(w.before)}, {_span(w.after)})"
    return text if w.grace is None else f"{text} GRACE PERIOD {_span(w.grace)}"


def _relation(r: st.Relation) -> str:
    if isinstance(r, st.AliasedRelation):
        return _aliased(r)
    lines = [_aliased(r.left)]
    for j in r.joins:
        within = "" if j.within is None else f" WITHIN {_within(j.within)}"
        lines.append(
            f"{j.type.value} JOIN {_aliased(j.relation)}{within} ON {format_expression(j.criteria)}"
        )
    return "\n".join(lines)


def _select_item(item: st.SelectItem) -> str:
    if isinstance(item, st.StructAll):
        return f"{format_expression(item.base)}->*"
    if isinstance(item, st.AllColumns):
        return "*" if item.source is None else f"{quote_identifier(item.source)}.*"
    text = format_expression(item.expression)
    return text if item.alias is None else f"{text} AS {quote_identifier(item.alias)}"


def format_query(q: st.Query) -> str:
    lines = [
        "SELECT " + ", ".join(_select_item(i) for i in q.select),
        "FROM " + _relation(q.from_),
    ]
    if q.window is not None:
        lines.append("WINDOW " + _window(q.window))
    if q.where is not None:
        lines.append("WHERE " + format_expression(q.where))
    if q.group_by:
        lines.append("GROUP BY " + _list(q.group_by))
    if q.partition_by:
        lines.append("PARTITION BY " + _list(q.partition_by))
    if q.having is not None:
        lines.append("HAVING " + format_expression(q.having))
    if q.emit is not None:
        lines.append("EMIT " + q.emit.value)
    if q.limit is not None:
        lines.append(f"LIMIT {q.limit}")
    return "\n".join(lines)


def _properties(props: tuple[st.Property, ...]) -> str:
    if not props:
        return ""
    inner = ", ".join(f"{quote_identifier(p.name)}={format_expression(p.value)}" for p in props)
    return f" WITH ({inner})"


def _element(e: st.TableElement) -> str:
    text = f"{quote_identifier(e.name)} {format_type(e.type)}"
    if e.constraint is st.ColumnConstraint.HEADER:
        return f"{text} HEADER({_string(e.header_key or '')})"
    return text if e.constraint is None else f"{text} {e.constraint.value}"


def _create_head(s: st.CreateSource | st.CreateAsSelect, *, source: bool) -> str:
    words = ["CREATE"]
    if s.or_replace:
        words.append("OR REPLACE")
    if source:
        words.append("SOURCE")
    words.append(s.kind.value)
    if s.if_not_exists:
        words.append("IF NOT EXISTS")
    words.append(quote_identifier(s.name))
    return " ".join(words)


def _body(s: st.Statement) -> str:
    match s:
        case st.QueryStatement(query):
            return format_query(query)
        case st.CreateSource():
            elements = ", ".join(_element(e) for e in s.elements)
            columns = f" ({elements})" if elements else ""
            return _create_head(s, source=s.source) + columns + _properties(s.properties)
        case st.CreateAsSelect():
            return (
                _create_head(s, source=False)
                + _properties(s.properties)
                + " AS "
                + format_query(s.query)
            )
        case st.InsertInto(target, query, properties):
            return f"INSERT INTO {quote_identifier(target)}{_properties(properties)} " + (
                format_query(query)
            )
        case st.InsertValues(target, values, columns):
            names = ", ".join(quote_identifier(c) for c in columns)
            listed = f" ({names})" if columns else ""
            return f"INSERT INTO {quote_identifier(target)}{listed} VALUES ({_list(values)})"
        case st.ListStatement(subject, extended, all_):
            words = ["SHOW", *(["ALL"] if all_ else []), subject.value]
            return " ".join([*words, *(["EXTENDED"] if extended else [])])
        case st.Describe(source, extended):
            return f"DESCRIBE {quote_identifier(source)}{' EXTENDED' if extended else ''}"
        case st.DescribeFunction(name):
            return f"DESCRIBE FUNCTION {quote_identifier(name)}"
        case st.Explain(statement, query_id):
            if statement is not None:
                return f"EXPLAIN {_body(statement)}"
            return f"EXPLAIN {quote_identifier(query_id or '')}"
        case st.Terminate(query_id):
            return (
                "TERMINATE ALL" if query_id is None else f"TERMINATE {quote_identifier(query_id)}"
            )
        case st.DropSource(kind, name, if_exists, delete_topic):
            exists = " IF EXISTS" if if_exists else ""
            delete = " DELETE TOPIC" if delete_topic else ""
            return f"DROP {kind.value}{exists} {quote_identifier(name)}{delete}"
        case st.PrintTopic(topic, from_beginning, interval, limit):
            text = f"PRINT {_string(topic)}"
            text += " FROM BEGINNING" if from_beginning else ""
            text += "" if interval is None else f" INTERVAL {interval}"
            return text + ("" if limit is None else f" LIMIT {limit}")
        case st.SetProperty(name, value):
            return f"SET {_string(name)}={_string(value)}"
        case st.UnsetProperty(name):
            return f"UNSET {_string(name)}"
        case st.RunScript(path):
            return f"RUN SCRIPT {_string(path)}"


def format_statement(s: st.Statement) -> str:
    """A statement as canonical SQL, ending in `;`."""
    return _body(s) + ";"
