"""Avro schemas, parsed and checked for compatibility by the Apache ``avro`` package (its
``ReaderWriterCompatibilityChecker`` follows the Avro specification's schema resolution, as
Confluent's registry does through the Java library). Field defaults are checked, as Java
Avro's parser does, only when ``schema.providers.avro.validate.defaults`` asks for it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import avro.errors
import avro.name
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from strom.registry.schema_types import (
    Dependency,
    InvalidSchemaError,
    ParsedSchema,
    SchemaType,
)

__all__ = ["AvroSchema"]


def _compact(value: Any, *, sort_keys: bool = False) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=sort_keys, ensure_ascii=False)


class AvroSchema(ParsedSchema):
    """An Avro schema; its named types may come from referenced schemas."""

    schema_type = SchemaType.AVRO

    def __init__(self, text: str, dependencies: Sequence[Dependency] = ()) -> None:
        names = avro.name.Names()
        try:
            for dependency in dependencies:
                avro.schema.make_avsc_object(json.loads(dependency.text), names)
            self._known = dict(names.names)
            self._json = json.loads(text)
            self.schema = avro.schema.make_avsc_object(self._json, names)
        except (ValueError, TypeError, AttributeError, avro.errors.AvroException) as error:
            raise InvalidSchemaError(str(error) or type(error).__name__) from error

    @property
    def canonical(self) -> str:
        return _compact(self._json)

    def normalized(self) -> str:
        names = avro.name.Names()
        names.names.update(self._known)
        return _compact(self.schema.to_json(names), sort_keys=True)

    def default_errors(self) -> list[str]:
        top = self.schema
        name = top.fullname if isinstance(top, avro.schema.NamedSchema) else top.type
        return [
            f"Invalid default for field {where}: {_compact(field.default)}"
            f" not a {_compact(field.type.to_json())}"
            for where, field in _fields_with_defaults(top, name, set())
            if not _valid_default(field.type, field.default)
        ]

    def read_errors(self, writer: ParsedSchema) -> list[str]:
        if not isinstance(writer, AvroSchema):
            return [f"reader is AVRO, writer is {writer.schema_type}"]
        checker = ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]
        result = checker.get_compatibility(self.schema, writer.schema)
        if result.compatibility is SchemaCompatibilityType.compatible:
            return []
        kinds = [kind.name for kind in result.incompatibilities] or ["incompatible"]
        messages = sorted(result.messages)
        locations = sorted(result.locations)
        return [
            f"{{errorType:'{kind.upper()}', description:'{message}', "
            f"additionalInfo:'{', '.join(locations)}'}}"
            for kind, message in zip(kinds, messages or [""] * len(kinds), strict=False)
        ]


def _fields_with_defaults(
    schema: avro.schema.Schema, where: str, seen: set[int]
) -> Iterator[tuple[str, avro.schema.Field]]:
    """Every field with a default, in ``schema`` and the types it names, each type once."""
    if id(schema) in seen:
        return
    seen.add(id(schema))
    if isinstance(schema, avro.schema.RecordSchema):
        for field in schema.fields:
            if field.has_default:
                yield f"{where}.{field.name}", field
            yield from _fields_with_defaults(field.type, f"{where}.{field.name}", seen)
    elif isinstance(schema, avro.schema.UnionSchema):
        for branch in schema.schemas:
            yield from _fields_with_defaults(branch, where, seen)
    elif isinstance(schema, avro.schema.ArraySchema):
        yield from _fields_with_defaults(schema.items, where, seen)
    elif isinstance(schema, avro.schema.MapSchema):
        yield from _fields_with_defaults(schema.values, where, seen)


def _valid_default(schema: avro.schema.Schema, value: Any) -> bool:
    """Java Avro's ``Schema.isValidDefault``, which Confluent's registry applies: a union
    takes a value any branch takes; a record, an object whose fields (or their defaults) fit."""
    kind = schema.type
    if isinstance(schema, avro.schema.UnionSchema):
        return any(_valid_default(branch, value) for branch in schema.schemas)
    if kind in ("string", "bytes", "enum", "fixed"):
        return isinstance(value, str)
    if kind in ("int", "long"):
        bits = 31 if kind == "int" else 63
        return type(value) is int and -(1 << bits) <= value < (1 << bits)
    if kind in ("float", "double"):
        return type(value) in (int, float)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if isinstance(schema, avro.schema.ArraySchema):
        return isinstance(value, list) and all(_valid_default(schema.items, v) for v in value)
    if isinstance(schema, avro.schema.MapSchema):
        return isinstance(value, dict) and all(
            _valid_default(schema.values, v) for v in value.values()
        )
    if isinstance(schema, avro.schema.RecordSchema):
        return isinstance(value, dict) and all(
            _valid_default(field.type, value[field.name])
            if field.name in value
            else field.has_default and _valid_default(field.type, field.default)
            for field in schema.fields
        )
    return False
