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
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
import referencing
import referencing.exceptions
import referencing.jsonschema
from referencing._core import Resolved, Resolver  # as referencing.jsonschema imports them

from strom.registry.schema_types import (
    Dependency,
    InvalidSchemaError,
    ParsedSchema,
    SchemaType,
)

__all__ = ["JsonSchema", "References"]

_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_ALL_TYPES = frozenset({"null", "boolean", "object", "array", "number", "integer", "string"})
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})  # values, not schemas


@dataclass(frozen=True)
class References:
    """Where a document's ``$ref``s lead: its own parts, and the referenced schemas, found by
    their reference name (a ``$ref`` equal to a name is that schema, as in Confluent's
    registry) or by the URI their ``$id`` gives, relative to the document's base."""

    registry: referencing.Registry[Any]
    base: str
    specification: referencing.Specification[Any]

    @classmethod
    def of(cls, document: Any, dependencies: Sequence[tuple[str, Any]]) -> References:
        dialect = document.get("$schema", "") if isinstance(document, dict) else ""
        specification = referencing.jsonschema.specification_with(
            dialect, default=referencing.jsonschema.DRAFT202012
        )
        root = referencing.Resource.from_contents(document, default_specification=specification)
        base = root.id() or ""
        resources: list[tuple[str, referencing.Resource[Any]]] = []
        for name, contents in dependencies:
            resource = referencing.Resource.from_contents(
                contents, default_specification=specification
            )
            uris = {name, urljoin(base, name), resource.id() or name}
            resources += [(uri, resource) for uri in sorted(uris)]
        registry = referencing.Registry().with_resources([*resources, (base, root)]).crawl()
        return cls(registry, base, specification)

    def resolver(self) -> Resolver[Any]:
        return self.registry.resolver(base_uri=self.base)

    def lookup(self, resolver: Resolver[Any], ref: str) -> Resolved[Any]:
        """``ref`` from where ``resolver`` stands, else as a reference name as it is."""
        try:
            return resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            if ref.startswith("#"):
                raise
            return self.registry.resolver().lookup(ref)

    def enter(self, schema: Any, resolver: Resolver[Any]) -> Resolver[Any]:
        """The resolver inside ``schema``, which may set a base of its own (``$id``)."""
        if isinstance(schema, dict) and self.specification.id_of(schema):
            return resolver.in_subresource(self.specification.create_resource(schema))
        return resolver

    def check(self, schema: Any, resolver: Resolver[Any]) -> None:
        """Every ``$ref`` under ``schema`` resolves; ``InvalidSchemaError`` names one that
        does not."""
        resolver = self.enter(schema, resolver)
        if isinstance(schema, dict):
            ref = schema.get("$ref")
            if isinstance(ref, str):
                try:
                    self.lookup(resolver, ref)
                except referencing.exceptions.Unresolvable as error:
                    raise InvalidSchemaError(
                        f"$ref {ref!r} resolves to nothing: not in the schema, nor a reference"
                    ) from error
            children = [v for k, v in schema.items() if k not in _DATA_KEYWORDS]
        else:
            children = schema if isinstance(schema, list) else []
        for child in children:
            self.check(child, resolver)


class JsonSchema(ParsedSchema):
    """A JSON Schema document (an object or a boolean); its ``$ref``s may name referenced
    schemas."""

    schema_type = SchemaType.JSON

    def __init__(self, text: str, dependencies: Sequence[Dependency] = ()) -> None:
        try:
            self.document: Any = json.loads(text)
            referenced = [(d.name, json.loads(d.text)) for d in dependencies]
        except ValueError as error:
            raise InvalidSchemaError(f"not JSON: {error}") from error
        if not isinstance(self.document, dict | bool):
            raise InvalidSchemaError("a JSON Schema is an object or a boolean")
        try:
            validator = jsonschema.validators.validator_for(self.document)
            validator.check_schema(self.document)  # type: ignore[arg-type]
            self.references = References.of(self.document, referenced)
        except (jsonschema.exceptions.SchemaError, referencing.exceptions.Unresolvable) as error:
            raise InvalidSchemaError(str(error).splitlines()[0]) from error
        for document in [self.document, *(contents for _, contents in referenced)]:
            self.references.check(document, self.references.resolver())

    @property
    def canonical(self) -> str:
        return json.dumps(self.document, separators=(",", ":"), ensure_ascii=False)

    def normalized(self) -> str:
        return json.dumps(self.document, separators=(",", ":"), sort_keys=True, ensure_ascii=False)

    def read_errors(self, writer: ParsedSchema) -> list[str]:
        if not isinstance(writer, JsonSchema):
            return [f"reader is JSON, writer is {writer.schema_type}"]
        diff = _Diff(self.references, writer.references)
        start = _Scope(self.references.resolver(), writer.references.resolver())
        return list(diff.errors(self.document, writer.document, start))


def _is_empty(schema: Any) -> bool:
    return schema is True or schema == {}


def _types(schema: dict[str, Any]) -> frozenset[str]:
    declared = schema.get("type")
    if declared is None:
        return _ALL_TYPES
    return frozenset([declared] if isinstance(declared, str) else declared)


