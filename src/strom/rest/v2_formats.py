"""The v2 API's embedded formats: ``application/vnd.kafka.{format}.v2+json`` names how keys and
values are written in a request (``binary``: base64, ``json``, or a registry format with the
request's schema) and read back in a consumer's records."""

from __future__ import annotations

import base64
import json
from typing import Final

from strom.registry.codec import RegistryCodec
from strom.rest.errors import RestError

__all__ = ["FORMATS", "V2_JSON", "decode", "format_of", "media_type"]

V2_JSON: Final = "application/vnd.kafka.v2+json"
FORMATS: Final = {
    "binary": "BINARY",
    "json": "JSON",
    "avro": "AVRO",
    "jsonschema": "JSONSCHEMA",
    "protobuf": "PROTOBUF",
}
"""The v2 names of the formats, and the v3 type each is."""


def media_type(fmt: str) -> str:
    return f"application/vnd.kafka.{fmt}.v2+json"


def format_of(content_type: str | None, *, default: str | None = None) -> str:
    """The embedded format a request's ``Content-Type`` (or ``Accept``) names; 415 for a type
    of no format."""
    for part in (content_type or "").split(","):
        kind = part.split(";")[0].strip().lower()
        if kind.startswith("application/vnd.kafka.") and kind.endswith(".v2+json"):
            name = kind.removeprefix("application/vnd.kafka.").removesuffix(".v2+json")
            if name in FORMATS:
                return name
    if default is not None:
        return default
    raise RestError(415, 415, f"HTTP 415 Unsupported Media Type: {content_type}")


def decode(registry: RegistryCodec | None, fmt: str, data: bytes | None) -> object:
    """A record's key or value as a consumer of ``fmt`` reads it."""
    if data is None:
        return None
    if fmt == "binary":
        return base64.b64encode(data).decode()
    if fmt == "json":
        try:
            return json.loads(data)
        except ValueError:
            raise RestError(500, 50002, "Kafka error: a record is not JSON") from None
    if registry is None:
        raise RestError(500, 50002, f"a {fmt} consumer needs schema.registry.url")
    return registry.decode(data)
