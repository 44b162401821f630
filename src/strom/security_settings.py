"""The security settings beside ``strom.config``: Kafka's catalogued ones strom acts on, and the
authorizer's own (``super.users``, ``allow.everyone.if.no.acl.found``), which Kafka defines in
``StandardAuthorizer`` rather than in its broker catalogue."""

from __future__ import annotations

from typing import Final

from strom.config_types import ConfigType, Setting

__all__ = ["ACTED_ON_AS_CATALOGUED", "AUTHORIZER_SETTINGS", "STANDARD_AUTHORIZER"]

STANDARD_AUTHORIZER: Final = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
"""The one ``authorizer.class.name`` strom serves: ACLs from the metadata log."""

ACTED_ON_AS_CATALOGUED: Final = frozenset(
    {
        "authorizer.class.name",
        "connections.max.reauth.ms",
        "sasl.enabled.mechanisms",
        "sasl.jaas.config",
        "sasl.mechanism.controller.protocol",
        "sasl.mechanism.inter.broker.protocol",
        "sasl.server.max.receive.size",
        "ssl.cipher.suites",
        "ssl.client.auth",
        "ssl.enabled.protocols",
        "ssl.endpoint.identification.algorithm",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.principal.mapping.rules",
        "ssl.truststore.certificates",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
    }
)
"""Kafka's settings strom acts on with Kafka's own definition (the security settings)."""

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
