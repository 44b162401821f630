"""Produce requests of the v3 API (``POST .../topics/{topic}/records``), pure: a request's
JSON object becomes the record's key, value, headers, partition and timestamp in bytes (the
``BINARY``, ``JSON`` and ``STRING`` types; the registry's types are encoded by ``schemas``), and
a delivered record its answer."""

from __future__ import annotations

import binascii
import datetime
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from strom.rest.errors import RestError

__all__ = [
    "PLAIN_TYPES",
    "DataSpec",
    "ProduceRecord",
    "delivered",
    "encode_plain",
    "iso_millis",
    "parse",
    "plain_message",
]

PLAIN_TYPES: Final = frozenset({"BINARY", "JSON", "STRING"})
SCHEMA_TYPES: Final = frozenset({"AVRO", "JSONSCHEMA", "PROTOBUF"})
TYPES: Final = ("BINARY", "JSON", "STRING", "AVRO", "JSONSCHEMA", "PROTOBUF")
_SCHEMA_FIELDS: Final = (
    "subject",
    "subject_name_strategy",
    "schema_id",
    "schema_version",
    "schema",
)
_PLAIN_FIELDS: Final = frozenset({"key", "value", "partition_id"})
_PART_FIELDS: Final = frozenset({"type", "data"})


def _bad(message: str) -> RestError:
    return RestError(400, 400, message)


@dataclass(frozen=True)
class DataSpec:
    """A key's or value's part of a request: its ``type`` (None: not given), the registry
    fields, and ``data``."""

    type: str | None
    data: object
    subject: str | None = None
    subject_name_strategy: str | None = None
    schema_id: int | None = None
    schema_version: int | None = None
    schema: str | None = None

    @property
    def needs_schema(self) -> bool:
        """A registry type, or no type with registry fields (or none at all: the subject's
        latest schema when a registry is configured)."""
        return self.type in SCHEMA_TYPES or self.type is None


@dataclass(frozen=True)
class ProduceRecord:
    partition: int | None
    key: DataSpec | None
    value: DataSpec | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp_ms: int | None


def _spec(raw: object, what: str) -> DataSpec | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise _bad(f"{what}: expected an object with 'type' and 'data'")
    kind = raw.get("type")
    if kind is not None and (
        not isinstance(kind, str) or kind.upper() not in PLAIN_TYPES | SCHEMA_TYPES
    ):
        raise _bad(f"{what}.type: expected one of {', '.join(TYPES)}, got {kind!r}")
    fields = {name: raw.get(name) for name in _SCHEMA_FIELDS}
    for name in ("schema_id", "schema_version"):
        if fields[name] is not None and not isinstance(fields[name], int):
            raise _bad(f"{what}.{name}: expected an integer")
    return DataSpec(
        type=None if kind is None else kind.upper(),
        data=raw.get("data"),
        **fields,
    )


def _timestamp(raw: object) -> int | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise _bad("timestamp: expected an ISO-8601 date-time")
    try:
        moment = datetime.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise _bad(f"timestamp: not an ISO-8601 date-time: {raw!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def _headers(raw: object) -> tuple[tuple[str, bytes | None], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _bad("headers: expected an array of {name, value}")
    out = []
    for header in raw:
        if not isinstance(header, Mapping) or not isinstance(header.get("name"), str):
            raise _bad("headers: each needs a 'name'")
        value = header.get("value")
        out.append((header["name"], None if value is None else _base64(value, "headers.value")))
    return tuple(out)


def _base64(text: object, what: str) -> bytes:
    if not isinstance(text, str):
        raise _bad(f"{what}: expected a base64 string")
    try:
        return binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError):
        raise _bad(f"{what}: not valid base64: {text[:40]!r}") from None


