"""The decoders of ``strom dump-log``: the records of the internal topics as JSON, in the shape
of Kafka's ``--offsets-decoder``, ``--transaction-log-decoder`` and
``--cluster-metadata-decoder``: the key as ``{"type": "<record type>", "data": {...}}``, the
payload as ``{"version": "<value version>", "data": {...}}`` (``<DELETE>`` for a tombstone), a
metadata record as ``{"type": "TOPIC_RECORD", "version": N, "data": {...}}``. Field names are
camelCase, as Kafka's JSON converters write them; a record that cannot be decoded says so in
place of its key, as Kafka's tool does."""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import re
import struct
import uuid
from collections.abc import Callable
from typing import Any, Final

from strom.coordinator.group import records as group_records
from strom.coordinator.txn import records as txn_records
from strom.metadata.records import decode_record

__all__ = ["DECODERS"]

_VERSION: Final = struct.Struct(">h")
_CAMEL = re.compile(r"_([a-z0-9])")

Decoded = tuple[str | None, str | None]


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            _CAMEL.sub(lambda m: m.group(1).upper(), field.name): _jsonable(
                getattr(value, field.name)
            )
            for field in dataclasses.fields(value)
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, uuid.UUID):
        return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")
    if isinstance(value, (list, tuple, frozenset, set)):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _version(value: bytes) -> int:
    return int(_VERSION.unpack_from(value)[0])


def _coordinator(
    decode_key: Callable[[bytes], Any], decode_value: Callable[[Any, bytes], Any]
) -> Callable[[bytes | None, bytes | None], Decoded]:
    def decode(key: bytes | None, value: bytes | None) -> Decoded:
        if key is None:
            return "Failed to decode message (the record has no key)", None
        try:
            record_key = decode_key(key)
            key_json = _json({"type": str(_version(key)), "data": _jsonable(record_key)})
            if value is None:
                return key_json, "<DELETE>"
            data = _jsonable(decode_value(record_key, value))
            return key_json, _json({"version": str(_version(value)), "data": data})
        except (ValueError, struct.error) as error:
            return f"Error: skipping a record that cannot be decoded: {error}", None

    return decode


def _metadata(_key: bytes | None, value: bytes | None) -> Decoded:
    if value is None:
        return None, None
    try:
        record = decode_record(value)
    except (ValueError, struct.error) as error:
        return f"Error: skipping a record that cannot be decoded: {error}", None
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", type(record).__name__).upper()
    version = value[2] if len(value) > 2 else 0  # frame version, api key, version: varints
    return None, _json({"type": name, "version": version, "data": _jsonable(record)})


DECODERS: Final[dict[str, Callable[[bytes | None, bytes | None], Decoded]]] = {
    "offsets": _coordinator(group_records.decode_key, group_records.decode_value),
    "transactions": _coordinator(
        txn_records.decode_key, lambda _key, value: txn_records.decode_value(value)
    ),
    "metadata": _metadata,
}
