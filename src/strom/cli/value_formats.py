"""``--value-format``, ``--schema`` and ``--registry`` of ``strom produce`` and ``strom consume``:
values in Confluent's schema-registry wire format. ``produce`` reads one JSON document per line
and encodes it with the schema (registered under ``TOPIC-value``, Confluent's default subject
name strategy); ``consume`` prints each value decoded, as one line of JSON."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from strom.cli.client_common import CliError

__all__ = ["VALUE_FORMATS", "ValueEncoder", "registry_options", "value_decoder"]

VALUE_FORMATS = ("string", "avro", "json-schema", "protobuf")
_TYPES = {"avro": "AVRO", "json-schema": "JSON", "protobuf": "PROTOBUF"}
F = TypeVar("F", bound=Callable[..., Any])


def registry_options(*, schema: bool) -> Callable[[F], F]:
    """The options; ``schema`` adds ``--schema FILE`` (the producer's)."""

    def decorate(command: F) -> F:
        if schema:
            command = click.option(
                "--strict",
                is_flag=True,
                help="Refuse a line with a field its Avro schema does not have (without: send "
                "it without the field, and warn).",
            )(command)
            command = click.option(
                "--schema",
                "schema_file",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                default=None,
                help="The value schema: an Avro .avsc, a JSON Schema, or for protobuf a "
                "descriptor set (protoc --descriptor_set_out) whose last file holds the message.",
            )(command)
        command = click.option(
            "--registry",
            metavar="URL",
            default=None,
            help="The schema registry's URL (with --value-format other than string).",
        )(command)
        return click.option(
            "--value-format",
            type=click.Choice(VALUE_FORMATS),
            default="string",
            help="How values are encoded.  [default: string]",
        )(command)

    return decorate


def _codec(value_format: str, registry: str | None) -> Any:
    if registry is None:
        raise click.BadParameter(f"--value-format {value_format} needs --registry URL")
    from strom.registry.codec import RegistryCodec  # noqa: PLC0415 - only when asked for

    return RegistryCodec(registry)


def _schema_text(value_format: str, path: Path) -> str:
    if value_format != "protobuf":
        return path.read_text()
    from google.protobuf import descriptor_pb2  # noqa: PLC0415 - only when asked for

    try:
        files = descriptor_pb2.FileDescriptorSet.FromString(path.read_bytes()).file
    except Exception as error:  # a descriptor set that does not parse
        raise CliError(f"{path}: not a protobuf descriptor set: {error}") from None
    if not files:
        raise CliError(f"{path}: the descriptor set holds no file")
    return base64.b64encode(files[-1].SerializeToString()).decode()


class ValueEncoder:
    """Encodes JSON lines as values of one schema, registered (or found) at start."""

    def __init__(
        self,
        value_format: str,
        *,
        topic: str,
        schema_file: Path | None,
        registry: str | None,
        strict: bool = False,
    ) -> None:
        self.value_format = value_format
        self.strict = strict
        self._warned: set[str] = set()
        if value_format == "string":
            return
        if schema_file is None:
            raise click.BadParameter(f"--value-format {value_format} needs --schema FILE")
        from strom.registry.schema_types import SchemaType  # noqa: PLC0415

        self._codec = _codec(value_format, registry)
        text = _schema_text(value_format, schema_file)
        self._schema_id = self._codec.register(
            f"{topic}-value", SchemaType(_TYPES[value_format]), text
        )
        self._avro = json.loads(text) if value_format == "avro" else None

    def encode(self, value: bytes) -> bytes:
        """A line as the value to send; ValueError when it is not valid for the schema (or,
        with ``strict``, has a field an Avro schema lacks)."""
        if self.value_format == "string":
            return value
        try:
            data = json.loads(value)
        except ValueError as error:
            raise ValueError(f"cannot encode as {self.value_format}: {error}") from None
        if self._avro is not None:
            self._check_fields(data)
        try:
            encoded: bytes = self._codec.encode(self._schema_id, data)
        except Exception as error:  # the value does not fit the schema
            raise ValueError(f"cannot encode as {self.value_format}: {error}") from None
        return encoded

    def _check_fields(self, data: object) -> None:
        """Fields the Avro record schema lacks (which fastavro would drop): refused with
        ``strict``, else one warning per field."""
        extra = [name for name in extra_avro_fields(self._avro, data) if name not in self._warned]
        if not extra:
            return
        names = ", ".join(extra)
        if self.strict:
            raise ValueError(f"field(s) not in the Avro schema: {names} (--strict)")
        self._warned.update(extra)
        click.echo(
            f"Warning: field(s) not in the Avro schema, left out of the message: {names} "
            "(--strict refuses such lines)",
            err=True,
        )


def extra_avro_fields(schema: object, data: object, prefix: str = "") -> list[str]:
    """The dotted names of ``data``'s fields that its Avro record ``schema`` (and the records
    nested in it) do not have."""
    if not isinstance(schema, dict) or schema.get("type") != "record" or not isinstance(data, dict):
        return []
    fields = {field["name"]: field["type"] for field in schema.get("fields", [])}
    extra = [f"{prefix}{name}" for name in data if name not in fields]
    for name, field_type in fields.items():
        extra += extra_avro_fields(field_type, data.get(name), f"{prefix}{name}.")
    return extra


def value_decoder(value_format: str, registry: str | None) -> Callable[[bytes], str] | None:
    """How to print values (None: as text)."""
    if value_format == "string":
        return None
    codec = _codec(value_format, registry)

    def decode(value: bytes) -> str:
        try:
            return json.dumps(codec.decode(value), default=_jsonable, ensure_ascii=False)
        except ValueError as error:
            return f"<undecodable: {error}>"

    return decode


def _jsonable(value: object) -> object:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value)
