"""ACLs as Kafka's ``StandardAuthorizer`` reads them: bindings, filters and the decision.

An ACL binding is a resource pattern (type, name, LITERAL or PREFIXED) and an entry (principal,
host, operation, ALLOW or DENY). :class:`AclIndex` answers "may this principal, from this host,
do this operation on this resource?" as ``StandardAuthorizerData.authorize``: super users may do
anything; a matching DENY wins over any ALLOW; an ALLOW of READ, WRITE, DELETE or ALTER implies
DESCRIBE, and one of ALTER_CONFIGS implies DESCRIBE_CONFIGS; a resource no ACL names at all is
allowed only with ``allow.everyone.if.no.acl.found``. The codes are Kafka's wire codes.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from strom.security.principal import KafkaPrincipal

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD",
    "AclBinding",
    "AclBindingFilter",
    "AclIndex",
    "AclOperation",
    "AclPermissionType",
    "AuthorizerSettings",
    "PatternType",
    "ResourceType",
    "parse_principal",
]

WILDCARD: Final = "*"
"""A resource name, principal name or host matching every one."""
CLUSTER_NAME: Final = "kafka-cluster"
"""The one cluster resource's name."""


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_IMPLIED_BY: Final[Mapping[AclOperation, frozenset[AclOperation]]] = {
    AclOperation.DESCRIBE: frozenset(
        {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}
"""Operations an ALLOW ACL of another operation grants too (never a DENY)."""


def parse_principal(text: str) -> KafkaPrincipal:
    """``User:alice`` -> its principal; ValueError without a type."""
    kind, sep, name = text.partition(":")
    if not sep or not kind:
        raise ValueError(f"Could not parse principal from `{text}` (no colon is present)")
    return KafkaPrincipal(kind, name)


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def invalid_reason(self) -> str | None:
        """Why the controller refuses to store it (``AclControlManager.validateNewAcl``)."""
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            return f"Invalid resourceType {self.resource_type.name}"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"Invalid patternType {self.pattern_type.name}"
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            return f"Invalid operation {self.operation.name}"
        if self.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            return f"Invalid permissionType {self.permission_type.name}"
        if not self.resource_name:
            return "Resource name should not be empty"
        try:
            parse_principal(self.principal)
        except ValueError as error:
            return str(error)
        return None

    def names(self, resource_name: str) -> bool:
        """Whether the pattern covers the resource name (literal, ``*`` or prefix)."""
        if self.pattern_type is PatternType.PREFIXED:
            return resource_name.startswith(self.resource_name)
        return self.resource_name in (WILDCARD, resource_name)

    def grants(self, operation: AclOperation) -> bool:
        """Whether the entry's operation is ``operation``, ALL, or (ALLOW only) implies it."""
        if self.operation in (AclOperation.ALL, operation):
            return True
        return self.permission_type is AclPermissionType.ALLOW and self.operation in (
            _IMPLIED_BY.get(operation, ())
        )

    def applies_to(self, principals: tuple[str, str], host: str) -> bool:
        """Whether the entry names one of the principals (itself, ``User:*``) and the host."""
        return self.principal in principals and self.host in (WILDCARD, host)


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls select: None or ANY matches every value; pattern type
    MATCH selects every pattern naming the resource (literal, wildcard or prefix)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def invalid_reason(self) -> str | None:
        """Why Kafka refuses the filter (``AclControlManager.validateFilter``)."""
        if self.pattern_type is PatternType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation is AclOperation.UNKNOWN or self.resource_type is ResourceType.UNKNOWN:
            return "Unknown operation or resource type."
        if self.permission_type is AclPermissionType.UNKNOWN:
            return "Unknown permission type."
        return None

    def matches(self, binding: AclBinding) -> bool:
        return (
            self.resource_type in (ResourceType.ANY, binding.resource_type)
            and self._matches_pattern(binding)
            and self.principal in (None, binding.principal)
            and self.host in (None, binding.host)
            and self.operation in (AclOperation.ANY, binding.operation)
            and self.permission_type in (AclPermissionType.ANY, binding.permission_type)
        )

    def _matches_pattern(self, binding: AclBinding) -> bool:
        if self.pattern_type is PatternType.MATCH:
            return self.resource_name is None or binding.names(self.resource_name)
        return self.pattern_type in (PatternType.ANY, binding.pattern_type) and (
            self.resource_name in (None, binding.resource_name)
        )


@dataclass(frozen=True, slots=True)
class AuthorizerSettings:
    """``super.users`` (principals, ``User:admin``) and ``allow.everyone.if.no.acl.found``."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


class AclIndex:
    """The ACLs of a metadata image, grouped by resource type for the authorizer's questions."""

    __slots__ = ("_by_type",)

    def __init__(self, bindings: Iterable[AclBinding]) -> None:
        by_type: defaultdict[ResourceType, list[AclBinding]] = defaultdict(list)
        for binding in bindings:
            by_type[binding.resource_type].append(binding)
        self._by_type: Mapping[ResourceType, tuple[AclBinding, ...]] = {
            kind: tuple(found) for kind, found in by_type.items()
        }

    def authorize(
        self,
        settings: AuthorizerSettings,
        *,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        """Whether ``principal`` from ``host`` may do ``operation`` on the resource."""
        if str(principal) in settings.super_users:
            return True
        principals = (str(principal), f"{principal.type}:{WILDCARD}")
        named = [b for b in self._by_type.get(resource_type, ()) if b.names(resource_name)]
        allowed = False
        for binding in named:
            if not binding.applies_to(principals, host) or not binding.grants(operation):
                continue
            if binding.permission_type is AclPermissionType.DENY:
                return False
            allowed = True
        return allowed or (not named and settings.allow_everyone_if_no_acl_found)

    def authorize_any(
        self,
        settings: AuthorizerSettings,
        *,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether the principal may do ``operation`` on at least one resource of the type that
        no DENY covers (Kafka's ``authorizeByResourceType``, KIP-679's WRITE on any topic)."""
        if str(principal) in settings.super_users:
            return True
        principals = (str(principal), f"{principal.type}:{WILDCARD}")
        bindings = self._by_type.get(resource_type, ())
        applying = [b for b in bindings if b.applies_to(principals, host) and b.grants(operation)]
        denies = [b for b in applying if b.permission_type is AclPermissionType.DENY]
        for allow in applying:
            if allow.permission_type is AclPermissionType.ALLOW and not any(
                _covers(deny, allow) for deny in denies
            ):
                return True
        return not bindings and settings.allow_everyone_if_no_acl_found

    def __len__(self) -> int:
        return sum(len(found) for found in self._by_type.values())


def _covers(deny: AclBinding, allow: AclBinding) -> bool:
    """Whether ``deny`` forbids every resource ``allow`` grants."""
    if deny.pattern_type is PatternType.LITERAL and deny.resource_name == WILDCARD:
        return True
    if deny.pattern_type is PatternType.PREFIXED:
        return allow.resource_name.startswith(deny.resource_name)
    return allow.pattern_type is PatternType.LITERAL and allow.resource_name == deny.resource_name
