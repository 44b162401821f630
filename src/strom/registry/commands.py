"""The write side of the REST API, without I/O: each command checks a request against the state
and returns the ``_schemas`` records that carry it out (none when there is nothing to change),
or raises the ``RegistryError`` Confluent answers with. The service writes the records and
replies once it has applied them itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from strom.registry.compatibility import CompatibilityLevel, incompatibilities
from strom.registry.errors import RegistryError
from strom.registry.parsing import parse_schema
from strom.registry.records import Record, config_record, mode_record, schema_record
from strom.registry.schema_types import (
    InvalidSchemaError,
    ParsedSchema,
    Reference,
    SchemaType,
)
from strom.registry.state import Mode, RegistryState, StoredSchema, StoredVersion, parse_version

__all__ = ["Registration", "SchemaRequest", "Writes"]


@dataclass(frozen=True)
class Registration:
    """What registering decided: the schema's id and the records to write (none: it was
    registered already)."""

    id: int
    records: tuple[Record, ...]


@dataclass(frozen=True)
class SchemaRequest:
    """The body of a register, lookup or compatibility request."""

    text: str
    schema_type: SchemaType
    references: tuple[Reference, ...] = ()
    id: int | None = None
    version: int | None = None

    @classmethod
    def from_json(cls, body: Any) -> SchemaRequest:
        """Parse a request body; 42201 for a missing schema or an unknown type, 422 for
        fields of the wrong JSON type."""
        if not isinstance(body, dict):
            raise RegistryError.unprocessable("Unrecognized request body: expected an object")
        text = body.get("schema")
        if not isinstance(text, str) or not text.strip():
            raise RegistryError.invalid_schema("Empty schema")
        type_name = body.get("schemaType") or "AVRO"
        try:
            schema_type = SchemaType(type_name)
        except ValueError:
            raise RegistryError.invalid_schema(f"Invalid schema type {type_name}") from None
        try:
            references = tuple(
                Reference(str(ref["name"]), str(ref["subject"]), int(ref["version"]))
                for ref in body.get("references") or ()
            )
            schema_id = None if body.get("id") in (None, -1, 0) else int(body["id"])
            version = None if body.get("version") in (None, -1, 0) else int(body["version"])
        except (KeyError, TypeError, ValueError):
            raise RegistryError.unprocessable("Unrecognized field in request body") from None
        return cls(text, schema_type, references, schema_id, version)


class Writes:
    """The commands, over one state (the primary's, up to date)."""

    def __init__(self, state: RegistryState) -> None:
        self.state = state

    # -- schemas ---------------------------------------------------------------------------
    def parse(
        self, request: SchemaRequest, *, normalize: bool = False, new: bool = False
    ) -> StoredSchema:
        """The request's schema as it would be stored (id 0: not known yet); 42201 if it
        does not parse or a reference is missing, or if it is ``new`` (registered without an
        id, or checked for compatibility) and a default does not fit (``validate_defaults``)."""
        dependencies = self.state.dependencies(request.references)
        try:
            parsed = parse_schema(request.schema_type, request.text, dependencies)
        except InvalidSchemaError as error:
            raise RegistryError.invalid_schema(str(error)) from None
        if new and self.state.validate_defaults and (wrong := parsed.default_errors()):
            raise RegistryError.invalid_schema(wrong[0])
        text = parsed.normalized() if normalize else parsed.canonical
        candidate = StoredSchema(0, request.schema_type, text, request.references)
        known = self.state.id_for(candidate.content_key)
        return candidate if known is None else StoredSchema(known, *_fields(candidate))

    def parsed(self, stored: StoredSchema) -> ParsedSchema:
        """A stored schema, parsed again (its references resolve: they were checked)."""
        dependencies = self.state.dependencies(stored.references)
        return parse_schema(stored.schema_type, stored.text, dependencies)

    def lookup(
        self, subject: str, request: SchemaRequest, *, normalize: bool, deleted: bool
    ) -> StoredVersion:
        """The version of ``subject`` that has the request's schema; 40401 or 40403."""
        versions = self.state.versions(subject, deleted=deleted)
        wanted = self.parse(request, normalize=normalize).content_key
        for stored in reversed(versions):
            if stored.schema.content_key == wanted:
                return stored
            if normalize and self._normalized(stored.schema) == wanted:
                return stored
        raise RegistryError.schema_not_found()

    def _normalized(self, stored: StoredSchema) -> tuple[str, str, tuple[Reference, ...]]:
        return (stored.schema_type.value, self.parsed(stored).normalized(), stored.references)

    def register(self, subject: str, request: SchemaRequest, *, normalize: bool) -> Registration:
        mode = self.state.mode(subject)
        if mode is Mode.READONLY:
            raise RegistryError.not_permitted(f"Subject {subject} is in read-only mode")
        if request.id is not None and mode is not Mode.IMPORT:
            raise RegistryError.not_permitted(
                f"Subject {subject} is not in import mode: a schema id cannot be given"
            )
        candidate = self.parse(request, normalize=normalize, new=request.id is None)
        live = [v for v in self.state.subjects.get(subject, {}).values() if not v.deleted]
        for stored in live:
            if stored.schema.content_key == candidate.content_key:
                return Registration(stored.schema.id, ())
        if mode is Mode.IMPORT:
            schema_id = self._import_id(request, candidate)
        else:
            level = self.state.compatibility(subject)
            history = sorted(live, key=_by_version)
            checked = [] if level is CompatibilityLevel.NONE else history
            checked = checked if level.transitive else checked[-1:]  # parse only what is checked
            problems = incompatibilities(
                level, self.parsed(candidate), [(v.version, self.parsed(v.schema)) for v in checked]
            )
            if problems:
                raise RegistryError.incompatible(
                    "Schema being registered is incompatible with an earlier schema for subject "
                    f'"{subject}", details: [{", ".join(problems)}]'
                )
            schema_id = candidate.id or self.state.next_id
        every = self.state.subjects.get(subject, {})
        version = request.version or max(every, default=0) + 1
        if version in every:
            raise RegistryError.not_permitted(f"Version {version} of {subject} already exists")
        stored = StoredVersion(
            subject,
            version,
            StoredSchema(schema_id, candidate.schema_type, candidate.text, candidate.references),
        )
        return Registration(schema_id, (schema_record(subject, version, stored.to_record_value()),))

    def _import_id(self, request: SchemaRequest, candidate: StoredSchema) -> int:
        if request.id is None:
            return candidate.id or self.state.next_id
        existing = self.state.schemas.get(request.id)
        if existing is not None and existing.content_key != candidate.content_key:
            raise RegistryError.not_permitted(
                f"Overwrite new schema with id {request.id} is not permitted."
            )
        return request.id

    def check(
        self, subject: str, version: str | None, request: SchemaRequest, *, normalize: bool
    ) -> list[str]:
        """Why the request's schema fails the subject's level against one version (or, with
        ``version`` None, against the versions the level names); empty if it passes."""
        candidate = self.parse(request, normalize=normalize, new=True)
        level = self.state.compatibility(subject)
        if version is None:
            live = self.state.subjects.get(subject, {})
            targets = [v for v in sorted(live.values(), key=_by_version) if not v.deleted]
        else:
            targets = [self.state.version(subject, version)]
        if version is not None:  # one named version: the level's plain (not transitive) form
            level = CompatibilityLevel(level.removesuffix("_TRANSITIVE"))
        return incompatibilities(
            level,
            self.parsed(candidate),
            [(v.version, self.parsed(v.schema)) for v in targets],
        )

    # -- deleting --------------------------------------------------------------------------
    def delete_version(
        self, subject: str, version: str, *, permanent: bool
    ) -> tuple[int, tuple[Record, ...]]:
        self._writable(subject)
        number = parse_version(version)
        every = self.state.versions(subject, deleted=True)
        if number is None:
            live = [v for v in every if not v.deleted]
            if not live and not permanent:
                raise RegistryError.subject_soft_deleted(subject)
            target = (live or every)[-1]
        else:
            found = [v for v in every if v.version == number]
            if not found:
                raise RegistryError.version_not_found(number)
            target = found[0]
        if self.state.referenced_by(subject, target.version):
            raise RegistryError.referenced(
                f"One or more references exist to the schema {{subject={subject},"
                f"version={target.version}}}"
            )
        if permanent:
            if not target.deleted:
                raise RegistryError.version_not_soft_deleted(subject, target.version)
            return target.version, (schema_record(subject, target.version, None),)
        if target.deleted:
            raise RegistryError.version_soft_deleted(subject, target.version)
        soft = StoredVersion(subject, target.version, target.schema, deleted=True)
        return target.version, (schema_record(subject, target.version, soft.to_record_value()),)

    def delete_subject(self, subject: str, *, permanent: bool) -> tuple[list[int], list[Record]]:
        self._writable(subject)
        every = self.state.versions(subject, deleted=True)
        live = [v for v in every if not v.deleted]
        for stored in every:
            if self.state.referenced_by(subject, stored.version):
                raise RegistryError.referenced(
                    f"One or more references exist to the schema {{subject={subject},"
                    f"version={stored.version}}}"
                )
        if permanent:
            if live:
                raise RegistryError.subject_not_soft_deleted(subject)
            records = [schema_record(subject, v.version, None) for v in every]
            if subject in self.state.configs:
                records.append(config_record(subject, None))
            if subject in self.state.modes:
                records.append(mode_record(subject, None))
            return [v.version for v in every], records
        if not live:
            raise RegistryError.subject_soft_deleted(subject)
        records = [
            schema_record(
                subject,
                v.version,
                StoredVersion(subject, v.version, v.schema, deleted=True).to_record_value(),
            )
            for v in live
        ]
        return [v.version for v in live], records

    def _writable(self, subject: str) -> None:
        if self.state.mode(subject) is Mode.READONLY:
            raise RegistryError.not_permitted(f"Subject {subject} is in read-only mode")

    # -- config and mode -------------------------------------------------------------------
    def set_compatibility(self, subject: str | None, body: Any) -> tuple[str, Record]:
        level = body.get("compatibility") if isinstance(body, dict) else None
        try:
            parsed = CompatibilityLevel(str(level).upper())
        except ValueError:
            raise RegistryError.invalid_compatibility(level) from None
        return parsed.value, config_record(subject, parsed.value)

    def delete_compatibility(self, subject: str | None) -> tuple[str, Record]:
        if subject is not None and subject not in self.state.configs:
            raise RegistryError.subject_not_found(subject)
        return self.state.compatibility(subject).value, config_record(subject, None)

    def set_mode(self, subject: str | None, body: Any, *, force: bool) -> tuple[str, Record]:
        mode = body.get("mode") if isinstance(body, dict) else None
        try:
            parsed = Mode(str(mode).upper())
        except ValueError:
            raise RegistryError.invalid_mode(mode) from None
        if parsed is Mode.IMPORT and not force:
            in_use = (
                self.state.subject_names()
                if subject is None
                else ([subject] if subject in self.state.subject_names() else [])
            )
            if in_use:
                raise RegistryError.not_permitted("Cannot import since found existing subjects")
        return parsed.value, mode_record(subject, parsed.value)

    def delete_mode(self, subject: str) -> tuple[str, Record]:
        if subject not in self.state.modes:
            raise RegistryError.subject_not_found(subject)
        return self.state.mode(subject).value, mode_record(subject, None)


def _by_version(stored: StoredVersion) -> int:
    return stored.version


def _fields(stored: StoredSchema) -> tuple[SchemaType, str, tuple[Reference, ...]]:
    return stored.schema_type, stored.text, stored.references
