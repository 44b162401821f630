"""Protobuf schemas, as ``.proto`` text (compiled by ``proto_text``) or in the form Confluent's
Python serializers register them: a ``FileDescriptorProto``, serialized and base64-encoded
(``format=serialized``). ``protobuf``'s descriptor pool checks that the file and its imports
(references, or the well-known types every pool knows) resolve. Either form is stored and
served as the ``.proto`` text ``proto_render`` writes from the descriptor, so the two forms of
one schema are one schema, with one id.

Compatibility follows Confluent's Protobuf rules, which are about the wire: fields are matched
by number; a field may change type only within its wire-type group, and between singular and
repeated only when length-delimited; a message the writer used must still exist; the package and
oneof membership must not change; required fields may be neither added nor removed.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Sequence

from confluent_kafka.schema_registry.confluent import meta_pb2
from confluent_kafka.schema_registry.confluent.type import decimal_pb2
from google.protobuf import (  # the well-known files, registered in the default pool
    any_pb2,  # noqa: F401
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,  # noqa: F401
    empty_pb2,  # noqa: F401
    field_mask_pb2,  # noqa: F401
    struct_pb2,  # noqa: F401
    timestamp_pb2,  # noqa: F401
    wrappers_pb2,  # noqa: F401
)
from google.protobuf.message import DecodeError
from google.type import date_pb2, timeofday_pb2  # type: ignore[import-untyped]

from strom.registry.proto_render import render_proto
from strom.registry.proto_text import compile_proto
from strom.registry.schema_types import (
    Dependency,
    InvalidSchemaError,
    ParsedSchema,
    SchemaType,
)

__all__ = ["ProtobufSchema", "decode_file", "file_set", "is_serialized"]

_Field = descriptor_pb2.FieldDescriptorProto  # a class: usable as a type
_GROUPS: dict[int, str] = {
    **dict.fromkeys(
        (_Field.TYPE_INT32, _Field.TYPE_UINT32, _Field.TYPE_INT64, _Field.TYPE_UINT64),
        "varint",
    ),
    _Field.TYPE_BOOL: "varint",
    _Field.TYPE_ENUM: "varint",
    _Field.TYPE_SINT32: "zigzag",
    _Field.TYPE_SINT64: "zigzag",
    _Field.TYPE_FIXED32: "fixed32",
    _Field.TYPE_SFIXED32: "fixed32",
    _Field.TYPE_FIXED64: "fixed64",
    _Field.TYPE_SFIXED64: "fixed64",
    _Field.TYPE_STRING: "length",
    _Field.TYPE_BYTES: "length",
}
_LENGTH_DELIMITED = frozenset({_Field.TYPE_STRING, _Field.TYPE_BYTES, _Field.TYPE_MESSAGE})
_CONFLUENT_KNOWN = tuple(
    descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
    for module in (meta_pb2, decimal_pb2, date_pb2, timeofday_pb2)
)
"""The imports Confluent's registry knows beside protobuf's own (its ``confluent/meta.proto``
and ``confluent/type/decimal.proto``, and the ``google/type`` files its ProtobufConverter
uses for Date and Time), as every schema's compile may name them."""


