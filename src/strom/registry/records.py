"""The records of the ``_schemas`` topic, in Confluent's layout: a JSON key naming what the
record is about (``keytype`` SCHEMA, CONFIG, MODE, DELETE_SUBJECT, CLEAR_SUBJECT or NOOP) and a
JSON value; a null value is a tombstone, which compaction keeps only until it is cleaned.
Keys are written with a fixed field order, since compaction compares them byte for byte."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["KeyType", "Record", "config_record", "mode_record", "schema_record"]


class KeyType(StrEnum):
    SCHEMA = "SCHEMA"
    CONFIG = "CONFIG"
    MODE = "MODE"
    NOOP = "NOOP"
    DELETE_SUBJECT = "DELETE_SUBJECT"
    CLEAR_SUBJECT = "CLEAR_SUBJECT"


def _dump(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class Record:
    """One ``_schemas`` record: its key and value (None: a tombstone), as JSON objects."""

    key: dict[str, Any]
    value: dict[str, Any] | None

    @property
    def key_type(self) -> KeyType:
        return KeyType(self.key["keytype"])

    def encode(self) -> tuple[bytes, bytes | None]:
        return _dump(self.key), None if self.value is None else _dump(self.value)

    @classmethod
    def decode(cls, key: bytes, value: bytes | None) -> Record | None:
        """The record, or None when its key is not one of the registry's."""
        try:
            parsed_key = json.loads(key)
            parsed_value = None if value is None else json.loads(value)
            KeyType(parsed_key["keytype"])
        except (ValueError, TypeError, KeyError):
            return None
        if not isinstance(parsed_value, dict | None):
            return None
        return cls(parsed_key, parsed_value)


def schema_record(subject: str, version: int, value: dict[str, Any] | None) -> Record:
    return Record({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}, value)


def config_record(subject: str | None, level: str | None) -> Record:
    value = None if level is None else {"compatibilityLevel": level}
    return Record({"keytype": "CONFIG", "subject": subject, "magic": 0}, value)


def mode_record(subject: str | None, mode: str | None) -> Record:
    value = None if mode is None else {"mode": mode}
    return Record({"keytype": "MODE", "subject": subject, "magic": 0}, value)