def parse(raw: object) -> ProduceRecord:
    """One request object; a ``RestError`` (400) naming the field that cannot be used."""
    if not isinstance(raw, Mapping):
        raise _bad("expected a JSON object per record")
    partition = raw.get("partition_id")
    if partition is not None and (not isinstance(partition, int) or isinstance(partition, bool)):
        raise _bad("partition_id: expected an integer")
    if partition is not None and partition < 0:
        raise RestError(404, 40402, "Partition not found.")
    return ProduceRecord(
        partition=partition,
        key=_spec(raw.get("key"), "key"),
        value=_spec(raw.get("value"), "value"),
        headers=_headers(raw.get("headers")),
        timestamp_ms=_timestamp(raw.get("timestamp")),
    )


def encode_plain(spec: DataSpec | None, what: str) -> bytes | None:
    """A ``BINARY`` (base64), ``JSON`` or ``STRING`` part as bytes; null data is no bytes."""
    return None if spec is None else _plain_bytes(spec.type, spec.data, what)


def _plain_bytes(kind: str | None, data: object, what: str) -> bytes | None:
    if data is None:
        return None
    if kind is None or kind == "BINARY":
        return _base64(data, f"{what}.data")
    if kind == "STRING":
        if not isinstance(data, str):
            raise _bad(f"{what}.data: a STRING needs a JSON string")
        return data.encode()
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def plain_message(
    raw: object, partitions: int, *, registry: bool
) -> tuple[dict[str, Any], str] | None:
    """The stream's common case without the general path's objects: a request object of only
    plain-typed ``key`` and ``value`` and a ``partition_id`` as a ``produce_batch`` message,
    and its answer's ``"key":...,"value":...}`` text. None for any other object, a bad one
    included (``parse`` then names its error); a part without a type is plain only when no
    registry is configured."""
    if type(raw) is not dict or not raw.keys() <= _PLAIN_FIELDS:
        return None
    message: dict[str, Any] = {}
    partition = raw.get("partition_id")
    if partition is not None:
        if type(partition) is not int or not 0 <= partition < partitions:
            return None
        message["partition"] = partition
    key = _plain_part(raw.get("key"), registry)
    value = _plain_part(raw.get("value"), registry)
    if key is None or value is None:
        return None
    if key[0] is not None:
        message["key"] = key[0]
    if value[0] is not None:
        message["value"] = value[0]
    return message, f'"key":{key[1]},"value":{value[1]}}}\n'


_NO_PART: Final = (None, "null")


def _plain_part(part: object, registry: bool) -> tuple[bytes | None, str] | None:
    """A plain part's bytes and its answer's text; None when the part is not plain."""
    if part is None:
        return _NO_PART
    if type(part) is not dict or not part.keys() <= _PART_FIELDS:
        return None
    kind = part.get("type")
    if kind is None:
        if registry:
            return None
        kind = "BINARY"
    data = part.get("data")
    payload: bytes | None
    if data is None:
        payload = None
    elif kind == "BINARY":
        if type(data) is not str:
            return None
        try:
            payload = binascii.a2b_base64(data, strict_mode=True)
        except (binascii.Error, ValueError):
            return None
    elif kind == "STRING":
        if type(data) is not str:
            return None
        payload = data.encode()
    elif kind == "JSON":
        payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    else:
        return None
    size = 0 if payload is None else len(payload)
    return payload, (
        f'{{"type":"{kind}","size":{size},"subject":null,"schema_id":null,"schema_version":null}}'
    )


@functools.lru_cache(maxsize=4096)
def iso_millis(timestamp_ms: int) -> str:
    """A record's timestamp as the answers write it (``2026-11-28T12:00:00.000Z``); records
    delivered together share theirs, hence the cache."""
    moment = datetime.datetime.fromtimestamp(timestamp_ms / 1000, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def delivered(
    *,
    cluster_id: str,
    topic: str,
    partition: int,
    offset: int,
    timestamp_ms: int | None,
    key: Mapping[str, object] | None,
    value: Mapping[str, object] | None,
) -> dict[str, object]:
    """The answer to a record the cluster acknowledged."""
    return {
        "error_code": 200,
        "cluster_id": cluster_id,
        "topic_name": topic,
        "partition_id": partition,
        "offset": offset,
        "timestamp": None if timestamp_ms is None else iso_millis(timestamp_ms),
        "key": key,
        "value": value,
    }
