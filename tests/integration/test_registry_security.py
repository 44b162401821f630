"""The registry's listener under Confluent's security settings: TLS from PKCS12 and PEM
keystores, mutual TLS against a truststore, basic authentication through a JAAS file, with
confluent-kafka's SchemaRegistryClient and raw HTTPS."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError
from cryptography.hazmat.primitives import serialization

from strom.cli.main import cli
from strom.registry.server import RegistrySettings
from strom.testing.certificates import CertificateAuthority
from strom.testing.registry import Registry

AVRO = '{"type":"record","name":"r","fields":[{"name":"a","type":"int"}]}'


@pytest.fixture
def ca() -> CertificateAuthority:
    return CertificateAuthority()


def _jaas(directory: Path, realm: str, users: str) -> Path:
    password_file = directory / "password.properties"
    password_file.write_text(users)
    jaas = directory / "jaas.conf"
    jaas.write_text(
        f"// Confluent's example layout\n{realm} {{\n"
        "  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule required\n"
        f'  file="{password_file}"\n  debug="false";\n}};\n'
    )
    return jaas


def _settings(bootstrap: str, **values: str) -> dict[str, Any]:
    """``Registry`` keyword arguments from Confluent's properties."""
    settings = RegistrySettings.from_properties(
        {"kafkastore.bootstrap.servers": bootstrap, **values}, environ={}
    )
    return {"security": settings.security}


def test_pkcs12_keystore_and_basic_auth(
    bootstrap: str, ca: CertificateAuthority, tmp_path: Path
) -> None:
    server = ca.issue("registry", hosts=("127.0.0.1",))
    keystore = server.write_pkcs12(tmp_path / "registry.p12", "store-secret")
    ca_file = str(ca.write_pem(tmp_path / "ca.pem"))
    jaas = _jaas(
        tmp_path,
        "SchemaRegistry-Props",
        "# user: password,role...\n"
        "alice: secret,admin\n"
        "bob: MD5:5ebe2294ecd0e0f08eab7690d2a6ee69,developer\n"  # MD5 of "secret"
        "carol: OBF:1v2j1uum1xtv1zej1zer1xtn1uvk1v1v,nobody\n",  # Jetty's "password"
    )
    settings = _settings(
        bootstrap,
        **{
            "listeners": "https://127.0.0.1:0",
            "ssl.keystore.location": str(keystore),
            "ssl.keystore.password": "store-secret",
            "ssl.key.password": "store-secret",
            "ssl.keystore.type": "PKCS12",
            "authentication.method": "BASIC",
            "authentication.realm": "SchemaRegistry-Props",
            "authentication.roles": "admin,developer",
            "java.security.auth.login.config": str(jaas),
        },
    )
    with Registry(bootstrap, **settings) as secured:
        assert secured.url.startswith("https://")
        alice = secured.client(
            **{"ssl.ca.location": ca_file, "basic.auth.user.info": "alice:secret"}
        )
        schema_id = alice.register_schema("orders-value", Schema(AVRO, "AVRO"))
        bob = secured.client(**{"ssl.ca.location": ca_file, "basic.auth.user.info": "bob:secret"})
        assert bob.get_schema(schema_id).schema_str == AVRO
        wrong = secured.client(**{"ssl.ca.location": ca_file, "basic.auth.user.info": "alice:nope"})
        with pytest.raises(SchemaRegistryError) as refused:
            wrong.get_subjects()
        assert refused.value.http_status_code == 401
        trusted = ssl.create_default_context(cafile=ca_file)
        anonymous = httpx.get(secured.url + "/subjects", verify=trusted)
        assert anonymous.status_code == 401 and anonymous.json()["error_code"] == 401
        assert anonymous.headers["www-authenticate"] == 'Basic realm="SchemaRegistry-Props"'
        no_role = httpx.get(secured.url + "/subjects", verify=trusted, auth=("carol", "password"))
        assert no_role.status_code == 403
        assert no_role.json() == {"error_code": 403, "message": "Forbidden"}
        login = ["--registry", secured.url, "--user", "alice:secret", "--ca-location", ca_file]
        listed = CliRunner().invoke(cli, ["schemas", *login, "list"])
        assert listed.exit_code == 0 and listed.output == "orders-value\n", listed.output
        health = httpx.get(secured.url + "/health", verify=trusted)
        assert health.status_code == 200 and health.json() == {"status": "UP", "primary": True}
        with pytest.raises(httpx.RemoteProtocolError):  # plain HTTP gets no answer
            httpx.get(secured.url.replace("https://", "http://") + "/subjects")


