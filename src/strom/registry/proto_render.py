"""A ``FileDescriptorProto`` written back as ``.proto`` text, which is how Confluent's registry
serves every Protobuf schema, whichever form was registered: syntax, package, imports, options,
messages (nested messages and enums, fields with their labels, numbers and options, oneofs,
proto3 ``optional``, maps, proto2 groups and defaults, reserved numbers and names, extension
ranges), enums, services and extensions. Type names are written fully qualified (``.pkg.Msg``),
so the text means the same wherever it is read. Custom options whose extension the descriptor
pool does not know are not written; editions files are refused."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from google.protobuf import descriptor_pb2, text_encoding, text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from strom.registry.schema_types import InvalidSchemaError

__all__ = ["render_proto"]

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    _F.TYPE_DOUBLE: "double",
    _F.TYPE_FLOAT: "float",
    _F.TYPE_INT64: "int64",
    _F.TYPE_UINT64: "uint64",
    _F.TYPE_INT32: "int32",
    _F.TYPE_FIXED64: "fixed64",
    _F.TYPE_FIXED32: "fixed32",
    _F.TYPE_BOOL: "bool",
    _F.TYPE_STRING: "string",
    _F.TYPE_BYTES: "bytes",
    _F.TYPE_UINT32: "uint32",
    _F.TYPE_SFIXED32: "sfixed32",
    _F.TYPE_SFIXED64: "sfixed64",
    _F.TYPE_SINT32: "sint32",
    _F.TYPE_SINT64: "sint64",
}
_FIELD_MAX = 1 << 29  # message field numbers end below this (exclusive ranges)
_ENUM_MAX = (1 << 31) - 1  # enum reserved ranges are inclusive
_SKIPPED_OPTIONS = frozenset({"uninterpreted_option", "features", "map_entry"})
_INDENT = "  "


def render_proto(file: descriptor_pb2.FileDescriptorProto) -> str:
    """The ``.proto`` text of ``file``; ``InvalidSchemaError`` for an editions file."""
    if file.syntax not in ("", "proto2", "proto3"):
        raise InvalidSchemaError(f"Protobuf {file.syntax} files are not supported")
    proto3 = file.syntax == "proto3"
    head = [f'syntax = "{file.syntax or "proto2"}";']
    if file.package:
        head.append(f"package {file.package};")
    kinds = dict.fromkeys(file.public_dependency, "public ")
    kinds.update(dict.fromkeys(file.weak_dependency, "weak "))
    imports = [f'import {kinds.get(i, "")}"{name}";' for i, name in enumerate(file.dependency)]
    options = [f"option {item};" for item in _options(file.options)]
    blocks = [
        "\n".join(part)
        for part in (head, imports, options)
        if part  # one paragraph each
    ]
    blocks += ["\n".join(_message(m, proto3, 0)) for m in file.message_type]
    blocks += ["\n".join(_enum(e, 0)) for e in file.enum_type]
    blocks += ["\n".join(_service(s)) for s in file.service]
    blocks += ["\n".join(_extends(file.extension, proto3, 0))] * bool(file.extension)
    return "\n\n".join(blocks) + "\n"


def _literal(field: FieldDescriptor, value: Any) -> str:
    if field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
        return str(field.enum_type.values_by_number[value].name)
    if field.type == FieldDescriptor.TYPE_BOOL:
        return "true" if value else "false"
    if field.type == FieldDescriptor.TYPE_STRING:
        return _quoted(value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return f'"{text_encoding.CEscape(value, as_utf8=False)}"'
    if field.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
        return "{ " + text_format.MessageToString(value, as_one_line=True) + " }"
    return repr(value) if isinstance(value, float) else str(value)


def _quoted(text: str) -> str:
    return f'"{text_encoding.CEscape(text.encode(), as_utf8=True)}"'


def _options(options: Message) -> list[str]:
    """``name = value`` for each option set (custom ones as ``(full.name)``)."""
    items: list[str] = []
    for field, value in options.ListFields():
        if field.name in _SKIPPED_OPTIONS:
            continue
        name = f"({field.full_name})" if field.is_extension else field.name
        repeated = hasattr(value, "__len__") and not isinstance(value, str | bytes | Message)
        items += [f"{name} = {_literal(field, one)}" for one in (value if repeated else [value])]
    return items


def _json_name(name: str) -> str:
    """protoc's default ``json_name``: underscores dropped, the letter after one uppercased."""
    out: list[str] = []
    upper = False
    for char in name:
        if char == "_":
            upper = True
        else:
            out.append(char.upper() if upper else char)
            upper = False
    return "".join(out)


def _default(field: descriptor_pb2.FieldDescriptorProto) -> str:
    if field.type == _F.TYPE_STRING:
        return _quoted(field.default_value)
    if field.type == _F.TYPE_BYTES:
        return f'"{field.default_value}"'  # already C-escaped in the descriptor
    return field.default_value


def _field_options(field: descriptor_pb2.FieldDescriptorProto) -> str:
    items = [f"default = {_default(field)}"] * field.HasField("default_value")
    if field.HasField("json_name") and field.json_name != _json_name(field.name):
        items.append(f"json_name = {_quoted(field.json_name)}")
    items += _options(field.options)
    return f" [{', '.join(items)}]" if items else ""


def _type(field: descriptor_pb2.FieldDescriptorProto) -> str:
    return _SCALARS.get(field.type) or field.type_name


def _label(field: descriptor_pb2.FieldDescriptorProto, proto3: bool) -> str:
    if field.label == _F.LABEL_REPEATED:
        return "repeated "
    if field.label == _F.LABEL_REQUIRED:
        return "required "
    return "optional " if field.proto3_optional or not proto3 else ""


