"""The SQL server's schema registry (`ksql.schema.registry.url`): the columns of a registered
schema, for a `CREATE` without columns, and the ids that the records of a source in a
registry format are written with (its subject's latest schema, or the one ksqlDB generates
from the columns, registered). The I/O shell of `registry_schemas`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from strom.sql.analyzer import Column
from strom.sql.errors import SqlSemanticError
from strom.sql.metastore import DataSource
from strom.sql.protobuf_schemas import protobuf_columns, protobuf_schema
from strom.sql.registry_schemas import (
    REGISTRY_FORMATS,
    avro_columns,
    avro_key_schema,
    avro_schema,
    json_columns,
    json_schema,
)

__all__ = ["SchemaRegistry"]

NOT_CONFIGURED = (
    "KSQL is not configured to use a schema registry. To enable it, please set "
    "ksql.schema.registry.url"
)
_TYPES = {"JSON_SR": "JSON", "AVRO": "AVRO", "PROTOBUF": "PROTOBUF"}
"""The registry's schema type of each format."""
_BINARY = frozenset({"AVRO", "PROTOBUF"})
"""The formats whose records are read with their schema's text (not only its id)."""


def _proto_columns(text: str, full_name: str | None = None) -> tuple[Column, ...]:
    from strom.registry.protobuf_schema import ProtobufSchema  # noqa: PLC0415 - strom[registry]

    return protobuf_columns(ProtobufSchema(text).file, full_name)


_COLUMNS = {"JSON_SR": json_columns, "AVRO": avro_columns, "PROTOBUF": _proto_columns}
_GENERATED: dict[str, Callable[..., str]] = {
    "JSON_SR": json_schema,
    "AVRO": avro_schema,
    "PROTOBUF": protobuf_schema,
}
"""ksqlDB's generated schemas (AVRO's and PROTOBUF's also take a full name)."""
_GENERATED_KEYS = {**_GENERATED, "AVRO": avro_key_schema}
"""ksqlDB's generated key schemas: a single AVRO key column unwrapped."""