def test_mutual_tls_and_pem_keystore(
    bootstrap: str, ca: CertificateAuthority, tmp_path: Path
) -> None:
    server = ca.issue("registry", hosts=("127.0.0.1",))
    keystore = tmp_path / "registry.pem"  # KIP-651: the encrypted key and the chain in one file
    keystore.write_bytes(
        server.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"key-secret"),
        )
        + server.chain_pem.encode()
    )
    settings = _settings(
        bootstrap,
        **{
            "listeners": "https://127.0.0.1:0",
            "ssl.keystore.location": str(keystore),
            "ssl.keystore.type": "PEM",
            "ssl.key.password": "key-secret",
            "ssl.truststore.location": str(
                ca.write_truststore_pkcs12(tmp_path / "trust.p12", "trust-secret")
            ),
            "ssl.truststore.password": "trust-secret",
            "ssl.truststore.type": "PKCS12",
            "ssl.client.auth": "true",
        },
    )
    client_key, client_cert = ca.issue("client", client=True).write_pem(tmp_path, "client")
    ca_file = str(ca.write_pem(tmp_path / "ca.pem"))
    with Registry(bootstrap, **settings) as secured:
        with_certificate = secured.client(
            **{
                "ssl.ca.location": ca_file,
                "ssl.certificate.location": str(client_cert),
                "ssl.key.location": str(client_key),
            }
        )
        assert with_certificate.get_subjects() == []
        trusted = ssl.create_default_context(cafile=ca_file)
        with pytest.raises(httpx.TransportError):  # TLS 1.3: refused once the handshake ends
            httpx.get(secured.url + "/subjects", verify=trusted)
        without = secured.client(**{"ssl.ca.location": ca_file})
        with pytest.raises(Exception, match=r"(?i)disconnected|certificate"):  # its own httpx
            without.get_subjects()


def test_refused_settings_stop_the_start(
    bootstrap: str, ca: CertificateAuthority, tmp_path: Path
) -> None:
    jks = tmp_path / "registry.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    runner = CliRunner()
    base = ["registry", "--bootstrap-servers", bootstrap, "--listener", "127.0.0.1:0"]
    keystore = [
        "--override",
        f"ssl.keystore.location={jks}",
        "--override",
        "ssl.keystore.password=x",
    ]
    result = runner.invoke(cli, [*base, *keystore])
    assert result.exit_code == 1
    message = result.output.strip()
    assert len(message.splitlines()) == 1, message
    assert "JKS keystores need a JVM" in message and "keytool -importkeystore" in message
    p12 = ca.issue("registry").write_pkcs12(tmp_path / "registry.p12", "right")
    wrong_password = [
        *("--override", f"ssl.keystore.location={p12}"),
        *("--override", "ssl.keystore.password=wrong"),
    ]
    result = runner.invoke(cli, [*base, *wrong_password])
    assert result.exit_code == 1 and f"ssl.keystore.location: cannot read {p12}" in result.output
    basic_without_jaas = ["--override", "authentication.method=BASIC"]
    result = runner.invoke(cli, [*base, *basic_without_jaas], env={"SCHEMA_REGISTRY_OPTS": ""})
    assert result.exit_code == 1 and "java.security.auth.login.config" in result.output