def _field(
    field: descriptor_pb2.FieldDescriptorProto,
    message: descriptor_pb2.DescriptorProto | None,
    proto3: bool,
    depth: int,
    *,
    in_oneof: bool = False,
) -> list[str]:
    pad = _INDENT * depth
    label = "" if in_oneof else _label(field, proto3)
    nested = {n.name: n for n in message.nested_type} if message else {}
    entry = nested.get(field.type_name.rpartition(".")[2])
    if entry is not None and entry.options.map_entry and field.label == _F.LABEL_REPEATED:
        key, value = entry.field[0], entry.field[1]
        kind = f"map<{_type(key)}, {_type(value)}>"
        return [f"{pad}{kind} {field.name} = {field.number}{_field_options(field)};"]
    if field.type == _F.TYPE_GROUP and entry is not None:
        opening = f"{pad}{label}group {entry.name} = {field.number}{_field_options(field)} {{"
        return [opening, *_body(entry, proto3, depth + 1), f"{pad}}}"]
    return [f"{pad}{label}{_type(field)} {field.name} = {field.number}{_field_options(field)};"]


def _ranges(ranges: Iterable[Any], top: int, inclusive: bool) -> str:
    parts: list[str] = []
    for item in ranges:
        last = item.end if inclusive else item.end - 1
        if last == item.start:
            parts.append(str(item.start))
        else:
            parts.append(f"{item.start} to {'max' if last == top - (not inclusive) else last}")
    return ", ".join(parts)


def _reserved(ranges: Iterable[Any], names: Iterable[str], pad: str, *, enum: bool) -> list[str]:
    lines: list[str] = []
    if text := _ranges(ranges, _ENUM_MAX if enum else _FIELD_MAX, inclusive=enum):
        lines.append(f"{pad}reserved {text};")
    if quoted := ", ".join(f'"{name}"' for name in names):
        lines.append(f"{pad}reserved {quoted};")
    return lines


def _body(message: descriptor_pb2.DescriptorProto, proto3: bool, depth: int) -> list[str]:
    """The lines between a message's braces (or a group's)."""
    pad = _INDENT * depth
    lines = [f"{pad}option {item};" for item in _options(message.options)]
    groups = {f.type_name.rpartition(".")[2] for f in message.field if f.type == _F.TYPE_GROUP}
    for enum in message.enum_type:
        lines += _enum(enum, depth)
    for nested in message.nested_type:
        if not nested.options.map_entry and nested.name not in groups:
            lines += _message(nested, proto3, depth)
    real_oneofs = {
        f.oneof_index for f in message.field if f.HasField("oneof_index") and not f.proto3_optional
    }
    done: set[int] = set()
    for field in message.field:
        index = field.oneof_index if field.HasField("oneof_index") else None
        if index is None or index not in real_oneofs:
            lines += _field(field, message, proto3, depth)
        elif index not in done:
            done.add(index)
            oneof = message.oneof_decl[index]
            lines.append(f"{pad}oneof {oneof.name} {{")
            lines += [f"{pad}{_INDENT}option {item};" for item in _options(oneof.options)]
            for member in message.field:
                if member.HasField("oneof_index") and member.oneof_index == index:
                    lines += _field(member, message, proto3, depth + 1, in_oneof=True)
            lines.append(f"{pad}}}")
    lines += _reserved(message.reserved_range, message.reserved_name, pad, enum=False)
    if text := _ranges(message.extension_range, _FIELD_MAX, inclusive=False):
        lines.append(f"{pad}extensions {text};")
    lines += _extends(message.extension, proto3, depth)
    return lines


def _message(message: descriptor_pb2.DescriptorProto, proto3: bool, depth: int) -> list[str]:
    pad = _INDENT * depth
    return [f"{pad}message {message.name} {{", *_body(message, proto3, depth + 1), f"{pad}}}"]


def _enum(enum: descriptor_pb2.EnumDescriptorProto, depth: int) -> list[str]:
    pad, inner = _INDENT * depth, _INDENT * (depth + 1)
    lines = [f"{pad}enum {enum.name} {{"]
    lines += [f"{inner}option {item};" for item in _options(enum.options)]
    for value in enum.value:
        options = _options(value.options)
        shown = f" [{', '.join(options)}]" if options else ""
        lines.append(f"{inner}{value.name} = {value.number}{shown};")
    lines += _reserved(enum.reserved_range, enum.reserved_name, inner, enum=True)
    return [*lines, f"{pad}}}"]


def _service(service: descriptor_pb2.ServiceDescriptorProto) -> Iterator[str]:
    yield f"service {service.name} {{"
    yield from (f"{_INDENT}option {item};" for item in _options(service.options))
    for method in service.method:
        client = "stream " if method.client_streaming else ""
        server = "stream " if method.server_streaming else ""
        head = (
            f"{_INDENT}rpc {method.name}({client}{method.input_type})"
            f" returns ({server}{method.output_type})"
        )
        options = _options(method.options)
        if not options:
            yield f"{head};"
            continue
        yield f"{head} {{"
        yield from (f"{_INDENT * 2}option {item};" for item in options)
        yield f"{_INDENT}}}"
    yield "}"


def _extends(
    extensions: Iterable[descriptor_pb2.FieldDescriptorProto], proto3: bool, depth: int
) -> list[str]:
    pad = _INDENT * depth
    by_extendee: dict[str, list[descriptor_pb2.FieldDescriptorProto]] = {}
    for extension in extensions:
        by_extendee.setdefault(extension.extendee, []).append(extension)
    lines: list[str] = []
    for extendee, fields in by_extendee.items():
        lines.append(f"{pad}extend {extendee} {{")
        for field in fields:
            lines += _field(field, None, proto3, depth + 1)
        lines.append(f"{pad}}}")
    return lines
