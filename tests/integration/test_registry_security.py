"""The registry's listener under Confluent's security settings: TLS from PKCS12 and PEM
keystores, mutual TLS against a truststore, basic authentication through a JAAS file, with
confluent-kafka's SchemaRegistryClient and raw HTTPS."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from strom.cli.main import cli
from strom.registry.server import RegistrySettings
from strom.testing.registry import Registry

AVRO = '{"type":"record","name":"r","fields":[{"name":"a","type":"int"}]}'


class Pki:
    """A CA, and certificates it signs, written where the test says."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "strom test CA")])
        self.cert = self._build(self.name, self.key.public_key(), ca=True)
        self.ca_file = directory / "ca.pem"
        self.ca_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def _build(self, subject: x509.Name, public_key: Any, *, ca: bool) -> x509.Certificate:
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.name)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False,
            )
        return builder.sign(self.key, hashes.SHA256())

    def issue(self, name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        return key, self._build(subject, key.public_key(), ca=False)

    def pkcs12_keystore(self, name: str, password: str) -> Path:
        key, cert = self.issue(name)
        path = self.directory / f"{name}.p12"
        path.write_bytes(
            pkcs12.serialize_key_and_certificates(
                name.encode(),
                key,
                cert,
                [self.cert],
                serialization.BestAvailableEncryption(password.encode()),
            )
        )
        return path

    def pkcs12_truststore(self, password: str) -> Path:
        path = self.directory / "truststore.p12"
        path.write_bytes(
            pkcs12.serialize_key_and_certificates(
                None,
                None,
                None,
                [self.cert],
                serialization.BestAvailableEncryption(password.encode()),
            )
        )
        return path

    def pem_files(self, name: str, key_password: str | None = None) -> tuple[Path, Path]:
        """The key (encrypted with ``key_password``) and certificate as one file (a KIP-651
        PEM keystore, also a client's key file), and the certificate alone."""
        key, cert = self.issue(name)
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(key_password.encode())
            if key_password
            else serialization.NoEncryption()
        )
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        both, alone = self.directory / f"{name}.pem", self.directory / f"{name}.crt"
        both.write_bytes(key_pem + cert_pem)
        alone.write_bytes(cert_pem)
        return both, alone


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki(tmp_path)


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
    return {name: getattr(settings, name) for name in ("tls", "jaas_config", "realm", "roles")}


def test_pkcs12_keystore_and_basic_auth(bootstrap: str, pki: Pki, tmp_path: Path) -> None:
    keystore = pki.pkcs12_keystore("registry", "store-secret")
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
        ca = str(pki.ca_file)
        alice = secured.client(**{"ssl.ca.location": ca, "basic.auth.user.info": "alice:secret"})
        schema_id = alice.register_schema("orders-value", Schema(AVRO, "AVRO"))
        bob = secured.client(**{"ssl.ca.location": ca, "basic.auth.user.info": "bob:secret"})
        assert bob.get_schema(schema_id).schema_str == AVRO
        wrong = secured.client(**{"ssl.ca.location": ca, "basic.auth.user.info": "alice:nope"})
        with pytest.raises(SchemaRegistryError) as refused:
            wrong.get_subjects()
        assert refused.value.http_status_code == 401
        trusted = ssl.create_default_context(cafile=ca)
        anonymous = httpx.get(secured.url + "/subjects", verify=trusted)
        assert anonymous.status_code == 401 and anonymous.json()["error_code"] == 401
        assert anonymous.headers["www-authenticate"] == 'Basic realm="SchemaRegistry-Props"'
        no_role = httpx.get(secured.url + "/subjects", verify=trusted, auth=("carol", "password"))
        assert no_role.status_code == 403
        assert no_role.json() == {"error_code": 403, "message": "Forbidden"}
        login = ["--registry", secured.url, "--user", "alice:secret", "--ca-location", ca]
        listed = CliRunner().invoke(cli, ["schemas", *login, "list"])
        assert listed.exit_code == 0 and listed.output == "orders-value\n", listed.output
        health = httpx.get(secured.url + "/health", verify=trusted)
        assert health.status_code == 200 and health.json() == {"status": "UP", "primary": True}
        with pytest.raises(httpx.RemoteProtocolError):  # plain HTTP gets no answer
            httpx.get(secured.url.replace("https://", "http://") + "/subjects")


def test_mutual_tls_and_pem_keystore(bootstrap: str, pki: Pki) -> None:
    keystore, _ = pki.pem_files("registry", key_password="key-secret")
    settings = _settings(
        bootstrap,
        **{
            "listeners": "https://127.0.0.1:0",
            "ssl.keystore.location": str(keystore),
            "ssl.keystore.type": "PEM",
            "ssl.key.password": "key-secret",
            "ssl.truststore.location": str(pki.pkcs12_truststore("trust-secret")),
            "ssl.truststore.password": "trust-secret",
            "ssl.truststore.type": "PKCS12",
            "ssl.client.auth": "true",
        },
    )
    client_key, client_cert = pki.pem_files("client")
    with Registry(bootstrap, **settings) as secured:
        with_certificate = secured.client(
            **{
                "ssl.ca.location": str(pki.ca_file),
                "ssl.certificate.location": str(client_cert),
                "ssl.key.location": str(client_key),
            }
        )
        assert with_certificate.get_subjects() == []
        trusted = ssl.create_default_context(cafile=str(pki.ca_file))
        with pytest.raises(httpx.TransportError):  # TLS 1.3: refused once the handshake ends
            httpx.get(secured.url + "/subjects", verify=trusted)
        without = secured.client(**{"ssl.ca.location": str(pki.ca_file)})
        with pytest.raises(Exception, match=r"(?i)disconnected|certificate"):  # its own httpx
            without.get_subjects()


def test_refused_settings_stop_the_start(bootstrap: str, pki: Pki, tmp_path: Path) -> None:
    jks = tmp_path / "registry.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    runner = CliRunner()
    base = ["registry", "--bootstrap-servers", bootstrap, "--listener", "127.0.0.1:0"]
    result = runner.invoke(
        cli,
        [
            *base,
            "--override",
            f"ssl.keystore.location={jks}",
            "--override",
            "ssl.keystore.password=x",
        ],
    )
    assert result.exit_code == 1
    message = result.output.strip()
    assert len(message.splitlines()) == 1, message
    assert "JKS" in message and "keytool -importkeystore" in message
    wrong_password = [
        "--override",
        f"ssl.keystore.location={pki.pkcs12_keystore('registry', 'right')}",
        "--override",
        "ssl.keystore.password=wrong",
    ]
    result = runner.invoke(cli, [*base, *wrong_password])
    assert result.exit_code == 1 and "password is wrong" in result.output
    basic_without_jaas = ["--override", "authentication.method=BASIC"]
    result = runner.invoke(cli, [*base, *basic_without_jaas], env={"SCHEMA_REGISTRY_OPTS": ""})
    assert result.exit_code == 1 and "java.security.auth.login.config" in result.output
