"""Schema types the registry accepts and what the rest of the registry needs of a schema: its
canonical text (what the registry stores and compares), its normalized text, and whether it can
read data written with another schema of its type.

A schema's references arrive as ``dependencies``: (reference name, schema text) pairs, each
dependency after the ones it uses itself, as ``state.RegistryState.resolve_references`` orders
them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Dependency", "InvalidSchemaError", "ParsedSchema", "Reference", "SchemaType"]


class SchemaType(StrEnum):
    AVRO = "AVRO"
    JSON = "JSON"
    PROTOBUF = "PROTOBUF"


@dataclass(frozen=True)
class Reference:
    """A schema's use of another subject's version under ``name`` (Avro: a full type name;
    JSON Schema: the URL its ``$ref`` uses; Protobuf: the imported file's path)."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class Dependency:
    """A referenced schema's text under the name the referring schema uses."""

    name: str
    text: str


class ParsedSchema(ABC):
    """A schema that parsed; raising ``InvalidSchemaError`` is the parsers' only way to fail."""

    schema_type: SchemaType

    @property
    @abstractmethod
    def canonical(self) -> str:
        """The text the registry stores: the input without insignificant differences
        (whitespace), so two registrations of one schema find each other."""

    @abstractmethod
    def normalized(self) -> str:
        """Canonical text that also ignores the order of what has no order (``normalize``)."""

    def default_errors(self) -> list[str]:
        """The default values their types refuse (Avro's field defaults; the other types
        have none to check)."""
        return []

    @abstractmethod
    def read_errors(self, writer: ParsedSchema) -> list[str]:
        """Why this schema cannot read data written with ``writer`` (empty: it can)."""


class InvalidSchemaError(ValueError):
    """The schema text does not parse as its type; the message says why."""
