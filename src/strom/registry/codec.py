"""Decoding and encoding registry-framed values on the client side (the CLI, Spark executors):
schemas are fetched from the registry by id once and cached; Avro goes through fastavro, JSON
through ``json``, Protobuf through messages built from the registered file descriptors (decoded
to plain data by ``_message_data``).

``decode`` takes an optional reader schema (Avro): values written with older compatible
versions are resolved into it, as Avro's schema resolution does."""

from __future__ import annotations

import base64
import io
import json
import threading
from dataclasses import dataclass
from typing import Any

import fastavro
import httpx
import jsonschema.validators
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from strom.registry.json_schema import References
from strom.registry.protobuf_schema import ProtobufSchema, decode_file
from strom.registry.schema_types import SchemaType
from strom.registry.wire import frame, message_indexes, read_message_indexes, unframe

__all__ = ["RegistryCodec", "RegistrySchema"]

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@dataclass(frozen=True)
class RegistrySchema:
    """A schema as the registry serves it, with its references' texts (name, text)."""

    id: int
    schema_type: SchemaType
    text: str
    dependencies: tuple[tuple[str, str], ...] = ()


class RegistryCodec:
    """One registry's schemas, fetched on demand and kept; safe to share between threads."""

    def __init__(self, url: str, *, auth: tuple[str, str] | None = None) -> None:
        self.url = url.rstrip("/")
        self._auth = auth
        self._empty_caches()

    def _empty_caches(self) -> None:
        self._lock = threading.Lock()
        self._schemas: dict[int, RegistrySchema] = {}
        self._avro: dict[tuple[int, str | None], tuple[Any, Any]] = {}
        self._protobuf: dict[tuple[int, tuple[int, ...]], Any] = {}
        self._json: dict[int, Any] = {}

    def __getstate__(self) -> dict[str, Any]:  # pickled to Spark executors without caches
        return {"url": self.url, "auth": self._auth}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.url, self._auth = state["url"], state["auth"]
        self._empty_caches()

    # -- the registry ----------------------------------------------------------------------
    def _request(self, method: str, path: str, body: Any = None) -> Any:
        response = httpx.request(
            method,
            self.url + path,
            content=None if body is None else json.dumps(body),
            headers={"Content-Type": CONTENT_TYPE},
            auth=self._auth,
            timeout=30,
        )
        if response.status_code != 200:
            raise RegistryClientError(response.status_code, response.text)
        return response.json()

    def schema(self, schema_id: int) -> RegistrySchema:
        with self._lock:
            known = self._schemas.get(schema_id)
        if known is not None:
            return known
        body = self._request("GET", f"/schemas/ids/{schema_id}?format=serialized")
        dependencies = tuple(self._dependencies(body.get("references") or []))
        fetched = RegistrySchema(
            schema_id, SchemaType(body.get("schemaType", "AVRO")), body["schema"], dependencies
        )
        with self._lock:
            self._schemas[schema_id] = fetched
        return fetched

    def _dependencies(self, references: list[dict[str, Any]]) -> list[tuple[str, str]]:
        ordered: list[tuple[str, str]] = []
        for reference in references:
            version = self._request(
                "GET",
                f"/subjects/{reference['subject']}/versions/{reference['version']}"
                "?format=serialized",
            )
            ordered += self._dependencies(version.get("references") or [])
            ordered.append((reference["name"], version["schema"]))
        return ordered

    def register(self, subject: str, schema_type: SchemaType, text: str) -> int:
        """The id of ``text`` under ``subject``, registering it if it is not there yet."""
        body = {"schema": text, "schemaType": schema_type.value}
        answer = self._request("POST", f"/subjects/{subject}/versions", body)
        schema_id: int = answer["id"]
        return schema_id

    def lookup(self, subject: str, schema_type: SchemaType, text: str) -> int:
        """The id of ``text`` under ``subject``; RegistryClientError when it is not there."""
        body = {"schema": text, "schemaType": schema_type.value}
        answer = self._request("POST", f"/subjects/{subject}", body)
        schema_id: int = answer["id"]
        return schema_id

    def subject_version(self, subject: str, version: int | str = "latest") -> tuple[int, int]:
        """The schema id and version number of ``subject``'s ``version``."""
        body = self._request("GET", f"/subjects/{subject}/versions/{version}")
        return int(body["id"]), int(body["version"])

    def latest(self, subject: str) -> RegistrySchema:
        """The latest version of a subject (a reader schema)."""
        body = self._request("GET", f"/subjects/{subject}/versions/latest")
        return self.schema(int(body["id"]))

    # -- Avro ------------------------------------------------------------------------------
    def _avro_schemas(self, writer_id: int, reader: str | None) -> tuple[Any, Any]:
        key = (writer_id, reader)
        with self._lock:
            known = self._avro.get(key)
        if known is None:
            known = (self._parse_avro(self.schema(writer_id)), None)
            if reader is not None:
                known = (known[0], fastavro.parse_schema(json.loads(reader)))
            with self._lock:
                self._avro[key] = known
        return known

    @staticmethod
    def _parse_avro(schema: RegistrySchema) -> Any:
        named: dict[str, Any] = {}
        for _, text in schema.dependencies:
            fastavro.parse_schema(json.loads(text), named_schemas=named)
        return fastavro.parse_schema(json.loads(schema.text), named_schemas=named)

    # -- decoding and encoding -------------------------------------------------------------
    def decode(self, value: bytes, *, reader_schema: str | None = None) -> Any:
        """A framed value as Python data (Avro records as dicts, Protobuf messages as the
        dicts of their JSON mapping)."""
        schema_id, payload = unframe(value)
        schema = self.schema(schema_id)
        if schema.schema_type is SchemaType.AVRO:
            writer, reader = self._avro_schemas(schema_id, reader_schema)
            return fastavro.schemaless_reader(io.BytesIO(payload), writer, reader)
        if schema.schema_type is SchemaType.JSON:
            return json.loads(bytes(payload))
        indexes, body = read_message_indexes(payload)
        message = self._message_class(schema, indexes)()
        message.ParseFromString(bytes(body))
        return _message_data(message)

    def encode(self, schema_id: int, data: Any) -> bytes:
        """Python data as a framed value of schema ``schema_id``."""
        schema = self.schema(schema_id)
        if schema.schema_type is SchemaType.AVRO:
            writer, _ = self._avro_schemas(schema_id, None)
            out = io.BytesIO()
            fastavro.schemaless_writer(out, writer, data)
            return frame(schema_id, out.getvalue())
        if schema.schema_type is SchemaType.JSON:
            self._json_validator(schema).validate(data)  # as confluent-kafka's serializer does
            return frame(schema_id, json.dumps(data, separators=(",", ":")).encode())
        message: Message = self._message_class(schema, [0])()
        json_format.ParseDict(data, message)
        return frame(schema_id, message_indexes([0]) + message.SerializeToString())

    def _json_validator(self, schema: RegistrySchema) -> Any:
        with self._lock:
            known = self._json.get(schema.id)
        if known is None:
            document = json.loads(schema.text)
            referenced = [(name, json.loads(text)) for name, text in schema.dependencies]
            registry = References.of(document, referenced).registry
            known = jsonschema.validators.validator_for(document)(document, registry=registry)
            with self._lock:
                self._json[schema.id] = known
        return known

    def _message_class(self, schema: RegistrySchema, indexes: list[int]) -> Any:
        key = (schema.id, tuple(indexes))
        with self._lock:
            known = self._protobuf.get(key)
        if known is not None:
            return known
        pool = descriptor_pool.DescriptorPool()
        for name, text in schema.dependencies:
            pool.Add(decode_file(text, name))
        parsed = ProtobufSchema(schema.text, ())
        for imported in parsed.file.dependency:
            if imported not in {name for name, _ in schema.dependencies}:
                pool.Add(_well_known(imported))
        pool.Add(parsed.file)
        descriptor = pool.FindFileByName(parsed.file.name).message_types_by_name
        messages = list(descriptor.values())
        found = messages[indexes[0]]
        for index in indexes[1:]:
            found = found.nested_types[index]
        made = message_factory.GetMessageClass(found)
        with self._lock:
            self._protobuf[key] = made
        return made


def _message_data(message: Message) -> dict[str, Any]:
    """A message as plain data under its ``.proto`` field names: every field (unset ones with
    presence as None, others with their defaults), 64-bit integers as numbers, enums by name,
    bytes in base64. Protobuf's JSON mapping differs only in writing 64-bit integers as strings
    and leaving defaults out, which typed consumers (Spark's ``from_json``) cannot use."""
    data: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        if field.has_presence and not message.HasField(field.name):
            data[field.name] = None
            continue
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            data[field.name] = {key: _field_value(value_field, v) for key, v in value.items()}
        elif field.is_repeated:
            data[field.name] = [_field_value(field, item) for item in value]
        else:
            data[field.name] = _field_value(field, value)
    return data


def _field_value(field: Any, value: Any) -> Any:  # a FieldDescriptor (Python or upb)
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return _message_data(value)
    if field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
        known = field.enum_type.values_by_number.get(value)
        return value if known is None else known.name
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()
    return value


def _well_known(name: str) -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto()
    descriptor_pool.Default().FindFileByName(name).CopyToProto(proto)
    return proto


class RegistryClientError(RuntimeError):
    """The registry refused a request; the message is its status and body."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"schema registry answered {status}: {body}")
        self.status = status
