"""Parsing and canonical forms: invalid schemas are refused, and a schema's canonical and
normalized texts parse back to the same canonical text (hypothesis)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strom.registry.parsing import parse_schema
from strom.registry.protobuf_schema import ProtobufSchema
from strom.registry.schema_types import Dependency, InvalidSchemaError, SchemaType

_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_PRIMITIVES = st.sampled_from(["int", "long", "string", "boolean", "double", "bytes"])


@st.composite
def avro_records(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(_NAMES, min_size=1, max_size=6, unique=True))
    fields = []
    for name in names:
        field: dict[str, Any] = {"name": name, "type": draw(_PRIMITIVES)}
        if draw(st.booleans()):
            field["type"] = ["null", field["type"]]
            field["default"] = None
        if draw(st.booleans()):
            field["doc"] = draw(st.text(max_size=10))
        fields.append(field)
    return {"type": "record", "name": draw(_NAMES), "namespace": "n.s", "fields": fields}


@st.composite
def json_schemas(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(_NAMES, max_size=5, unique=True))
    props = {n: {"type": draw(st.sampled_from(["string", "integer", "boolean"]))} for n in names}
    schema: dict[str, Any] = {"type": "object", "properties": props}
    required: bool = draw(st.booleans())
    if required:
        schema["required"] = names[:1]
    return schema


@given(avro_records(), st.integers(0, 4))
def test_avro_canonical_round_trips(schema: dict[str, Any], indent: int) -> None:
    parsed = parse_schema(SchemaType.AVRO, json.dumps(schema, indent=indent))
    again = parse_schema(SchemaType.AVRO, parsed.canonical)
    assert again.canonical == parsed.canonical
    normalized = parse_schema(SchemaType.AVRO, parsed.normalized())
    assert normalized.normalized() == parsed.normalized()
    assert not again.read_errors(parsed) and not normalized.read_errors(parsed)


@given(json_schemas(), st.integers(0, 4))
def test_json_canonical_round_trips(schema: dict[str, Any], indent: int) -> None:
    parsed = parse_schema(SchemaType.JSON, json.dumps(schema, indent=indent))
    assert parse_schema(SchemaType.JSON, parsed.canonical).canonical == parsed.canonical
    assert parse_schema(SchemaType.JSON, parsed.normalized()).normalized() == parsed.normalized()
    reordered = json.dumps(dict(reversed(list(schema.items()))))
    assert parse_schema(SchemaType.JSON, reordered).normalized() == parsed.normalized()


@pytest.mark.parametrize(
    ("schema_type", "text"),
    [
        (SchemaType.AVRO, "{"),
        (SchemaType.AVRO, '{"type": "record", "name": "r"}'),
        (SchemaType.AVRO, '{"type": "nope"}'),
        (
            SchemaType.AVRO,
            '{"type": "record", "name": "r", "fields": [{"name": "a", "type": "X"}]}',
        ),
        (SchemaType.JSON, "[1]"),
        (SchemaType.JSON, '{"type": 12}'),
        (SchemaType.PROTOBUF, "syntax = 'proto3'; message M {"),
        (SchemaType.PROTOBUF, "AAAA"),
    ],
)
def test_invalid_schemas_are_refused(schema_type: SchemaType, text: str) -> None:
    with pytest.raises(InvalidSchemaError):
        parse_schema(schema_type, text)


def test_avro_named_types_come_from_references() -> None:
    address = '{"type": "record", "name": "Address", "namespace": "x", "fields": []}'
    user = json.dumps(
        {
            "type": "record",
            "name": "User",
            "namespace": "x",
            "fields": [{"name": "home", "type": "x.Address"}],
        }
    )
    with pytest.raises(InvalidSchemaError):
        parse_schema(SchemaType.AVRO, user)
    parsed = parse_schema(SchemaType.AVRO, user, [Dependency("x.Address", address)])
    assert "x.Address" in parsed.canonical


PAYMENT = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "common/money.proto";
message Payment {
  string id = 1;
  common.Money amount = 2;
  google.protobuf.Timestamp at = 3;
}
"""
MONEY = 'syntax = "proto3"; package common; message Money { int64 cents = 1; }'


def test_proto_text_compiles_with_its_references() -> None:
    money = [Dependency("common/money.proto", MONEY)]
    with pytest.raises(InvalidSchemaError):  # the import is neither a reference nor well known
        parse_schema(SchemaType.PROTOBUF, PAYMENT)
    parsed = ProtobufSchema(PAYMENT, money)
    assert list(parsed.messages) == ["shop.Payment"]
    # The serialized form is the same schema: it parses, and reads the text's data.
    serialized = ProtobufSchema(parsed.serialized(), money)
    assert not serialized.read_errors(parsed) and not parsed.read_errors(serialized)
    with pytest.raises(InvalidSchemaError, match="does not compile"):
        parse_schema(SchemaType.PROTOBUF, 'syntax = "proto3"; message M { nope x = 1; }')


def _field(kind: Any, default: Any) -> str:
    return json.dumps(
        {"type": "record", "name": "r", "fields": [{"name": "f", "type": kind, "default": default}]}
    )


@pytest.mark.parametrize(
    ("kind", "default"),
    [
        ("string", "x"),
        ("int", -(2**31)),
        ("long", 2**63 - 1),
        ("double", 1),
        ("float", 1.5),
        ("boolean", False),
        (["null", "string"], None),
        (["null", "string"], "x"),  # Java Avro takes any branch's value
        ({"type": "array", "items": "int"}, [1, 2]),
        ({"type": "map", "values": "boolean"}, {"a": True}),
        ({"type": "enum", "name": "e", "symbols": ["A"]}, "A"),
        ({"type": "fixed", "name": "x", "size": 2}, "\u00ff\u0000"),
        (
            {"type": "record", "name": "in", "fields": [{"name": "a", "type": "int"}]},
            {"a": 1},
        ),
        (
            {
                "type": "record",
                "name": "in",
                "fields": [{"name": "a", "type": "int", "default": 0}],
            },
            {},
        ),
    ],
)
def test_avro_defaults_that_fit(kind: Any, default: Any) -> None:
    assert parse_schema(SchemaType.AVRO, _field(kind, default)).default_errors() == []


@pytest.mark.parametrize(
    ("kind", "default"),
    [
        ("string", None),
        ("int", 2**31),
        ("int", 1.5),
        ("int", True),
        ("long", "1"),
        ("boolean", 0),
        ("double", "NaN-ish"),
        ("null", 0),
        (["null", "int"], "x"),
        ({"type": "array", "items": "int"}, None),
        ({"type": "array", "items": "int"}, [1, "2"]),
        ({"type": "map", "values": "int"}, {"a": "b"}),
        ({"type": "record", "name": "in", "fields": [{"name": "a", "type": "int"}]}, {}),
    ],
)
def test_avro_defaults_that_do_not_fit(kind: Any, default: Any) -> None:
    errors = parse_schema(SchemaType.AVRO, _field(kind, default)).default_errors()
    assert len(errors) == 1 and errors[0].startswith("Invalid default for field r.f: ")


def test_avro_defaults_of_nested_fields_are_checked() -> None:
    inner = {
        "type": "record",
        "name": "in",
        "fields": [{"name": "a", "type": "int", "default": "x"}],
    }
    outer = {"type": "record", "name": "out", "fields": [{"name": "i", "type": ["null", inner]}]}
    parsed = parse_schema(SchemaType.AVRO, json.dumps(outer))
    assert parsed.default_errors() == ['Invalid default for field out.i.a: "x" not a "int"']
