"""The JAAS file, Jetty's password file and the store checks of ``strom.web.security``."""

from __future__ import annotations

from pathlib import Path

import pytest

from strom.web.security import SecurityError, jaas_users, listener_ssl_context

MODULE = "org.eclipse.jetty.jaas.spi.PropertyFileLoginModule"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_jaas_section_names_the_password_file(tmp_path: Path) -> None:
    _write(
        tmp_path / "users",
        "# comment\n! also\nann: plain, admin , dev\nben: MD5:5ebe2294ecd0e0f08eab7690d2a6ee69\n",
    )
    jaas = _write(
        tmp_path / "jaas.conf",
        f"/* other realms first */\nOther {{ com.example.Nope required; }};\n"
        f"Realm {{\n  {MODULE} required // comments, but not in quotes:\n"
        f'  file="{tmp_path}//users" debug="true";\n}};\n',
    )
    found = jaas_users(jaas, "Realm")
    assert found["ann"].roles == {"admin", "dev"} and found["ann"].accepts("plain")
    assert not found["ann"].accepts("plain ")
    assert found["ben"].roles == frozenset() and found["ben"].accepts("secret")
    with pytest.raises(SecurityError, match="no section 'Missing'"):
        jaas_users(jaas, "Missing")
    with pytest.raises(SecurityError, match=r"com\.example\.Nope is not supported"):
        jaas_users(jaas, "Other")


def test_crypt_passwords_are_refused(tmp_path: Path) -> None:
    users = _write(tmp_path / "users", "ann: CRYPT:adpexzg3FUZAk,admin\n")
    jaas = _write(tmp_path / "jaas", f'R {{ {MODULE} required file="{users}"; }};')
    with pytest.raises(SecurityError, match="CRYPT"):
        jaas_users(jaas, "R")


def test_kafka_connects_login_module_reads_a_properties_file(tmp_path: Path) -> None:
    users = _write(tmp_path / "users", "admin=admin-secret\nreader: has, a comma\n")
    module = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
    jaas = _write(tmp_path / "jaas", f'KafkaConnect {{ {module} required file="{users}"; }};')
    found = jaas_users(jaas, "KafkaConnect")
    assert found["admin"].accepts("admin-secret") and found["admin"].roles == frozenset()
    assert found["reader"].accepts("has, a comma")  # a password, no roles


@pytest.mark.parametrize(
    ("head", "kind", "named"),
    [
        (b"\xfe\xed\xfe\xed", None, "JKS"),  # Confluent's default type
        (b"\xce\xce\xce\xce", "JCEKS", "JCEKS"),
        (b"0\x82\x01\x00", "BCFKS", "BCFKS"),
    ],
)
def test_java_only_stores_name_keytool(
    tmp_path: Path, head: bytes, kind: str | None, named: str
) -> None:
    store = tmp_path / "store"
    store.write_bytes(head + bytes(40))
    values = {"ssl.keystore.location": str(store), "ssl.keystore.password": "pw"}
    if kind:
        values["ssl.keystore.type"] = kind
    with pytest.raises(ValueError, match=f"{named} keystores need a JVM.*keytool -importkeystore"):
        listener_ssl_context(values)


def test_client_authentication_values(tmp_path: Path) -> None:
    with pytest.raises(SecurityError, match="expected NONE, REQUESTED or REQUIRED, got sometimes"):
        listener_ssl_context({"ssl.client.authentication": "sometimes"})
    with pytest.raises(
        ValueError, match=r"ssl\.keystore\.location: a TLS listener needs a keystore"
    ):
        listener_ssl_context({"ssl.client.auth": "true"})
    with pytest.raises(ValueError, match=r"ssl\.keystore\.location"):
        listener_ssl_context({"ssl.client.auth": "requested"})  # Kafka Connect's name
    with pytest.raises(
        SecurityError,
        match=r"ssl\.client\.auth: expected NONE, REQUESTED or REQUIRED, got sometimes",
    ):
        listener_ssl_context({"ssl.client.auth": "sometimes"})