def is_serialized(text: str) -> bool:
    """Whether a schema text is a base64 descriptor rather than ``.proto`` text."""
    try:
        base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def decode_file(text: str, name: str) -> descriptor_pb2.FileDescriptorProto:
    """The ``FileDescriptorProto`` of a base64 text, named ``name`` if it has no name."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
        proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (binascii.Error, DecodeError, ValueError) as error:
        raise InvalidSchemaError(
            "a Protobuf schema is a base64-encoded FileDescriptorProto (format=serialized)"
        ) from error
    if not proto.name:
        proto.name = name
    return proto


def _messages(
    prefix: str, messages: Sequence[descriptor_pb2.DescriptorProto]
) -> Iterator[tuple[str, descriptor_pb2.DescriptorProto]]:
    for message in messages:
        full_name = f"{prefix}.{message.name}" if prefix else message.name
        yield full_name, message
        yield from _messages(full_name, message.nested_type)


class ProtobufSchema(ParsedSchema):
    """A ``.proto`` file as a ``FileDescriptorProto``."""

    schema_type = SchemaType.PROTOBUF

    def __init__(self, text: str, dependencies: Sequence[Dependency] = ()) -> None:
        serialized = [d for d in dependencies if is_serialized(d.text)]
        imports = [decode_file(d.text, d.name) for d in serialized]
        if is_serialized(text):
            self.file = decode_file(text, "schema.proto")
        else:
            texts = [(d.name, d.text) for d in dependencies if d not in serialized]
            self.file = compile_proto(text, "schema.proto", texts, [*_CONFLUENT_KNOWN, *imports])
        pool = descriptor_pool.DescriptorPool()
        known = {"google/protobuf/descriptor.proto"}
        try:
            for dependency in dependencies:
                if dependency in serialized:
                    pool.Add(decode_file(dependency.text, dependency.name))
                else:
                    pool.Add(compile_proto(dependency.text, dependency.name, [], []))
                known.add(dependency.name)
            for imported in self.file.dependency:
                if imported not in known:
                    _add_well_known(pool, imported)
            pool.Add(self.file)
            pool.FindFileByName(self.file.name)
        except (TypeError, KeyError) as error:
            raise InvalidSchemaError(str(error)) from error
        self.messages = dict(_messages(self.file.package, self.file.message_type))
        self._text = render_proto(self.file)

    @property
    def canonical(self) -> str:
        """The ``.proto`` text written from the descriptor, whichever form was registered
        (Confluent's registry serves every Protobuf schema as ``.proto`` text)."""
        return self._text

    def normalized(self) -> str:
        return self._text

    def serialized(self) -> str:
        """The schema as ``format=serialized`` shows it: the base64 descriptor."""
        return base64.b64encode(self.file.SerializeToString(deterministic=True)).decode()

    def read_errors(self, writer: ParsedSchema) -> list[str]:
        if not isinstance(writer, ProtobufSchema):
            return [f"reader is PROTOBUF, writer is {writer.schema_type}"]
        errors: list[str] = []
        if self.file.package != writer.file.package:
            errors.append(f"PACKAGE_CHANGED: {writer.file.package} -> {self.file.package}")
        for name, written in writer.messages.items():
            read = self.messages.get(name)
            if read is None:
                errors.append(f"#/{name}: MESSAGE_REMOVED")
            else:
                errors.extend(_message_errors(name, read, written))
        return errors


def _oneof(message: descriptor_pb2.DescriptorProto, field: _Field) -> str | None:
    if not field.HasField("oneof_index") or field.proto3_optional:
        return None
    return message.oneof_decl[field.oneof_index].name


def _message_errors(
    name: str, reader: descriptor_pb2.DescriptorProto, writer: descriptor_pb2.DescriptorProto
) -> Iterator[str]:
    read_fields = {field.number: field for field in reader.field}
    written_fields = {field.number: field for field in writer.field}
    for number in sorted(read_fields.keys() | written_fields.keys()):
        where = f"#/{name}/{number}"
        read, written = read_fields.get(number), written_fields.get(number)
        if read is None or written is None:
            present = read or written
            assert present is not None
            if present.label == _Field.LABEL_REQUIRED:
                yield f"{where}: REQUIRED_FIELD_{'ADDED' if written is None else 'REMOVED'}"
            if written is not None and _oneof(writer, written) is not None:
                yield f"{where}: ONEOF_FIELD_REMOVED"
            continue
        if read.type != written.type and (
            read.type not in _GROUPS or _GROUPS.get(read.type) != _GROUPS.get(written.type)
        ):
            yield f"{where}: FIELD_SCALAR_KIND_CHANGED"
        elif read.type == _Field.TYPE_MESSAGE and read.type_name != written.type_name:
            yield f"{where}: FIELD_NAMED_TYPE_CHANGED"
        repeated = (read.label == _Field.LABEL_REPEATED, written.label == _Field.LABEL_REPEATED)
        if repeated[0] != repeated[1] and read.type not in _LENGTH_DELIMITED:
            yield f"{where}: FIELD_KIND_CHANGED"
        if read.label == _Field.LABEL_REQUIRED and written.label != _Field.LABEL_REQUIRED:
            yield f"{where}: REQUIRED_FIELD_ADDED"
        if _oneof(reader, read) != _oneof(writer, written) and _oneof(reader, read) is not None:
            yield f"{where}: FIELD_MOVED_TO_EXISTING_ONEOF"


def file_set(text: str) -> descriptor_pb2.FileDescriptorSet:
    """A ``.proto`` text's descriptor after those of its well-known imports (each import before
    what imports it): what a pool of its own, or another language's, builds the file from."""
    out = descriptor_pb2.FileDescriptorSet()
    added: set[str] = set()

    def add(name: str) -> None:
        if name in added:
            return
        found = descriptor_pool.Default().FindFileByName(name)
        for imported in found.dependencies:
            add(imported.name)
        found.CopyToProto(out.file.add())
        added.add(name)

    main = ProtobufSchema(text).file
    for imported in main.dependency:
        add(imported)
    out.file.append(main)
    return out


def _add_well_known(pool: descriptor_pool.DescriptorPool, name: str) -> None:
    """Add a well-known import (google/protobuf/*, google/type/*) the way every pool has it."""
    default = descriptor_pool.Default()
    try:
        found = default.FindFileByName(name)
    except KeyError as error:
        raise InvalidSchemaError(f"import {name!r} is neither a reference nor known") from error
    for imported in found.dependencies:
        _add_well_known(pool, imported.name)
    proto = descriptor_pb2.FileDescriptorProto()
    found.CopyToProto(proto)
    try:
        pool.Add(proto)
    except TypeError:
        return