def _is_open(schema: dict[str, Any]) -> bool:
    return _is_empty(schema.get("additionalProperties", True))


@dataclass(frozen=True)
class _Scope:
    """Where the reader's and the writer's ``$ref``s resolve from, at one point of the walk."""

    reader: Resolver[Any]
    writer: Resolver[Any]


class _Diff:
    """Walks a reader and a writer schema side by side, naming what the reader refuses;
    ``$ref``s are followed on either side, into referenced schemas too."""

    def __init__(self, reader: References, writer: References) -> None:
        self._references = (reader, writer)
        self._seen: set[tuple[int, int]] = set()

    def _resolve(
        self, schema: Any, resolver: Resolver[Any], references: References
    ) -> tuple[Any, Resolver[Any]]:
        resolver = references.enter(schema, resolver)
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            resolved = references.lookup(resolver, schema["$ref"])
            schema, resolver = (
                resolved.contents,
                references.enter(resolved.contents, resolved.resolver),
            )
        return schema, resolver

    def errors(self, reader: Any, writer: Any, scope: _Scope, path: str = "#") -> Iterator[str]:
        reader, reader_resolver = self._resolve(reader, scope.reader, self._references[0])
        writer, writer_resolver = self._resolve(writer, scope.writer, self._references[1])
        scope = _Scope(reader_resolver, writer_resolver)
        key = (id(reader), id(writer))
        if key in self._seen or _is_empty(reader) or writer is False:
            return
        self._seen.add(key)
        if reader is False or _is_empty(writer):
            yield f"{path}: SCHEMA_ADDED (the reader accepts fewer documents)"
            return
        yield from self._combined(reader, writer, scope, path)
        yield from self._scalars(reader, writer, path)
        yield from self._objects(reader, writer, scope, path)
        yield from self._arrays(reader, writer, scope, path)

    def _combined(
        self, reader: dict[str, Any], writer: dict[str, Any], scope: _Scope, path: str
    ) -> Iterator[str]:
        for keyword in ("anyOf", "oneOf"):
            if keyword not in reader:
                continue
            branches = writer.get(keyword) or writer.get("anyOf") or writer.get("oneOf") or [writer]
            for index, branch in enumerate(branches):
                if not any(
                    not list(_Diff(*self._references).errors(option, branch, scope))
                    for option in reader[keyword]
                ):
                    yield f"{path}/{keyword}/{index}: COMBINED_TYPE_SUBSCHEMAS_CHANGED"
        for index, part in enumerate(reader.get("allOf", ())):
            yield from self.errors(part, writer, scope, f"{path}/allOf/{index}")
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

    def _objects(
        self, reader: dict[str, Any], writer: dict[str, Any], scope: _Scope, path: str
    ) -> Iterator[str]:
        reader_props: dict[str, Any] = reader.get("properties", {})
        writer_props: dict[str, Any] = writer.get("properties", {})
        reader_extra = reader.get("additionalProperties", True)
        writer_extra = writer.get("additionalProperties", True)
        for name in sorted(reader_props.keys() | writer_props.keys()):
            where = f"{path}/properties/{name}"
            if name in reader_props and name in writer_props:
                yield from self.errors(reader_props[name], writer_props[name], scope, where)
            elif name in writer_props:  # removed by the reader
                if reader_extra is False:
                    yield f"{where}: PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"
                elif not _is_empty(reader_extra):
                    yield from self.errors(reader_extra, writer_props[name], scope, where)
            elif _is_open(writer):  # added by the reader to an open model
                yield f"{where}: PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
            elif writer_extra is not False:
                yield from self.errors(reader_props[name], writer_extra, scope, where)
        for name in sorted(set(reader.get("required", ())) - set(writer.get("required", ()))):
            yield f"{path}/required/{name}: REQUIRED_ATTRIBUTE_ADDED"
        if reader_extra is False and writer_extra is not False:
            yield f"{path}/additionalProperties: ADDITIONAL_PROPERTIES_REMOVED"
        elif (
            not _is_empty(reader_extra) and reader_extra is not False and writer_extra is not False
        ):
            yield from self.errors(
                reader_extra, writer_extra, scope, f"{path}/additionalProperties"
            )

    def _arrays(
        self, reader: dict[str, Any], writer: dict[str, Any], scope: _Scope, path: str
    ) -> Iterator[str]:
        reader_items, writer_items = reader.get("items", True), writer.get("items", True)
        if isinstance(reader_items, dict | bool) and isinstance(writer_items, dict | bool):
            yield from self.errors(reader_items, writer_items, scope, f"{path}/items")
        elif isinstance(reader_items, list) and isinstance(writer_items, list):
            for index, (mine, theirs) in enumerate(zip(reader_items, writer_items, strict=False)):
                yield from self.errors(mine, theirs, scope, f"{path}/items/{index}")
            if len(reader_items) > len(writer_items):
                yield f"{path}/items: ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
        else:
            yield f"{path}/items: ITEMS_CHANGED"
