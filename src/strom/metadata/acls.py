"""The ACLs of the metadata image (``AclsImage``) and their changes (``AclsDelta``).

Kafka's ``AclsImage``/``AclsDelta``: ``AccessControlEntryRecord`` adds an ACL under its id,
``RemoveAccessControlEntryRecord`` removes one; the image keeps an
:class:`~strom.security.acls.AclIndex` of them for the authorizer, rebuilt only when they change.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from strom.metadata.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord
from strom.security.acls import (
    AclBinding,
    AclIndex,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

__all__ = ["AclsDelta", "AclsImage", "MetadataAclError", "acl_record", "binding_of"]


class MetadataAclError(ValueError):
    """A record that contradicts the image's ACLs (an id twice, an unknown id, a bad code)."""


@dataclass(frozen=True)
class AclsImage:
    """Every ACL by its id, and their index."""

    acls: Mapping[uuid.UUID, AclBinding] = field(default_factory=dict)
    index: AclIndex = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "acls", MappingProxyType(dict(self.acls)))
        object.__setattr__(self, "index", AclIndex(self.acls.values()))

    def records(self) -> Iterator[AccessControlEntryRecord]:
        for acl_id, binding in self.acls.items():
            yield acl_record(acl_id, binding)


def acl_record(acl_id: uuid.UUID, binding: AclBinding) -> AccessControlEntryRecord:
    """The record that stores ``binding`` under ``acl_id``."""
    return AccessControlEntryRecord(
        id=acl_id,
        resource_type=binding.resource_type,
        resource_name=binding.resource_name,
        pattern_type=binding.pattern_type,
        principal=binding.principal,
        host=binding.host,
        operation=binding.operation,
        permission_type=binding.permission_type,
    )


def binding_of(record: AccessControlEntryRecord) -> AclBinding:
    """The ACL a record holds; MetadataAclError for codes Kafka never stores."""
    try:
        binding = AclBinding(
            resource_type=ResourceType(record.resource_type),
            resource_name=record.resource_name,
            pattern_type=PatternType(record.pattern_type),
            principal=record.principal,
            host=record.host,
            operation=AclOperation(record.operation),
            permission_type=AclPermissionType(record.permission_type),
        )
    except ValueError as error:
        raise MetadataAclError(f"ACL {record.id}: {error}") from None
    reason = binding.invalid_reason()
    if reason is not None:
        raise MetadataAclError(f"ACL {record.id}: {reason}")
    return binding


class AclsDelta:
    def __init__(self, image: AclsImage) -> None:
        self.image = image
        self._changes: dict[uuid.UUID, AclBinding | None] = {}

    @property
    def has_changes(self) -> bool:
        return bool(self._changes)

    def _current(self, acl_id: uuid.UUID) -> AclBinding | None:
        if acl_id in self._changes:
            return self._changes[acl_id]
        return self.image.acls.get(acl_id)

    def replay(self, record: AccessControlEntryRecord) -> None:
        if self._current(record.id) is not None:
            raise MetadataAclError(f"a second ACL with id {record.id}")
        self._changes[record.id] = binding_of(record)

    def replay_remove(self, record: RemoveAccessControlEntryRecord) -> None:
        if self._current(record.id) is None:
            raise MetadataAclError(f"no ACL with id {record.id} to remove")
        self._changes[record.id] = None

    def apply(self) -> AclsImage:
        if not self._changes:
            return self.image
        acls = dict(self.image.acls)
        for acl_id, binding in self._changes.items():
            if binding is None:
                acls.pop(acl_id, None)
            else:
                acls[acl_id] = binding
        return AclsImage(acls)
