"""``parse_schema``: the one entry from a schema type's name and text to a ``ParsedSchema``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from strom.registry.avro_schema import AvroSchema
from strom.registry.json_schema import JsonSchema
from strom.registry.protobuf_schema import ProtobufSchema
from strom.registry.schema_types import Dependency, ParsedSchema, SchemaType

__all__ = ["parse_schema"]

_PARSERS: dict[SchemaType, Callable[[str, Sequence[Dependency]], ParsedSchema]] = {
    SchemaType.AVRO: AvroSchema,
    SchemaType.JSON: JsonSchema,
    SchemaType.PROTOBUF: ProtobufSchema,
}


def parse_schema(
    schema_type: SchemaType, text: str, dependencies: Sequence[Dependency] = ()
) -> ParsedSchema:
    """Parse ``text`` as a schema of ``schema_type``, given its references' texts; raises
    ``InvalidSchemaError``."""
    return _PARSERS[schema_type](text, dependencies)
