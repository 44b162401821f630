"""TLS contexts from ssl.* settings: PEM and PKCS12 keystores and truststores, and the errors."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from strom.config import ServerConfig
from strom.config.setting import Value
from strom.security.principal import ssl_principal, subject_name
from strom.security.principal_mapping import PrincipalMapper
from strom.security.tls import TlsConfigError, _openssl_name, client_context, server_context
from strom.testing.certificates import CertificateAuthority


def lookup(settings: Mapping[str, str]) -> Callable[[str], Value]:
    config = ServerConfig(dict(settings))
    return lambda name: config.for_listener("SSL", name)


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority()


def test_pem_file_keystore_and_client_auth(ca: CertificateAuthority, tmp_path: Path) -> None:
    keystore = ca.issue("localhost").write_keystore_pem(tmp_path / "server.pem")
    context = server_context(
        lookup(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(keystore),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(ca.write_pem(tmp_path / "ca.crt")),
                "ssl.client.auth": "required",
                "ssl.enabled.protocols": "TLSv1.2",
            }
        )
    )
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.maximum_version == ssl.TLSVersion.TLSv1_2


def test_pem_text_keystore(ca: CertificateAuthority) -> None:
    issued = ca.issue("localhost")
    context = server_context(
        lookup(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.key": issued.key_pem,
                "ssl.keystore.certificate.chain": issued.chain_pem,
            }
        )
    )
    assert context.verify_mode == ssl.CERT_NONE


def test_pkcs12_keystore_and_truststore(ca: CertificateAuthority, tmp_path: Path) -> None:
    keystore = ca.issue("localhost").write_pkcs12(tmp_path / "server.p12", "secret")
    truststore = ca.write_truststore_pkcs12(tmp_path / "trust.p12", "secret")
    settings = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(keystore),
        "ssl.keystore.password": "secret",
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(truststore),
        "ssl.truststore.password": "secret",
        "ssl.client.auth": "requested",
    }
    assert server_context(lookup(settings)).verify_mode == ssl.CERT_OPTIONAL
    assert client_context(lookup(settings)).verify_mode == ssl.CERT_REQUIRED


def test_listener_prefixed_settings_win(ca: CertificateAuthority, tmp_path: Path) -> None:
    keystore = ca.issue("localhost").write_keystore_pem(tmp_path / "server.pem")
    config = ServerConfig(
        {
            "ssl.keystore.type": "JKS",
            "listener.name.ssl.ssl.keystore.type": "PEM",
            "listener.name.ssl.ssl.keystore.location": str(keystore),
        }
    )
    server_context(lambda name: config.for_listener("SSL", name))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "ssl.keystore.location: a TLS listener needs a keystore"),
        ({"ssl.keystore.location": "/x.jks"}, "ssl.keystore.location: cannot read /x.jks"),
        ({"ssl.keystore.type": "BCFKS", "ssl.keystore.location": "/x"}, "BCFKS keystores need"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/nonexistent"}, "cannot read"),
        ({"ssl.enabled.protocols": "SSLv3"}, "ssl.enabled.protocols"),
        ({"ssl.cipher.suites": "TLS_NOT_A_SUITE"}, "unknown cipher suite TLS_NOT_A_SUITE"),
    ],
)
def test_unusable_settings_name_the_setting(settings: dict[str, str], message: str) -> None:
    with pytest.raises(TlsConfigError, match=message):
        server_context(lookup(settings))


def test_a_malformed_key_file_is_one_clear_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pem"
    broken.write_text("-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n")
    with pytest.raises(TlsConfigError, match="cannot load the key and certificate chain") as error:
        server_context(lookup({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(broken)}))
    assert "\n" not in str(error.value)


def test_java_cipher_suite_names_translate() -> None:
    assert _openssl_name("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384") == "ECDHE-RSA-AES256-GCM-SHA384"
    assert _openssl_name("TLS_RSA_WITH_AES_128_CBC_SHA") == "AES128-SHA"
    context = server_context(
        lookup(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.key": (issued := CertificateAuthority().issue("x")).key_pem,
                "ssl.keystore.certificate.chain": issued.chain_pem,
                "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            }
        )
    )
    assert context.maximum_version == ssl.TLSVersion.TLSv1_2  # no TLS 1.3 suite listed


def test_the_principal_of_a_client_certificate(ca: CertificateAuthority) -> None:
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "acme"),
            x509.NameAttribute(NameOID.COMMON_NAME, "alice"),
        ]
    )
    der = ca.issue(name, client=True).certificate.public_bytes(serialization.Encoding.DER)
    assert subject_name(der) == "CN=alice,O=acme,C=US"
    mapper = PrincipalMapper("RULE:^CN=(.*?),.*$/$1/")
    assert str(ssl_principal(der, mapper)) == "User:alice"
    assert str(ssl_principal(None, mapper)) == "User:ANONYMOUS"


def test_java_keystores(ca: CertificateAuthority, tmp_path: Path) -> None:
    """A real JKS names the keytool command; a PKCS12 file under the default type JKS is read,
    as Java 9+ reads it."""
    jks = tmp_path / "server.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    with pytest.raises(TlsConfigError) as refused:
        server_context(lookup({"ssl.keystore.location": str(jks)}))
    assert str(refused.value) == (
        f"ssl.keystore.type: JKS keystores need a JVM; convert {jks} with: keytool"
        f" -importkeystore -srckeystore {jks} -destkeystore {jks}.p12 -deststoretype PKCS12,"
        " then set ssl.keystore.type=PKCS12"
    )
    p12 = ca.issue("localhost").write_pkcs12(tmp_path / "server.p12", "secret")
    truststore = ca.write_truststore_pkcs12(tmp_path / "trust.p12", "secret")
    settings = {
        "ssl.keystore.location": str(p12),
        "ssl.keystore.password": "secret",
        "ssl.truststore.location": str(truststore),
        "ssl.truststore.password": "secret",
        "ssl.client.auth": "required",
    }
    assert server_context(lookup(settings)).verify_mode == ssl.CERT_REQUIRED
