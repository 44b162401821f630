"""The broker's and controller's authorizer: Kafka's ``StandardAuthorizer`` over the ACLs of the
committed metadata image, with an audit line for each denial.

Turned on by ``authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer``;
without it a registry has no authorizer and every ``RequestContext.authorize`` is one attribute
check. Denials are logged on the ``kafka.authorizer.logger`` logger (Kafka's name), at most once
per ``AUDIT_INTERVAL`` seconds for one (principal, host, operation, resource), with the number of
repeats left out since the last line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final

from strom.config import ConfigError, ServerConfig
from strom.config.security import STANDARD_AUTHORIZER
from strom.security.acls import (
    AclIndex,
    AclOperation,
    AuthorizerSettings,
    PatternType,
    ResourceType,
)
from strom.security.principal import KafkaPrincipal

__all__ = ["AUDIT_INTERVAL", "Authorizer", "authorizer_settings"]

audit_log = logging.getLogger("kafka.authorizer.logger")

AUDIT_INTERVAL: Final = 10.0
"""Seconds between two audit lines of the same denial."""
_MAX_AUDIT_KEYS: Final = 10_000

_AuditKey = tuple[str, str, AclOperation, ResourceType, str]


def authorizer_settings(config: ServerConfig) -> AuthorizerSettings | None:
    """The authorizer's settings, or None when ``authorizer.class.name`` is empty; ConfigError
    for another authorizer class."""
    class_name = config.get_str("authorizer.class.name")
    if not class_name:
        return None
    if class_name != STANDARD_AUTHORIZER:
        raise ConfigError("authorizer.class.name", f"only {STANDARD_AUTHORIZER} is supported")
    super_users = config["super.users"]
    names = super_users.split(";") if isinstance(super_users, str) else []
    return AuthorizerSettings(
        super_users=frozenset(name.strip() for name in names if name.strip()),
        allow_everyone_if_no_acl_found=config.get_bool("allow.everyone.if.no.acl.found"),
    )


class Authorizer:
    """Decides with the current ACLs (``acls()`` reads the committed image's index)."""

    def __init__(
        self,
        settings: AuthorizerSettings,
        acls: Callable[[], AclIndex],
        *,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._acls = acls
        self._now = now
        self._audited: dict[_AuditKey, tuple[float, int]] = {}

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource: tuple[ResourceType, str],
        *,
        audit: bool = True,
    ) -> bool:
        """Whether the principal may; a denial is audited unless ``audit`` is False (Metadata
        and the other APIs that only filter what they show)."""
        resource_type, name = resource
        allowed = self._acls().authorize(
            self.settings,
            principal=principal,
            host=host,
            operation=operation,
            resource_type=resource_type,
            resource_name=name,
        )
        if not allowed and audit:
            self._audit((str(principal), host, operation, resource_type, name))
        return allowed

    def authorize_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether the principal may do ``operation`` on some resource of the type."""
        return self._acls().authorize_any(
            self.settings,
            principal=principal,
            host=host,
            operation=operation,
            resource_type=resource_type,
        )

    def _audit(self, key: _AuditKey) -> None:
        now = self._now()
        last, suppressed = self._audited.get(key, (float("-inf"), 0))
        if now - last < AUDIT_INTERVAL:
            self._audited[key] = (last, suppressed + 1)
            return
        if len(self._audited) >= _MAX_AUDIT_KEYS:
            self._audited.clear()
        self._audited[key] = (now, 0)
        principal, host, operation, resource_type, name = key
        audit_log.info(
            "Principal = %s is Denied operation = %s from host = %s on resource = %s:%s:%s%s",
            principal,
            operation.name,
            host,
            _TYPE_NAMES.get(resource_type, resource_type.name),
            PatternType.LITERAL.name,
            name,
            f" ({suppressed} more since the last line)" if suppressed else "",
        )


_TYPE_NAMES: Final = {
    ResourceType.TOPIC: "Topic",
    ResourceType.GROUP: "Group",
    ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId",
    ResourceType.DELEGATION_TOKEN: "DelegationToken",
    ResourceType.USER: "User",
}
