"""Compatibility matrices per schema type, from the documented rules of Confluent's registry
(Avro: the specification's schema resolution; JSON Schema and Protobuf: Confluent's lists)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.protobuf import descriptor_pb2

from strom.registry.compatibility import CompatibilityLevel, incompatibilities
from strom.registry.parsing import parse_schema
from strom.registry.schema_types import Dependency, InvalidSchemaError, ParsedSchema, SchemaType


def avro(*fields: dict[str, Any], name: str = "r") -> ParsedSchema:
    return parse_schema(
        SchemaType.AVRO, json.dumps({"type": "record", "name": name, "fields": list(fields)})
    )


def js(document: Any) -> ParsedSchema:
    return parse_schema(SchemaType.JSON, json.dumps(document))


F = descriptor_pb2.FieldDescriptorProto


def proto(
    *fields: tuple[str, int, int, int], package: str = "p", oneof: bool = False
) -> ParsedSchema:
    """A file with message ``M`` holding (name, number, type, label) fields."""
    message = descriptor_pb2.DescriptorProto(name="M")
    if oneof:
        message.oneof_decl.add(name="choice")
    for name, number, kind, label in fields:
        field = message.field.add(name=name, number=number, type=kind, label=label)
        if oneof:
            field.oneof_index = 0
    file = descriptor_pb2.FileDescriptorProto(
        name="m.proto", package=package, syntax="proto3", message_type=[message]
    )
    return parse_schema(SchemaType.PROTOBUF, base64.b64encode(file.SerializeToString()).decode())


OPT = F.LABEL_OPTIONAL
A = {"name": "a", "type": "int"}
B_DEFAULT = {"name": "b", "type": "string", "default": "x"}
B_REQUIRED = {"name": "b", "type": "string"}

# (old, new, backward ok, forward ok)
AVRO_CASES = {
    "add a field with a default": (avro(A), avro(A, B_DEFAULT), True, True),
    "add a field without a default": (avro(A), avro(A, B_REQUIRED), False, True),
    "remove a field with a default": (avro(A, B_DEFAULT), avro(A), True, True),
    "remove a field without a default": (avro(A, B_REQUIRED), avro(A), True, False),
    "promote int to long": (avro(A), avro({"name": "a", "type": "long"}), True, False),
    "change int to string": (avro(A), avro({"name": "a", "type": "string"}), False, False),
    "rename the record": (avro(A), avro(A, name="s"), False, False),
    "widen to a union": (
        avro(A),
        avro({"name": "a", "type": ["null", "int"]}),
        True,
        False,
    ),
    "add an enum symbol": (
        avro({"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X"]}}),
        avro({"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]}}),
        True,
        False,
    ),
    "rename a field with an alias": (
        avro(A),
        avro({"name": "b", "type": "int", "aliases": ["a"]}),
        True,
        False,
    ),
    "string to bytes": (
        avro({"name": "a", "type": "string"}),
        avro({"name": "a", "type": "bytes"}),
        True,
        True,
    ),
}
JSON_CASES = {
    "anything to the empty schema": (js({"properties": {}}), js({}), True, False),
    "add a property to an open model": (
        js({"type": "object", "properties": {"a": {"type": "string"}}}),
        js({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}),
        False,
        True,
    ),
    "add an optional property to a closed model": (
        js({"type": "object", "properties": {"a": {}}, "additionalProperties": False}),
        js(
            {
                "type": "object",
                "properties": {"a": {}, "b": {"type": "string"}},
                "additionalProperties": False,
            }
        ),
        True,
        False,
    ),
    "make a property required": (
        js({"type": "object", "properties": {"a": {"type": "string"}}}),
        js({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
        False,
        True,
    ),
    "widen integer to number": (js({"type": "integer"}), js({"type": "number"}), True, False),
    "change string to integer": (js({"type": "string"}), js({"type": "integer"}), False, False),
    "raise maxLength": (
        js({"type": "string", "maxLength": 5}),
        js({"type": "string", "maxLength": 10}),
        True,
        False,
    ),
    "add an enum value": (js({"enum": ["a"]}), js({"enum": ["a", "b"]}), True, False),
    "close the content model": (
        js({"type": "object", "properties": {"a": {}}}),
        js({"type": "object", "properties": {"a": {}}, "additionalProperties": False}),
        False,
        True,
    ),
    "remove a property from an open model": (
        js({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}),
        js({"type": "object", "properties": {"a": {"type": "string"}}}),
        True,
        False,
    ),
    "add a pattern": (
        js({"type": "string"}),
        js({"type": "string", "pattern": "^x"}),
        False,
        True,
    ),
}
PROTO_CASES = {
    "add a field": (
        proto(("a", 1, F.TYPE_INT32, OPT)),
        proto(("a", 1, F.TYPE_INT32, OPT), ("b", 2, F.TYPE_STRING, OPT)),
        True,
        True,
    ),
    "rename a field": (
        proto(("a", 1, F.TYPE_INT32, OPT)),
        proto(("renamed", 1, F.TYPE_INT32, OPT)),
        True,
        True,
    ),
    "int32 to int64 (one wire type)": (
        proto(("a", 1, F.TYPE_INT32, OPT)),
        proto(("a", 1, F.TYPE_INT64, OPT)),
        True,
        True,
    ),
    "int32 to string": (
        proto(("a", 1, F.TYPE_INT32, OPT)),
        proto(("a", 1, F.TYPE_STRING, OPT)),
        False,
        False,
    ),
    "string to repeated string": (
        proto(("a", 1, F.TYPE_STRING, OPT)),
        proto(("a", 1, F.TYPE_STRING, F.LABEL_REPEATED)),
        True,
        True,
    ),
    "int32 to repeated int32": (
        proto(("a", 1, F.TYPE_INT32, OPT)),
        proto(("a", 1, F.TYPE_INT32, F.LABEL_REPEATED)),
        False,
        False,
    ),
    "change the package": (
        proto(("a", 1, F.TYPE_INT32, OPT)),
        proto(("a", 1, F.TYPE_INT32, OPT), package="q"),
        False,
        False,
    ),
    "remove a field": (
        proto(("a", 1, F.TYPE_INT32, OPT), ("b", 2, F.TYPE_STRING, OPT)),
        proto(("a", 1, F.TYPE_INT32, OPT)),
        True,
        True,
    ),
    "sint32 to int32 (another varint encoding)": (
        proto(("a", 1, F.TYPE_SINT32, OPT)),
        proto(("a", 1, F.TYPE_INT32, OPT)),
        False,
        False,
    ),
    "remove a field of a oneof": (
        proto(("a", 1, F.TYPE_INT32, OPT), ("b", 2, F.TYPE_INT32, OPT), oneof=True),
        proto(("a", 1, F.TYPE_INT32, OPT), oneof=True),
        False,
        True,
    ),
}
CASES = {
    f"{kind}: {name}": case
    for kind, cases in (("avro", AVRO_CASES), ("json", JSON_CASES), ("protobuf", PROTO_CASES))
    for name, case in cases.items()
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_matrix(case: tuple[ParsedSchema, ParsedSchema, bool, bool]) -> None:
    old, new, backward, forward = case
    expected = {
        CompatibilityLevel.NONE: True,
        CompatibilityLevel.BACKWARD: backward,
        CompatibilityLevel.FORWARD: forward,
        CompatibilityLevel.FULL: backward and forward,
    }
    for level, ok in expected.items():
        assert (not incompatibilities(level, new, [(1, old)])) is ok, level


def test_transitive_levels_check_every_version() -> None:
    v1 = avro(A)
    v2 = avro(A, B_DEFAULT)
    v3 = avro(A, {"name": "b", "type": "string", "default": "x"}, {"name": "c", "type": "int"})
    # v3 adds c without a default: it cannot read v2's data, nor v1's.
    v3_fine = avro(B_DEFAULT)  # drops a: reads v2 (a unused) and v1 (b defaults)
    history = [(1, v1), (2, v2)]
    assert incompatibilities(CompatibilityLevel.BACKWARD, v3, history)
    assert not incompatibilities(CompatibilityLevel.BACKWARD_TRANSITIVE, v3_fine, history)
    # Forward: v1 (needs a, no default) cannot read data of a schema without a.
    assert not incompatibilities(CompatibilityLevel.FORWARD, avro(A, B_DEFAULT), history)
    assert incompatibilities(CompatibilityLevel.FORWARD_TRANSITIVE, v3_fine, history)
    assert incompatibilities(CompatibilityLevel.FULL_TRANSITIVE, v3_fine, history)
    assert incompatibilities(CompatibilityLevel.FORWARD, v3_fine, [(1, v2)])


def test_messages_name_the_version_and_the_level() -> None:
    messages = incompatibilities(CompatibilityLevel.BACKWARD, avro(A, B_REQUIRED), [(7, avro(A))])
    assert messages[0].startswith("version 7: ")
    assert messages[-1] == "{compatibility: 'BACKWARD'}"


def _with_refs(document: Any, *dependencies: tuple[str, Any]) -> ParsedSchema:
    deps = [Dependency(name, json.dumps(contents)) for name, contents in dependencies]
    return parse_schema(SchemaType.JSON, json.dumps(document), deps)


def test_json_refs_reach_referenced_schemas() -> None:
    """A ``$ref`` equal to a reference's name, a fragment inside it, and a referenced
    schema's own ``$ref`` to another reference, all followed by the checker."""
    money = {"type": "object", "properties": {"cents": {"type": "integer"}}}
    wide_money = {"type": "object", "properties": {"cents": {"type": "number"}}}
    line = {"type": "object", "properties": {"price": {"$ref": "money.json"}}}
    lines = {"type": "array", "items": {"$ref": "line.json"}}
    order = {
        "type": "object",
        "properties": {
            "lines": lines,
            "cents": {"$ref": "money.json#/properties/cents"},
        },
    }
    narrow = _with_refs(order, ("money.json", money), ("line.json", line))
    wide = _with_refs(order, ("money.json", wide_money), ("line.json", line))
    assert wide.read_errors(narrow) == []
    # the two paths reach one pair of schemas, which is compared (and named) once
    assert narrow.read_errors(wide) == [
        "#/properties/cents/type: TYPE_NARROWED ['number']",
    ]
    only_lines = {"type": "object", "properties": {"lines": lines}}
    narrow = _with_refs(only_lines, ("money.json", money), ("line.json", line))
    wide = _with_refs(only_lines, ("money.json", wide_money), ("line.json", line))
    assert narrow.read_errors(wide) == [
        "#/properties/lines/items/properties/price/properties/cents/type: TYPE_NARROWED ['number']",
    ]


def test_json_recursive_refs_end() -> None:
    node = {
        "type": "object",
        "properties": {"next": {"$ref": "node.json"}, "value": {"type": "integer"}},
    }
    root = {"$ref": "node.json"}
    parsed = _with_refs(root, ("node.json", node))
    assert parsed.read_errors(parsed) == []


def test_json_dangling_refs_are_invalid() -> None:
    with pytest.raises(InvalidSchemaError, match=r"'other\.json' resolves to nothing"):
        _with_refs({"properties": {"a": {"$ref": "other.json"}}})
    with pytest.raises(InvalidSchemaError, match="'#/definitions/none' resolves to nothing"):
        _with_refs({"properties": {"a": {"$ref": "#/definitions/none"}}})
    # data keywords may hold "$ref" keys that are not references
    _with_refs({"const": {"$ref": "not-a-ref"}, "default": {"$ref": "x"}})
