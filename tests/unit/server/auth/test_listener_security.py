"""Each listener's security from the settings, and the one-line errors of bad settings."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from strom.config import ConfigError, ServerConfig
from strom.server.auth.listener_security import ListenerSecurity, client_security, listener_security
from strom.server.configs.node_config import NodeConfig
from strom.testing.certificates import CertificateAuthority

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def security_of(settings: dict[str, str], name: str = "SASL_PLAINTEXT") -> ListenerSecurity:
    config = ServerConfig(settings)
    node = NodeConfig.from_config(config)
    listener = next(listener for listener in node.listeners if listener.name == name)
    return listener_security(config, listener, scram_credentials=lambda m, u: None)


SASL = {"listeners": "SASL_PLAINTEXT://a:1"}
JWKS = {
    "sasl.enabled.mechanisms": "OAUTHBEARER",
    "sasl.oauthbearer.jwks.endpoint.url": "file:///nonexistent/jwks.json",
}


def test_plaintext_has_nothing() -> None:
    security = security_of({}, "PLAINTEXT")
    assert security.ssl_context is None and security.sasl is None


def test_plain_users_come_from_the_listeners_jaas_config() -> None:
    security = security_of(
        {
            **SASL,
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                f'{PLAIN} required user_alice="secret";'
            ),
        }
    )
    assert security.sasl is not None
    authenticator = security.sasl()
    assert authenticator.handshake("SCRAM-SHA-256", 1).error == 0
    authenticator = security.sasl()
    authenticator.handshake("PLAIN", 1)
    assert authenticator.authenticate(b"\0alice\0secret", 0).error == 0


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "sasl.enabled.mechanisms: GSSAPI is not supported"),
        ({"sasl.enabled.mechanisms": "PLAIN"}, "PLAIN needs a JAAS login module"),
        (
            {"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": f"{PLAIN} required a=b"},
            "must end with ';'",
        ),
        ({"sasl.enabled.mechanisms": "MAGIC"}, "MAGIC is not supported"),
        (
            {**JWKS, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "50"},
            r"retry\.backoff\.max\.ms: must be at least sasl\.oauthbearer\.jwks\.endpoint\.retry",
        ),
        (
            {**JWKS, "sasl.oauthbearer.jwks.endpoint.refresh.ms": "0"},
            r"jwks\.endpoint\.refresh\.ms: must be at least 1",
        ),
        (JWKS, r"jwks\.endpoint\.url: cannot fetch file:///nonexistent/jwks\.json"),
    ],
)
def test_bad_sasl_settings_are_one_line(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        security_of({**SASL, **settings})
    assert "\n" not in str(raised.value)


def test_bad_principal_mapping_rules(tmp_path: Path) -> None:
    keystore = CertificateAuthority().issue("a").write_keystore_pem(tmp_path / "k.pem")
    with pytest.raises(ConfigError, match=r"ssl\.principal\.mapping\.rules: invalid rule"):
        security_of(
            {
                "listeners": "SSL://a:1",
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(keystore),
                "ssl.principal.mapping.rules": "RULE:oops",
            },
            "SSL",
        )


def test_the_inter_broker_login_needs_a_user_and_a_supported_mechanism() -> None:
    login = f'{PLAIN} required username="admin" password="pw";'
    config = ServerConfig(
        {"sasl.mechanism.inter.broker.protocol": "PLAIN", "sasl.jaas.config": login}
    )
    security = client_security(
        config,
        listener="INTERNAL",
        protocol="SASL_PLAINTEXT",
        mechanism_setting="sasl.mechanism.inter.broker.protocol",
    )
    assert (security.mechanism, security.username, security.password) == ("PLAIN", "admin", "pw")
    with pytest.raises(ConfigError, match=r"sasl\.mechanism\.controller\.protocol: GSSAPI"):
        client_security(
            config,
            listener="CONTROLLER",
            protocol="SASL_SSL",
            mechanism_setting="sasl.mechanism.controller.protocol",
        )
    no_user = ServerConfig(
        {
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "sasl.jaas.config": f"{PLAIN} required;",
        }
    )
    with pytest.raises(ConfigError, match="set username and password"):
        client_security(
            no_user,
            listener="INTERNAL",
            protocol="SASL_PLAINTEXT",
            mechanism_setting="sasl.mechanism.inter.broker.protocol",
        )


def test_sasl_ssl_asks_for_certificates_only_through_the_listener_setting(
    tmp_path: Path,
) -> None:
    keystore = CertificateAuthority().issue("a").write_keystore_pem(tmp_path / "k.pem")
    base = {
        "listeners": "SASL_SSL://a:1",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "ssl.client.auth": "required",
    }
    wide = security_of(base, "SASL_SSL").ssl_context
    assert wide is not None and wide.verify_mode == ssl.CERT_NONE
    prefixed = {**base, "listener.name.sasl_ssl.ssl.client.auth": "required"}
    own = security_of(prefixed, "SASL_SSL").ssl_context
    assert own is not None and own.verify_mode == ssl.CERT_REQUIRED


def plain_login(security: ListenerSecurity, user: str, password: str) -> int:
    assert security.sasl is not None
    authenticator = security.sasl()
    authenticator.handshake("PLAIN", 1)
    return int(authenticator.authenticate(f"\0{user}\0{password}".encode(), 0).error)


def test_plain_users_from_the_jaas_file_and_the_listener_setting_wins(tmp_path: Path) -> None:
    jaas = tmp_path / "kafka_server_jaas.conf"
    jaas.write_text(
        "// the broker's logins\n"
        f'KafkaServer {{\n  {PLAIN} required\n    username="admin" password="pw"\n'
        '    user_admin="pw" user_alice="alice-secret";\n};\n'
        f"internal.KafkaServer {{ {PLAIN} required\n"
        '    username="node" password="n" user_node="n";\n};\n'
    )
    settings = {
        "listeners": "SASL_PLAINTEXT://a:1,INTERNAL://a:2",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "java.security.auth.login.config": str(jaas),
    }
    security = security_of(settings)
    assert plain_login(security, "alice", "alice-secret") == 0
    assert plain_login(security, "alice", "wrong") == 58
    internal = security_of(settings, "INTERNAL")  # its own section
    assert plain_login(internal, "node", "n") == 0
    assert plain_login(internal, "alice", "alice-secret") == 58
    login = client_security(
        ServerConfig(settings),
        listener="INTERNAL",
        protocol="SASL_PLAINTEXT",
        mechanism_setting="sasl.mechanism.inter.broker.protocol",
    )
    assert (login.username, login.password) == ("node", "n")
    prefixed = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    own = security_of({**settings, prefixed: f'{PLAIN} required user_carol="c";'})
    assert plain_login(own, "carol", "c") == 0
    assert plain_login(own, "alice", "alice-secret") == 58


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, r"java\.security\.auth\.login\.config: .*missing\.conf: No such file"),
        ("KafkaServer {", r"java\.security\.auth\.login\.config: .*\.conf: line 1: expected"),
        (
            "Other { x required; };",
            r"has no org\.apache\.kafka\.common\.security\.plain\.PlainLoginModule entry in "
            r"section 'sasl_plaintext\.KafkaServer' or 'KafkaServer'",
        ),
        (
            "KafkaServer { org.apache.kafka.common.security.scram.ScramLoginModule required; };",
            "has no org.apache.kafka.common.security.plain.PlainLoginModule entry",
        ),
    ],
)
def test_a_bad_jaas_file_is_one_line(tmp_path: Path, text: str | None, message: str) -> None:
    jaas = tmp_path / ("missing.conf" if text is None else "jaas.conf")
    if text is not None:
        jaas.write_text(text)
    settings = {
        **SASL,
        "sasl.enabled.mechanisms": "PLAIN",
        "java.security.auth.login.config": str(jaas),
    }
    with pytest.raises(ConfigError, match=message) as raised:
        security_of(settings)
    assert "\n" not in str(raised.value)
