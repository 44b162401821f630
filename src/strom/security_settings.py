"""The authorizer's own settings (``super.users``, ``allow.everyone.if.no.acl.found``), which
Kafka defines in ``StandardAuthorizer`` rather than in its broker catalogue; the catalogued
security settings strom acts on are listed in ``strom.config_catalogued``."""

from __future__ import annotations

from typing import Final

from strom.config_types import ConfigType, Setting

__all__ = ["AUTHORIZER_SETTINGS", "STANDARD_AUTHORIZER"]

STANDARD_AUTHORIZER: Final = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
"""The one ``authorizer.class.name`` strom serves: ACLs from the metadata log."""

AUTHORIZER_SETTINGS: Final = (
    Setting(
        "super.users",
        ConfigType.STRING,
        None,
        "Principals the authorizer allows everything, ';'-separated (User:admin;User:broker).",
        read_only=True,
    ),
    Setting(
        "allow.everyone.if.no.acl.found",
        ConfigType.BOOLEAN,
        False,
        "Allow an operation on a resource no ACL names.",
        read_only=True,
    ),
)
