"""The broker's authorizer: its settings, and one audit line per denial and interval."""

from __future__ import annotations

import logging

import pytest

from strom.config import ConfigError, ServerConfig
from strom.security.acls import AclIndex, AclOperation, ResourceType
from strom.security.principal import KafkaPrincipal
from strom.server.auth.authorizer import AUDIT_INTERVAL, Authorizer, authorizer_settings

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
BOB = KafkaPrincipal.user("bob")
ORDERS = (ResourceType.TOPIC, "orders")


def test_settings_come_from_the_server_config() -> None:
    assert authorizer_settings(ServerConfig()) is None
    settings = authorizer_settings(
        ServerConfig(
            {
                "authorizer.class.name": STANDARD,
                "super.users": "User:admin; User:broker",
                "allow.everyone.if.no.acl.found": "true",
            }
        )
    )
    assert settings is not None
    assert settings.super_users == {"User:admin", "User:broker"}
    assert settings.allow_everyone_if_no_acl_found
    with pytest.raises(ConfigError, match=r"authorizer\.class\.name"):
        authorizer_settings(ServerConfig({"authorizer.class.name": "kafka.AclAuthorizer"}))


def test_denials_are_audited_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    settings = authorizer_settings(ServerConfig({"authorizer.class.name": STANDARD}))
    assert settings is not None
    now = [0.0]
    authorizer = Authorizer(settings, lambda: AclIndex([]), now=lambda: now[0])
    caplog.set_level(logging.INFO, logger="kafka.authorizer.logger")
    for _ in range(3):
        assert not authorizer.authorize(BOB, "10.0.0.1", AclOperation.WRITE, ORDERS)
    assert not authorizer.authorize(BOB, "10.0.0.1", AclOperation.READ, ORDERS, audit=False)
    now[0] += AUDIT_INTERVAL
    authorizer.authorize(BOB, "10.0.0.1", AclOperation.WRITE, ORDERS)
    lines = [record.getMessage() for record in caplog.records]
    assert lines == [
        "Principal = User:bob is Denied operation = WRITE from host = 10.0.0.1 on resource = "
        "Topic:LITERAL:orders",
        "Principal = User:bob is Denied operation = WRITE from host = 10.0.0.1 on resource = "
        "Topic:LITERAL:orders (2 more since the last line)",
    ]
