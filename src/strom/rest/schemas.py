"""A produce request's registry formats (``AVRO``, ``JSONSCHEMA``, ``PROTOBUF``): which schema
a key or value is written with, as Confluent's proxy chooses it (a ``schema_id``; a subject's
``schema_version``; a raw ``schema``, registered under the subject; else the subject's latest),
the subject named by ``subject`` or the ``subject_name_strategy`` (``TOPIC_NAME`` by default),
and the value framed in Confluent's wire format. Blocking: called in a worker thread."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from strom.registry.codec import RegistryClientError, RegistryCodec
from strom.registry.schema_types import SchemaType
from strom.rest.errors import RestError
from strom.rest.records import DataSpec, encode_plain

__all__ = ["Encoded", "encode"]

_TYPES: Final = {
    SchemaType.AVRO: "AVRO",
    SchemaType.JSON: "JSONSCHEMA",
    SchemaType.PROTOBUF: "PROTOBUF",
}
_SCHEMA_TYPES: Final = {name: kind for kind, name in _TYPES.items()}


@dataclass(frozen=True)
class Encoded:
    """A key's or value's bytes and what its answer reports (``ProduceResponseData``)."""

    data: bytes | None
    report: dict[str, object] | None


def _subject(spec: DataSpec, topic: str, is_key: bool, schema_text: str | None) -> str:
    if spec.subject:
        return spec.subject
    part = "key" if is_key else "value"
    strategy = (spec.subject_name_strategy or "TOPIC_NAME").upper()
    if strategy == "TOPIC_NAME":
        return f"{topic}-{part}"
    if strategy not in ("RECORD_NAME", "TOPIC_RECORD_NAME"):
        raise RestError(400, 400, f"subject_name_strategy: unknown {strategy}")
    record = _avro_record_name(schema_text)
    return record if strategy == "RECORD_NAME" else f"{topic}-{record}"


def _avro_record_name(text: str | None) -> str:
    try:
        schema = json.loads(text or "")
        name = schema["name"]
    except (ValueError, TypeError, KeyError):
        raise RestError(
            400, 400, "subject_name_strategy: a record name strategy needs an Avro record schema"
        ) from None
    namespace = schema.get("namespace")
    return name if "." in name or not namespace else f"{namespace}.{name}"


def encode(
    registry: RegistryCodec | None, spec: DataSpec | None, topic: str, *, is_key: bool
) -> Encoded:
    """``spec``'s bytes in its format; plain types need no registry."""
    what = "key" if is_key else "value"
    if spec is None:
        return Encoded(None, None)
    if not spec.needs_schema or (registry is None and spec.type is None):
        data = encode_plain(spec, what)
        report = {"type": spec.type or "BINARY", "size": len(data or b""), "subject": None,
                  "schema_id": None, "schema_version": None}  # fmt: skip
        return Encoded(data, report)
    if registry is None:
        raise RestError(400, 400, f"{what}.type {spec.type} needs schema.registry.url")
    try:
        schema_id, subject, version = _schema(registry, spec, topic, is_key)
        kind = _TYPES[registry.schema(schema_id).schema_type]
        if spec.type is not None and spec.type != kind:
            raise RestError(400, 400, f"{what}: schema {schema_id} is {kind}, not {spec.type}")
        data = None if spec.data is None else registry.encode(schema_id, spec.data)
    except RegistryClientError as error:
        raise RestError(error.status if error.status < 500 else 500, 40801, str(error)) from None
    except (ValueError, TypeError, KeyError) as error:  # data the schema does not take
        raise RestError(400, 42207, f"Error serializing message. {error}") from None
    report = {"type": kind, "size": len(data or b""), "subject": subject,
              "schema_id": schema_id, "schema_version": version}  # fmt: skip
    return Encoded(data, report)


def _schema(
    registry: RegistryCodec, spec: DataSpec, topic: str, is_key: bool
) -> tuple[int, str, int | None]:
    if spec.schema_id is not None:
        text = registry.schema(spec.schema_id).text
        return spec.schema_id, _subject(spec, topic, is_key, text), None
    if spec.schema is not None:
        subject = _subject(spec, topic, is_key, spec.schema)
        kind = _SCHEMA_TYPES.get(spec.type or "AVRO", SchemaType.AVRO)
        schema_id = registry.register(subject, kind, spec.schema)
        return schema_id, subject, None
    subject = _subject(spec, topic, is_key, None)
    schema_id, version = registry.subject_version(subject, spec.schema_version or "latest")
    return schema_id, subject, version
