"""``render_proto``: the ``.proto`` text of a descriptor compiles (with protoc) back to the same
descriptor, for generated descriptors (hypothesis) and a file using every construct."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import descriptor_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strom.registry.proto_render import render_proto
from strom.registry.proto_text import compile_proto
from strom.registry.schema_types import InvalidSchemaError

F = descriptor_pb2.FieldDescriptorProto
SCALARS = [
    F.TYPE_DOUBLE,
    F.TYPE_FLOAT,
    F.TYPE_INT64,
    F.TYPE_UINT64,
    F.TYPE_INT32,
    F.TYPE_FIXED64,
    F.TYPE_FIXED32,
    F.TYPE_BOOL,
    F.TYPE_STRING,
    F.TYPE_BYTES,
    F.TYPE_UINT32,
    F.TYPE_SFIXED32,
    F.TYPE_SFIXED64,
    F.TYPE_SINT32,
    F.TYPE_SINT64,
]
MAP_KEYS = [F.TYPE_INT32, F.TYPE_INT64, F.TYPE_UINT32, F.TYPE_SINT64, F.TYPE_STRING, F.TYPE_BOOL]


def comparable(file: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """The descriptor without what protoc derives or records about the source."""
    copy = descriptor_pb2.FileDescriptorProto()
    copy.CopyFrom(file)
    copy.ClearField("source_code_info")

    def strip(messages: Any) -> None:
        for message in messages:
            for field in message.field:
                field.ClearField("json_name")
            strip(message.nested_type)

    strip(copy.message_type)
    return copy


def round_trip(file: descriptor_pb2.FileDescriptorProto) -> str:
    text = render_proto(file)
    again = compile_proto(text, file.name, [], [])
    assert comparable(again) == comparable(file), text
    assert render_proto(again) == text
    return text


@st.composite
def files(draw: st.DrawFn) -> descriptor_pb2.FileDescriptorProto:
    proto3 = draw(st.booleans())
    package = draw(st.sampled_from(["", "pk", "a.b"]))
    prefix = f".{package}" if package else ""
    file = descriptor_pb2.FileDescriptorProto(name="gen.proto")
    if package:  # protoc leaves an empty package, and proto2's syntax, unset
        file.package = package
    if proto3:
        file.syntax = "proto3"
    enums = []
    for e in range(draw(st.integers(0, 2))):
        enum = file.enum_type.add(name=f"E{e}")
        for v in range(draw(st.integers(1, 3))):
            enum.value.add(name=f"E{e}V{v}", number=v if v == 0 or draw(st.booleans()) else -v)
        enums.append((f"{prefix}.E{e}", enum))
    count = draw(st.integers(1, 3))
    names = [f"{prefix}.M{m}" for m in range(count)]
    for m in range(count):
        message = file.message_type.add(name=f"M{m}")
        message_enums = list(enums)
        if draw(st.booleans()):
            nested = message.enum_type.add(name="Kind")
            nested.value.add(name=f"M{m}K0", number=0)
            nested.reserved_range.add(start=5, end=7)  # inclusive: 5 to 7
            message_enums.append((f"{prefix}.M{m}.Kind", nested))
        if draw(st.booleans()):
            inner = message.nested_type.add(name="Inner")
            inner.field.add(name="x", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
        numbers = draw(st.lists(st.integers(1, 2000), unique=True, max_size=6))
        for i, number in enumerate(numbers):
            field = message.field.add(name=f"f{i}", number=number)
            kind = draw(st.sampled_from(["scalar", "message", "enum", "map"]))
            label = draw(
                st.sampled_from(
                    ["plain", "repeated", "optional"]
                    if proto3
                    else ["optional", "repeated", "required"]
                )
            )
            field.label = F.LABEL_REPEATED if label == "repeated" else F.LABEL_OPTIONAL
            if label == "required":
                field.label = F.LABEL_REQUIRED
            if kind == "map":
                entry = message.nested_type.add(name=f"F{i}Entry")
                entry.options.map_entry = True
                key = entry.field.add(name="key", number=1, label=F.LABEL_OPTIONAL)
                key.type = draw(st.sampled_from(MAP_KEYS))
                value = entry.field.add(name="value", number=2, label=F.LABEL_OPTIONAL)
                value.type = draw(st.sampled_from(SCALARS))
                field.label = F.LABEL_REPEATED
                field.type = F.TYPE_MESSAGE
                field.type_name = f"{prefix}.M{m}.F{i}Entry"
                continue
            if kind == "message":
                field.type = F.TYPE_MESSAGE
                field.type_name = draw(st.sampled_from(names))
            elif kind == "enum" and message_enums:
                field.type = F.TYPE_ENUM
                field.type_name, enum = draw(st.sampled_from(message_enums))
                if not proto3 and label == "optional" and draw(st.booleans()):
                    field.default_value = enum.value[-1].name
            else:
                field.type = draw(st.sampled_from(SCALARS))
                if not proto3 and label == "optional" and draw(st.booleans()):
                    field.default_value = _default(draw, field.type)
            if proto3 and label == "optional":
                field.proto3_optional = True
            if draw(st.booleans()):
                field.options.deprecated = True
        _add_oneofs(draw, message, proto3)
        if draw(st.booleans()):
            message.reserved_range.add(start=3000, end=draw(st.sampled_from([3001, 3010, 1 << 29])))
            message.reserved_name.append("gone")
    return file


def _default(draw: st.DrawFn, kind: int) -> str:
    if kind == F.TYPE_BOOL:
        return draw(st.sampled_from(["true", "false"]))
    if kind == F.TYPE_STRING:
        return draw(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=5))
    if kind == F.TYPE_BYTES:
        return draw(st.sampled_from(["", "abc", "\\000\\377", 'q\\"']))
    if kind in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return draw(st.sampled_from(["0", "1.5", "-2", "inf", "-inf", "nan"]))
    low = 0 if kind in (F.TYPE_UINT32, F.TYPE_UINT64, F.TYPE_FIXED32, F.TYPE_FIXED64) else -9
    return str(draw(st.integers(low, 99)))


def _add_oneofs(draw: st.DrawFn, message: descriptor_pb2.DescriptorProto, proto3: bool) -> None:
    """A real oneof over a run of plain singular fields, then proto3's synthetic ones, in
    protoc's order."""
    eligible = [
        i
        for i, f in enumerate(message.field)
        if f.label == F.LABEL_OPTIONAL
        and not f.proto3_optional
        and not f.HasField("default_value")
        and not f.type_name.endswith("Entry")
    ]
    runs = _runs(eligible)
    wanted: bool = draw(st.booleans())
    if runs and wanted:
        run: list[int] = draw(st.sampled_from(runs))
        message.oneof_decl.add(name="choice")
        for i in run:
            message.field[i].oneof_index = 0
            if proto3:
                message.field[i].label = F.LABEL_OPTIONAL
    for field in message.field:
        if field.proto3_optional:
            field.oneof_index = len(message.oneof_decl)
            message.oneof_decl.add(name=f"_{field.name}")


