"""JSON Schema: parsed and validated as a schema by ``jsonschema`` (drafts 4 to 2020-12), and
checked for compatibility by the rules of Confluent's JSON Schema checker, which no Python
library offers: a reader is compatible when it accepts every document the writer accepts.

The rules that surprise newcomers are Confluent's: adding a property to an *open* content model
(``additionalProperties`` absent or true) is incompatible, because old documents may already
carry that property with any value; removing one from a *closed* model is incompatible too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from strom.registry.schema_types import (
    Dependency,
    InvalidSchemaError,
    ParsedSchema,
    SchemaType,
)

__all__ = ["JsonSchema"]

_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_ALL_TYPES = frozenset({"null", "boolean", "object", "array", "number", "integer", "string"})


class JsonSchema(ParsedSchema):
    """A JSON Schema document (an object or a boolean)."""

    schema_type = SchemaType.JSON

    def __init__(self, text: str, dependencies: Sequence[Dependency] = ()) -> None:
        try:
            self.document: Any = json.loads(text)
        except ValueError as error:
            raise InvalidSchemaError(f"not JSON: {error}") from error
        if not isinstance(self.document, dict | bool):
            raise InvalidSchemaError("a JSON Schema is an object or a boolean")
        try:
            validator = jsonschema.validators.validator_for(self.document)
            validator.check_schema(self.document)  # type: ignore[arg-type]
            for dependency in dependencies:
                json.loads(dependency.text)
        except (jsonschema.exceptions.SchemaError, ValueError) as error:
            raise InvalidSchemaError(str(error).splitlines()[0]) from error

    @property
    def canonical(self) -> str:
        return json.dumps(self.document, separators=(",", ":"), ensure_ascii=False)

    def normalized(self) -> str:
        return json.dumps(self.document, separators=(",", ":"), sort_keys=True, ensure_ascii=False)

    def read_errors(self, writer: ParsedSchema) -> list[str]:
        if not isinstance(writer, JsonSchema):
            return [f"reader is JSON, writer is {writer.schema_type}"]
        return list(_Diff(self.document, writer.document).errors(self.document, writer.document))


def _is_empty(schema: Any) -> bool:
    return schema is True or schema == {}


def _types(schema: dict[str, Any]) -> frozenset[str]:
    declared = schema.get("type")
    if declared is None:
        return _ALL_TYPES
    return frozenset([declared] if isinstance(declared, str) else declared)


def _is_open(schema: dict[str, Any]) -> bool:
    return _is_empty(schema.get("additionalProperties", True))


class _Diff:
    """Walks a reader and a writer schema side by side, naming what the reader refuses."""

    def __init__(self, reader_root: Any, writer_root: Any) -> None:
        self._roots = (reader_root, writer_root)
        self._seen: set[tuple[int, int]] = set()

    def _resolve(self, schema: Any, root: Any) -> Any:
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            ref: str = schema["$ref"]
            if not ref.startswith("#"):
                return schema
            target = root
            for part in filter(None, ref[1:].split("/")):
                target = target.get(part.replace("~1", "/").replace("~0", "~"), {})
            schema = target
        return schema

    def errors(self, reader: Any, writer: Any, path: str = "#") -> Iterator[str]:
        reader = self._resolve(reader, self._roots[0])
        writer = self._resolve(writer, self._roots[1])
        key = (id(reader), id(writer))
        if key in self._seen or _is_empty(reader) or writer is False:
            return
        self._seen.add(key)
        if reader is False or _is_empty(writer):
            yield f"{path}: SCHEMA_ADDED (the reader accepts fewer documents)"
            return
        yield from self._combined(reader, writer, path)
        yield from self._scalars(reader, writer, path)
        yield from self._objects(reader, writer, path)
        yield from self._arrays(reader, writer, path)

    def _combined(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> Iterator[str]:
        for keyword in ("anyOf", "oneOf"):
            if keyword not in reader:
                continue
            branches = writer.get(keyword) or writer.get("anyOf") or writer.get("oneOf") or [writer]
            for index, branch in enumerate(branches):
                if not any(
                    not list(_Diff(*self._roots).errors(option, branch))
                    for option in reader[keyword]
                ):
                    yield f"{path}/{keyword}/{index}: COMBINED_TYPE_SUBSCHEMAS_CHANGED"
        for index, part in enumerate(reader.get("allOf", ())):
            yield from self.errors(part, writer, f"{path}/allOf/{index}")
        if "not" in reader and reader["not"] != writer.get("not"):
            yield f"{path}/not: NOT_TYPE_EXTENDED"

    def _scalars(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> Iterator[str]:
        reader_types, writer_types = _types(reader), _types(writer)
        if "number" in reader_types:
            reader_types |= {"integer"}
        if not writer_types <= reader_types:
            yield f"{path}/type: TYPE_NARROWED {sorted(writer_types - reader_types)}"
        for keyword in ("enum", "const"):
            if keyword not in reader:
                continue
            allowed = reader[keyword] if keyword == "enum" else [reader[keyword]]
            written = writer.get("enum", [writer["const"]] if "const" in writer else None)
            if written is None or any(value not in allowed for value in written):
                yield f"{path}/{keyword}: ENUM_ARRAY_NARROWED"
        for keyword in _LOWER_BOUNDS:
            if keyword in reader and not reader[keyword] <= writer.get(keyword, float("-inf")):
                yield f"{path}/{keyword}: {keyword.upper()}_INCREASED"
        for keyword in _UPPER_BOUNDS:
            if keyword in reader and not reader[keyword] >= writer.get(keyword, float("inf")):
                yield f"{path}/{keyword}: {keyword.upper()}_DECREASED"
        if "multipleOf" in reader:
            written_step = writer.get("multipleOf")
            if written_step is None or written_step % reader["multipleOf"]:
                yield f"{path}/multipleOf: MULTIPLE_OF_CHANGED"
        for keyword in ("pattern", "format"):
            if keyword in reader and reader[keyword] != writer.get(keyword):
                yield f"{path}/{keyword}: {keyword.upper()}_CHANGED"
        if reader.get("uniqueItems") and not writer.get("uniqueItems"):
            yield f"{path}/uniqueItems: UNIQUE_ITEMS_ADDED"

    def _objects(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> Iterator[str]:
        reader_props: dict[str, Any] = reader.get("properties", {})
        writer_props: dict[str, Any] = writer.get("properties", {})
        reader_extra = reader.get("additionalProperties", True)
        writer_extra = writer.get("additionalProperties", True)
        for name in sorted(reader_props.keys() | writer_props.keys()):
            where = f"{path}/properties/{name}"
            if name in reader_props and name in writer_props:
                yield from self.errors(reader_props[name], writer_props[name], where)
            elif name in writer_props:  # removed by the reader
                if reader_extra is False:
                    yield f"{where}: PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"
                elif not _is_empty(reader_extra):
                    yield from self.errors(reader_extra, writer_props[name], where)
            elif _is_open(writer):  # added by the reader to an open model
                yield f"{where}: PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
            elif writer_extra is not False:
                yield from self.errors(reader_props[name], writer_extra, where)
        for name in sorted(set(reader.get("required", ())) - set(writer.get("required", ()))):
            yield f"{path}/required/{name}: REQUIRED_ATTRIBUTE_ADDED"
        if reader_extra is False and writer_extra is not False:
            yield f"{path}/additionalProperties: ADDITIONAL_PROPERTIES_REMOVED"
        elif (
            not _is_empty(reader_extra) and reader_extra is not False and writer_extra is not False
        ):
            yield from self.errors(reader_extra, writer_extra, f"{path}/additionalProperties")

    def _arrays(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> Iterator[str]:
        reader_items, writer_items = reader.get("items", True), writer.get("items", True)
        if isinstance(reader_items, dict | bool) and isinstance(writer_items, dict | bool):
            yield from self.errors(reader_items, writer_items, f"{path}/items")
        elif isinstance(reader_items, list) and isinstance(writer_items, list):
            for index, (mine, theirs) in enumerate(zip(reader_items, writer_items, strict=False)):
                yield from self.errors(mine, theirs, f"{path}/items/{index}")
            if len(reader_items) > len(writer_items):
                yield f"{path}/items: ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
        else:
            yield f"{path}/items: ITEMS_CHANGED"
