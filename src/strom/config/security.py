"""Security settings Kafka defines outside its broker catalogue: the authorizer's own
(``super.users``, ``allow.everyone.if.no.acl.found``, from ``StandardAuthorizer``) and the JAAS
file, a JVM property on Kafka (``java.security.auth.login.config``); the catalogued security
settings strom acts on are listed in ``strom.config.catalogued``."""

from __future__ import annotations

from typing import Final

from strom.config.setting import ConfigType, Setting

__all__ = ["AUTHORIZER_SETTINGS", "LOGIN_CONFIG_SETTING", "STANDARD_AUTHORIZER"]

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

LOGIN_CONFIG_SETTING: Final = Setting(
    "java.security.auth.login.config",
    ConfigType.STRING,
    None,
    "The JAAS file of the listeners' SASL logins (KafkaServer sections), when their "
    "sasl.jaas.config is not set; also read from -D... in KAFKA_OPTS.",
    read_only=True,
)
