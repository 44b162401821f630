"""The StandardAuthorizer's decision (``strom.security.acls``), case by case as Kafka's
``StandardAuthorizerTest`` states it."""

from __future__ import annotations

import pytest

from strom.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclIndex,
    AclOperation,
    AclPermissionType,
    AuthorizerSettings,
    PatternType,
    ResourceType,
)
from strom.security.principal import KafkaPrincipal

ALICE = KafkaPrincipal.user("alice")
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC = ResourceType.TOPIC


def acl(
    name: str,
    operation: AclOperation,
    permission: AclPermissionType = ALLOW,
    *,
    pattern: PatternType = LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    resource_type: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def allowed(
    bindings: list[AclBinding],
    operation: AclOperation,
    name: str = "orders",
    *,
    principal: KafkaPrincipal = ALICE,
    host: str = "10.0.0.1",
    settings: AuthorizerSettings | None = None,
) -> bool:
    return AclIndex(bindings).authorize(
        settings or AuthorizerSettings(),
        principal=principal,
        host=host,
        operation=operation,
        resource_type=TOPIC,
        resource_name=name,
    )


def test_literal_prefixed_and_wildcard_names_match() -> None:
    assert allowed([acl("orders", AclOperation.READ)], AclOperation.READ)
    assert not allowed([acl("orders", AclOperation.READ)], AclOperation.READ, "orders2")
    assert allowed([acl("ord", AclOperation.READ, pattern=PREFIXED)], AclOperation.READ)
    assert not allowed([acl("ord", AclOperation.READ)], AclOperation.READ)
    assert allowed([acl("*", AclOperation.READ)], AclOperation.READ, "anything")


def test_deny_wins_over_allow() -> None:
    bindings = [
        acl("ord", AclOperation.ALL, pattern=PREFIXED),
        acl("orders", AclOperation.WRITE, DENY),
    ]
    assert allowed(bindings, AclOperation.READ)
    assert not allowed(bindings, AclOperation.WRITE)


@pytest.mark.parametrize(
    "granted", [AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER]
)
def test_describe_is_implied_by_read_write_delete_alter(granted: AclOperation) -> None:
    assert allowed([acl("orders", granted)], AclOperation.DESCRIBE)


def test_implication_only_allows_never_denies() -> None:
    assert allowed([acl("orders", AclOperation.ALTER_CONFIGS)], AclOperation.DESCRIBE_CONFIGS)
    bindings = [acl("orders", AclOperation.ALL), acl("orders", AclOperation.READ, DENY)]
    assert allowed(bindings, AclOperation.DESCRIBE)
    assert not allowed([acl("orders", AclOperation.CREATE)], AclOperation.DESCRIBE)


def test_principals_and_hosts() -> None:
    everyone = acl("orders", AclOperation.READ, principal="User:*")
    assert allowed([everyone], AclOperation.READ)
    assert not allowed([acl("orders", AclOperation.READ, principal="User:bob")], AclOperation.READ)
    on_host = acl("orders", AclOperation.READ, host="10.0.0.2")
    assert not allowed([on_host], AclOperation.READ)
    assert allowed([on_host], AclOperation.READ, host="10.0.0.2")


def test_super_users_and_the_no_acl_default() -> None:
    assert allowed([], AclOperation.WRITE, settings=AuthorizerSettings(frozenset({"User:alice"})))
    assert not allowed([], AclOperation.WRITE)
    open_settings = AuthorizerSettings(allow_everyone_if_no_acl_found=True)
    assert allowed([], AclOperation.WRITE, settings=open_settings)
    someone_elses = [acl("orders", AclOperation.READ, principal="User:bob")]
    assert not allowed(someone_elses, AclOperation.WRITE, settings=open_settings)


def test_authorize_any_for_idempotent_producers() -> None:
    def any_write(bindings: list[AclBinding]) -> bool:
        return AclIndex(bindings).authorize_any(
            AuthorizerSettings(),
            principal=ALICE,
            host="h",
            operation=AclOperation.WRITE,
            resource_type=TOPIC,
        )

    assert any_write([acl("orders", AclOperation.WRITE)])
    assert not any_write([acl("orders", AclOperation.READ)])
    assert not any_write(
        [acl("orders", AclOperation.WRITE), acl("ord", AclOperation.WRITE, DENY, pattern=PREFIXED)]
    )
    assert not any_write([acl("orders", AclOperation.WRITE), acl("*", AclOperation.WRITE, DENY)])


def test_filters_select_bindings() -> None:
    prefixed = acl("ord", AclOperation.READ, pattern=PREFIXED)
    literal = acl("orders", AclOperation.WRITE, DENY)
    assert AclBindingFilter().matches(prefixed)
    match = AclBindingFilter(resource_name="orders", pattern_type=PatternType.MATCH)
    assert match.matches(prefixed) and match.matches(literal)
    exact = AclBindingFilter(resource_name="ord", pattern_type=LITERAL)
    assert not exact.matches(prefixed)
    assert AclBindingFilter(permission_type=DENY).matches(literal)
    assert not AclBindingFilter(principal="User:bob").matches(literal)


def test_invalid_bindings_are_named() -> None:
    assert acl("orders", AclOperation.ANY).invalid_reason() == "Invalid operation ANY"
    assert acl("", AclOperation.READ).invalid_reason() == "Resource name should not be empty"
    no_type = acl("orders", AclOperation.READ, principal="alice")
    assert no_type.invalid_reason() is not None
    match = acl("orders", AclOperation.READ, pattern=PatternType.MATCH)
    assert match.invalid_reason() == "Invalid patternType MATCH"
