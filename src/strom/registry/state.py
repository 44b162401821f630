"""The registry's state: what replaying ``_schemas`` from the start yields, and the read side of
the REST API over it. ``RegistryState.apply`` is the only way in; it never fails on a record it
does not understand (another registry's, a newer format), it skips it.

Schema ids are global: one schema text (with its type and references) has one id wherever it is
registered, and an id is never given to another schema, even after every version that used it
was deleted for good.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from strom.registry.compatibility import CompatibilityLevel
from strom.registry.errors import RegistryError
from strom.registry.records import KeyType, Record
from strom.registry.schema_types import Dependency, Reference, SchemaType

__all__ = ["Mode", "RegistryState", "StoredSchema", "StoredVersion", "parse_version"]

_MAX_VERSION = 2**31 - 1


class Mode(StrEnum):
    READWRITE = "READWRITE"
    READONLY = "READONLY"
    IMPORT = "IMPORT"


@dataclass(frozen=True)
class StoredSchema:
    """A registered schema under its global id."""

    id: int
    schema_type: SchemaType
    text: str
    references: tuple[Reference, ...] = ()

    @property
    def content_key(self) -> tuple[str, str, tuple[Reference, ...]]:
        return (self.schema_type.value, self.text, self.references)

    def to_json(self) -> dict[str, object]:
        """Confluent's schema body: ``schemaType`` only when not Avro, references when any."""
        body: dict[str, object] = {}
        if self.schema_type is not SchemaType.AVRO:
            body["schemaType"] = self.schema_type.value
        if self.references:
            body["references"] = [reference.to_json() for reference in self.references]
        body["schema"] = self.text
        return body


@dataclass(frozen=True)
class StoredVersion:
    """One version of a subject; ``deleted`` when soft-deleted."""

    subject: str
    version: int
    schema: StoredSchema
    deleted: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "subject": self.subject,
            "version": self.version,
            "id": self.schema.id,
            **self.schema.to_json(),
        }

    def to_record_value(self) -> dict[str, object]:
        return {**self.to_json(), "deleted": self.deleted}


def parse_version(text: str | int) -> int | None:
    """A version path segment: a number in [1, 2^31-1], or None for "latest" (and -1)."""
    if text in ("latest", "-1", -1):
        return None
    try:
        version = int(text)
    except ValueError:
        raise RegistryError.invalid_version(text) from None
    if not 1 <= version <= _MAX_VERSION:
        raise RegistryError.invalid_version(text)
    return version