def _runs(indexes: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for index in indexes:
        if runs and runs[-1][-1] == index - 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return runs


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files())
def test_generated_descriptors_round_trip(file: descriptor_pb2.FileDescriptorProto) -> None:
    round_trip(file)


EVERYTHING = """
syntax = "proto2";
package shop.v1;
import "google/protobuf/timestamp.proto";
import public "google/protobuf/duration.proto";
option java_package = "com.shop";
option java_multiple_files = true;
option optimize_for = SPEED;
option go_package = "example.com/shop";
message Order {
  option deprecated = true;
  enum Status {
    option allow_alias = true;
    NEW = 0; OPEN = 0; DONE = 2 [deprecated = true];
    reserved 5 to 7, 9, 100 to max; reserved "OLD";
  }
  required string id = 1 [default = "a\\"b\\n\\u00e9"];
  optional bytes blob = 2 [default = "\\001\\377"];
  repeated int32 nums = 3 [packed = true];
  map<string, Order> children = 4;
  oneof choice { string a = 5; int64 b = 6; }
  optional group Extra = 7 { optional int32 x = 1; }
  optional google.protobuf.Timestamp at = 8 [json_name = "when"];
  optional Status status = 9 [default = OPEN];
  optional double d = 10 [default = -inf, deprecated = true];
  reserved 20 to 30, 500 to max;
  reserved "gone";
  extensions 100 to 199;
  extend Order { optional int32 nested_ext = 150; }
}
extend Order { repeated string ext = 100; }
service Shop {
  option deprecated = true;
  rpc Get(Order) returns (stream Order);
  rpc Put(stream Order) returns (Order) { option idempotency_level = IDEMPOTENT; }
}
"""


def test_a_file_using_every_construct_round_trips() -> None:
    text = round_trip(compile_proto(EVERYTHING, "shop.proto", [], []))
    assert 'import public "google/protobuf/duration.proto";' in text
    assert "  optional group Extra = 7 {\n    optional int32 x = 1;\n  }" in text
    assert "  map<string, .shop.v1.Order> children = 4;" in text
    assert "rpc Put(stream .shop.v1.Order) returns (.shop.v1.Order) {" in text


def test_proto3_optional_and_oneofs() -> None:
    text = round_trip(
        compile_proto(
            'syntax = "proto3";\nmessage M { optional int32 a = 1; oneof o { bool c = 2; } }',
            "m.proto",
            [],
            [],
        )
    )
    assert text == (
        'syntax = "proto3";\n\nmessage M {\n  optional int32 a = 1;\n'
        "  oneof o {\n    bool c = 2;\n  }\n}\n"
    )


def test_editions_files_are_refused() -> None:
    file = descriptor_pb2.FileDescriptorProto(name="e.proto", syntax="editions")
    with pytest.raises(InvalidSchemaError, match="editions"):
        render_proto(file)
