"""Avro schemas, parsed and checked for compatibility by the Apache ``avro`` package (its
``ReaderWriterCompatibilityChecker`` follows the Avro specification's schema resolution, as
Confluent's registry does through the Java library)."""

from __future__ import annotations

import json
from collections.abc import Sequence
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
