"""Which read path a query's tasks take (``strom.spark.fetch.fetch_security``): their own Fetch
connections for the TLS and SASL settings those honour, librdkafka (with the reason) for the
settings only librdkafka reads, which the source accepted before it fetched for itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from strom.client.security import ClientSecurity
from strom.spark.fetch import fetch_security
from strom.testing.certificates import CertificateAuthority


@pytest.fixture(scope="module")
def pem_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """librdkafka settings of a CA file and a client certificate and key in PEM files."""
    directory = tmp_path_factory.mktemp("pem")
    ca = CertificateAuthority()
    key, chain = ca.issue("alice", client=True).write_pem(directory, "alice")
    return {
        "security.protocol": "SSL",
        "ssl.ca.location": str(ca.write_pem(directory / "ca.crt")),
        "ssl.certificate.location": str(chain),
        "ssl.key.location": str(key),
    }


@pytest.mark.parametrize(
    "settings",
    [
        {"bootstrap.servers": "localhost:9092"},
        {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512"},
        {"security.protocol": "SASL_PLAINTEXT", "sasl.username": "alice"},  # PLAIN by default
    ],
)
def test_the_fast_path_takes_plaintext_and_the_logins_it_has(settings: dict[str, str]) -> None:
    assert isinstance(fetch_security(settings), ClientSecurity)


def test_the_fast_path_takes_pem_files_with_mutual_tls(pem_files: dict[str, str]) -> None:
    security = fetch_security(pem_files)
    assert isinstance(security, ClientSecurity)
    assert security.ssl_context is not None


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        (
            {"security.protocol": "SSL", "ssl.keystore.location": "/x.p12"},
            "kafka.ssl.keystore.location is a setting only librdkafka reads",
        ),
        (
            {"security.protocol": "SSL", "ssl.key.pem": "-----BEGIN", "ssl.certificate.pem": "-"},
            "kafka.ssl.certificate.pem is a setting only librdkafka reads",
        ),
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"},
            "only librdkafka logs in with SASL GSSAPI",
        ),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"},
            "only librdkafka logs in with SASL OAUTHBEARER",
        ),
        (
            {"security.protocol": "SSL", "ssl.ca.location": "probe"},
            "Python's TLS cannot load the certificates or keys",
        ),
    ],
)
def test_settings_only_librdkafka_reads_fall_back_with_the_reason(
    settings: dict[str, str], reason: str
) -> None:
    assert reason in str(fetch_security(settings))


def test_a_key_python_cannot_open_falls_back(pem_files: dict[str, str], tmp_path: Path) -> None:
    """librdkafka would report the problem itself (or read what Python's ssl cannot)."""
    broken = tmp_path / "broken.key"
    broken.write_text("not a key")
    settings = {**pem_files, "ssl.key.location": str(broken)}
    assert "Python's TLS cannot load" in str(fetch_security(settings))