@dataclass
class RegistryState:
    """Subjects, schemas, configs and modes, as the records applied so far made them."""

    default_compatibility: CompatibilityLevel = CompatibilityLevel.BACKWARD
    validate_defaults: bool = False  # schema.providers.avro.validate.defaults
    subjects: dict[str, dict[int, StoredVersion]] = field(default_factory=dict)
    schemas: dict[int, StoredSchema] = field(default_factory=dict)
    configs: dict[str | None, CompatibilityLevel] = field(default_factory=dict)
    modes: dict[str | None, Mode] = field(default_factory=dict)
    _by_content: dict[tuple[str, str, tuple[Reference, ...]], int] = field(default_factory=dict)

    # -- applying records ------------------------------------------------------------------
    def apply(self, record: Record) -> None:
        """Apply one record of ``_schemas``; a malformed one changes nothing."""
        try:
            match record.key_type:
                case KeyType.SCHEMA:
                    self._apply_schema(record)
                case KeyType.CONFIG:
                    self._apply_setting(record, self.configs, "compatibilityLevel")
                case KeyType.MODE:
                    self._apply_setting(record, self.modes, "mode")
                case _:
                    return
        except (KeyError, TypeError, ValueError):
            return

    def _apply_schema(self, record: Record) -> None:
        subject, version = str(record.key["subject"]), int(record.key["version"])
        if record.value is None:
            versions = self.subjects.get(subject, {})
            versions.pop(version, None)
            if not versions:
                self.subjects.pop(subject, None)
            return
        value = record.value
        references = tuple(
            Reference(str(ref["name"]), str(ref["subject"]), int(ref["version"]))
            for ref in value.get("references") or ()
        )
        stored = StoredSchema(
            int(value["id"]),
            SchemaType(value.get("schemaType") or "AVRO"),
            str(value["schema"]),
            references,
        )
        stored = self.schemas.setdefault(stored.id, stored)
        self._by_content.setdefault(stored.content_key, stored.id)
        self.subjects.setdefault(subject, {})[version] = StoredVersion(
            subject, version, stored, bool(value.get("deleted", False))
        )

    @staticmethod
    def _apply_setting(
        record: Record,
        settings: dict[str | None, CompatibilityLevel] | dict[str | None, Mode],
        name: str,
    ) -> None:
        subject = record.key.get("subject")
        if record.value is None:
            settings.pop(subject, None)
            return
        kind = CompatibilityLevel if name == "compatibilityLevel" else Mode
        settings[subject] = kind(record.value[name])  # type: ignore[assignment]

    # -- reading ---------------------------------------------------------------------------
    @property
    def next_id(self) -> int:
        return max(self.schemas, default=0) + 1

    def id_for(self, content_key: tuple[str, str, tuple[Reference, ...]]) -> int | None:
        return self._by_content.get(content_key)

    def compatibility(self, subject: str | None) -> CompatibilityLevel:
        """The level in force for ``subject``: its own, else the global one, else the default."""
        return self.configs.get(subject) or self.configs.get(None) or self.default_compatibility

    def mode(self, subject: str | None) -> Mode:
        return self.modes.get(subject) or self.modes.get(None) or Mode.READWRITE

    def subject_names(self, *, deleted: bool = False, prefix: str = "") -> list[str]:
        return sorted(
            name
            for name, versions in self.subjects.items()
            if name.startswith(prefix) and any(deleted or not v.deleted for v in versions.values())
        )

    def versions(self, subject: str, *, deleted: bool = False) -> list[StoredVersion]:
        """A subject's versions in order (soft-deleted ones too if ``deleted``); 40401 if
        there are none."""
        found = [
            stored
            for _, stored in sorted(self.subjects.get(subject, {}).items())
            if deleted or not stored.deleted
        ]
        if not found:
            raise RegistryError.subject_not_found(subject)
        return found

    def version(self, subject: str, version: str | int, *, deleted: bool = False) -> StoredVersion:
        """One version ("latest" is the newest live one); 40401, 40402 or 42202 if none."""
        number = parse_version(version)
        versions = self.versions(subject, deleted=deleted)
        if number is None:
            return versions[-1]
        for stored in versions:
            if stored.version == number:
                return stored
        raise RegistryError.version_not_found(number)

    def schema(self, schema_id: int) -> StoredSchema:
        """A schema by id, while some version (live or soft-deleted) uses it; else 40403."""
        stored = self.schemas.get(schema_id)
        if stored is None or not any(True for _ in self.uses(schema_id, deleted=True)):
            raise RegistryError.schema_not_found()
        return stored

    def uses(self, schema_id: int, *, deleted: bool = False) -> Iterator[StoredVersion]:
        """The versions that use a schema id."""
        for versions in self.subjects.values():
            for stored in versions.values():
                if stored.schema.id == schema_id and (deleted or not stored.deleted):
                    yield stored

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of the live schemas that reference ``subject`` ``version``."""
        target = Reference("", subject, version)
        return sorted(
            {
                stored.schema.id
                for versions in self.subjects.values()
                for stored in versions.values()
                if not stored.deleted
                and any(
                    (ref.subject, ref.version) == (target.subject, target.version)
                    for ref in stored.schema.references
                )
            }
        )

    def dependencies(self, references: tuple[Reference, ...]) -> list[Dependency]:
        """The texts of a schema's references, each after its own; 42201 for a reference to
        a missing subject or version."""
        ordered: list[Dependency] = []
        seen: set[tuple[str, int]] = set()

        def visit(reference: Reference) -> None:
            if (reference.subject, reference.version) in seen:
                return
            seen.add((reference.subject, reference.version))
            try:
                stored = self.version(reference.subject, reference.version)
            except RegistryError as error:
                raise RegistryError.invalid_schema(
                    f"reference {reference.name!r} to {reference.subject!r} version "
                    f"{reference.version}: {error.message}"
                ) from None
            for inner in stored.schema.references:
                visit(inner)
            ordered.append(Dependency(reference.name, stored.schema.text))

        for reference in references:
            visit(reference)
        return ordered