class SchemaRegistry:
    """The registry at `url` (None: not configured, and every use is an error saying so)."""

    def __init__(self, url: str | None) -> None:
        self.url = url or None
        self._codec: Any = None

    def _client(self, topic: str) -> Any:
        if self.url is None:
            raise SqlSemanticError(
                f"Schema registry fetch for topic {topic} request failed.\n"
                f"Caused by: {NOT_CONFIGURED}"
            )
        if self._codec is None:
            from strom.registry.codec import RegistryCodec  # noqa: PLC0415 - strom[registry]

            self._codec = RegistryCodec(self.url)
        return self._codec

    def infer(
        self, fmt: str, subject: str, schema_id: int | None, full_name: str | None = None
    ) -> tuple[tuple[Column, ...], int]:
        """The columns of `schema_id`'s schema, or of `subject`'s latest (PROTOBUF: of its
        message `full_name`, default the first), and its id."""
        from strom.registry.codec import RegistryClientError  # noqa: PLC0415

        topic = subject.rsplit("-", 1)[0]
        codec = self._client(topic)
        try:
            schema = codec.schema(schema_id) if schema_id is not None else codec.latest(subject)
        except RegistryClientError as e:
            if e.status != 404:
                raise SqlSemanticError(
                    f"Schema registry fetch for topic {topic} failed: {e}"
                ) from None
            if schema_id is not None:
                raise SqlSemanticError(
                    f"Schema with id {schema_id} does not exist in the Schema Registry."
                ) from None
            raise SqlSemanticError(
                f"Schema for message values on topic '{topic}' does not exist in the Schema "
                f"Registry.\nSubject: {subject}\n\nPossible causes include:\n- The topic itself "
                f"does not exist\n\t-> Use SHOW TOPICS; to check\n- Messages on the topic are "
                f"not serialized using a format Schema Registry supports\n\t-> Use PRINT "
                f"'{topic}' FROM BEGINNING; to verify\n- Messages on the topic have not been "
                f"serialized using a Confluent Schema Registry supported serializer\n\t-> See "
                f"https://docs.confluent.io/current/schema-registry/docs/serdes-develop/index."
                f"html\n- The schema is registered on a different instance of the Schema "
                f"Registry\n\t-> Use the REST API to list available subjects\n\t-> See "
                f"https://docs.confluent.io/current/schema-registry/docs/api.html#get--subjects"
            ) from None
        self._check_type(fmt, subject, schema)
        if fmt == "PROTOBUF":
            return _proto_columns(schema.text, full_name), int(schema.id)
        return _COLUMNS[fmt](schema.text), int(schema.id)

    @staticmethod
    def _check_type(fmt: str, subject: str, schema: Any) -> None:
        kind = schema.schema_type.value
        if kind != _TYPES[fmt]:
            raise SqlSemanticError(
                f"Format {fmt} expects a {_TYPES[fmt]} schema, but the schema of {subject} "
                f"(id {schema.id}) is {kind}."
            )

    def with_schemas(self, source: DataSource, *, generated: bool) -> DataSource:
        """`source` with the ids its records are written with: for a sink of a query
        (`generated`), ksqlDB's schema of its columns registered under the topic's subject;
        for a declared source, its given id, else the subject's latest, else the generated."""
        key_id, value_id = source.key_schema_id, source.value_schema_id
        if source.key_format in REGISTRY_FORMATS and source.keys and key_id is None:
            key_id = self._schema_id(
                source.key_format,
                f"{source.topic}-key",
                source.keys,
                generated,
                key=True,
                full_name=source.key_schema_name,
            )
        if source.value_format in REGISTRY_FORMATS and source.values and value_id is None:
            value_id = self._schema_id(
                source.value_format,
                f"{source.topic}-value",
                source.values,
                generated,
                full_name=source.value_schema_name,
            )
        text, key_text = source.value_schema, source.key_schema
        if source.value_format in _BINARY and value_id is not None and text is None:
            text = self._text(source.topic, value_id)
        if source.key_format in _BINARY and key_id is not None and key_text is None:
            key_text = self._text(source.topic, key_id)
        return dataclasses.replace(
            source,
            key_schema_id=key_id,
            value_schema_id=value_id,
            value_schema=text,
            key_schema=key_text,
            registry=self.url,
        )

    def _text(self, topic: str, schema_id: int) -> str:
        """The text of the schema `schema_id` (what binary records are read with)."""
        from strom.registry.codec import RegistryClientError  # noqa: PLC0415

        try:
            return str(self._client(topic).schema(schema_id).text)
        except RegistryClientError as e:
            if e.status == 404:
                raise SqlSemanticError(
                    f"Schema with id {schema_id} does not exist in the Schema Registry."
                ) from None
            raise SqlSemanticError(f"Schema registry fetch for topic {topic} failed: {e}") from None

    def _schema_id(
        self,
        fmt: str,
        subject: str,
        columns: Sequence[Column],
        generated: bool,
        *,
        key: bool = False,
        full_name: str | None = None,
    ) -> int:
        from strom.registry.codec import RegistryClientError  # noqa: PLC0415
        from strom.registry.schema_types import SchemaType  # noqa: PLC0415

        topic = subject.rsplit("-", 1)[0]
        codec = self._client(topic)
        try:
            if not generated:
                try:
                    latest = codec.latest(subject)
                except RegistryClientError as e:
                    if e.status != 404:
                        raise
                else:
                    self._check_type(fmt, subject, latest)
                    return int(latest.id)
            generate = (_GENERATED_KEYS if key else _GENERATED)[fmt]
            text = generate(columns) if full_name is None else generate(columns, full_name)
            return int(codec.register(subject, SchemaType(_TYPES[fmt]), text))
        except RegistryClientError as e:
            raise SqlSemanticError(
                f"Could not register schema for topic: {e}\nSubject: {subject}"
            ) from None
