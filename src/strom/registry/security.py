"""The listener's security under Confluent's settings: TLS from a keystore and a truststore
(PKCS12, or PEM as Kafka's KIP-651 allows; JKS needs a JVM and is refused with the ``keytool``
command that converts it), and HTTP basic authentication's users from the JAAS file that
``java.security.auth.login.config`` names (Jetty's ``PropertyFileLoginModule`` and its
``user: password[,role...]`` file)."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import ssl
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

__all__ = [
    "ClientAuth",
    "SecurityError",
    "StoreSettings",
    "TlsSettings",
    "User",
    "jaas_users",
    "server_ssl_context",
]

PROPERTY_FILE_LOGIN_MODULE = "org.eclipse.jetty.jaas.spi.PropertyFileLoginModule"
_JAVA_ONLY_MAGIC = {b"\xfe\xed\xfe\xed": "JKS", b"\xce\xce\xce\xce": "JCEKS"}


class SecurityError(ValueError):
    """A security setting that cannot be used; the message names the setting."""


class ClientAuth(StrEnum):
    """``ssl.client.authentication`` (``ssl.client.auth=true`` is ``REQUIRED``)."""

    NONE = "NONE"
    REQUESTED = "REQUESTED"
    REQUIRED = "REQUIRED"


@dataclass(frozen=True)
class StoreSettings:
    """A key or trust store: ``ssl.<kind>.location``, ``.password`` and ``.type``."""

    location: str
    password: str | None = None
    type: str = "JKS"


@dataclass(frozen=True)
class TlsSettings:
    keystore: StoreSettings
    key_password: str | None = None
    truststore: StoreSettings | None = None
    client_auth: ClientAuth = ClientAuth.NONE


def _store_format(store: StoreSettings, setting: str) -> str:
    """``PKCS12`` or ``PEM``: what the store's file holds, refusing what needs a JVM. A
    ``JKS`` store that is really PKCS12 is read as Java does (``keystore.type.compat``)."""
    kind = store.type.upper()
    try:
        head = Path(store.location).read_bytes()[:4]
    except OSError as error:
        raise SecurityError(f"{setting}: cannot read {store.location}: {error}") from error
    java_only = _JAVA_ONLY_MAGIC.get(head) or (
        kind if kind not in ("JKS", "PKCS12", "PEM") else None
    )
    if java_only is not None:
        raise SecurityError(
            f"{setting}: {store.location} is a {java_only} store, which strom cannot read without"
            f" a JVM; convert it with: keytool -importkeystore -srckeystore {store.location}"
            f" -destkeystore {Path(store.location).with_suffix('.p12')} -deststoretype PKCS12,"
            " then set the type to PKCS12"
        )
    return "PEM" if kind == "PEM" else "PKCS12"


def _load_pkcs12(store: StoreSettings, setting: str) -> object:
    from cryptography.hazmat.primitives.serialization import pkcs12  # noqa: PLC0415

    password = store.password.encode() if store.password else None
    try:
        return pkcs12.load_pkcs12(Path(store.location).read_bytes(), password)
    except ValueError as error:
        raise SecurityError(
            f"{setting}: {store.location} is not a PKCS12 store, or its password is wrong"
        ) from error


def _load_keystore(context: ssl.SSLContext, tls: TlsSettings) -> None:
    store = tls.keystore
    if _store_format(store, "ssl.keystore.location") == "PEM":
        try:
            context.load_cert_chain(store.location, password=tls.key_password)
        except (ssl.SSLError, OSError) as error:
            raise SecurityError(
                f"ssl.keystore.location: {store.location} is not a PEM private key with its"
                f" certificate chain, or ssl.key.password is wrong ({error})"
            ) from error
        return
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.serialization import pkcs12  # noqa: PLC0415

    loaded = _load_pkcs12(store, "ssl.keystore.location")
    assert isinstance(loaded, pkcs12.PKCS12KeyAndCertificates)
    if loaded.key is None or loaded.cert is None:
        raise SecurityError(f"ssl.keystore.location: {store.location} holds no private key")
    # Python's ssl reads keys only from files: a one-time file, encrypted, removed at once
    one_time = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="strom-tls-") as work:
        pem = Path(work, "keystore.pem")
        pem.write_bytes(
            loaded.key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(one_time.encode()),
            )
            + b"".join(
                cert.certificate.public_bytes(serialization.Encoding.PEM)
                for cert in [loaded.cert, *loaded.additional_certs]
            )
        )
        context.load_cert_chain(pem, password=one_time)


def _load_truststore(context: ssl.SSLContext, store: StoreSettings) -> None:
    if _store_format(store, "ssl.truststore.location") == "PEM":
        context.load_verify_locations(cafile=store.location)
        return
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.serialization import pkcs12  # noqa: PLC0415

    loaded = _load_pkcs12(store, "ssl.truststore.location")
    assert isinstance(loaded, pkcs12.PKCS12KeyAndCertificates)
    certificates = [*([loaded.cert] if loaded.cert else []), *loaded.additional_certs]
    if not certificates:
        raise SecurityError(f"ssl.truststore.location: {store.location} holds no certificate")
    context.load_verify_locations(
        cadata="".join(
            c.certificate.public_bytes(serialization.Encoding.PEM).decode() for c in certificates
        )
    )


def server_ssl_context(tls: TlsSettings) -> ssl.SSLContext:
    """The listener's TLS context; ``SecurityError`` when a store cannot be used."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _load_keystore(context, tls)
    if tls.truststore is not None:
        _load_truststore(context, tls.truststore)
    if tls.client_auth is not ClientAuth.NONE:
        if tls.truststore is None:
            raise SecurityError("ssl.client.auth needs ssl.truststore.location")
        context.verify_mode = (
            ssl.CERT_REQUIRED if tls.client_auth is ClientAuth.REQUIRED else ssl.CERT_OPTIONAL
        )
    return context


@dataclass(frozen=True)
class User:
    """A user of the password file: the password as written (plain, ``MD5:`` or ``OBF:``,
    as Jetty's ``Credential`` reads it) and the roles."""

    password: str
    roles: frozenset[str]

    def accepts(self, password: str) -> bool:
        stored = self.password
        if stored.startswith("MD5:"):
            given = hashlib.md5(password.encode(), usedforsecurity=False).hexdigest()
            return hmac.compare_digest(stored[4:].lower(), given)
        if stored.startswith("OBF:"):
            stored = _deobfuscate(stored[4:])
        return hmac.compare_digest(stored.encode(), password.encode())


def _deobfuscate(text: str) -> str:
    """Jetty's ``Password.deobfuscate``: base-36 groups of four (``U`` and four for a byte
    above 127)."""
    out = bytearray()
    index = 0
    while index < len(text):
        if text[index] == "U":
            out.append((int(text[index + 1 : index + 5], 36) >> 8) & 0xFF)
            index += 5
        else:
            value = int(text[index : index + 4], 36)
            out.append(((value // 256 + value % 256 - 254) // 2) & 0xFF)
            index += 4
    return out.decode()


def _password_file(path: Path) -> dict[str, User]:
    users: dict[str, User] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "!")) or ":" not in line:
            continue
        name, rest = line.split(":", 1)
        password, *roles = (part.strip() for part in rest.split(","))
        if password.startswith("CRYPT:"):
            raise SecurityError(f"{path}: user {name.strip()}: CRYPT: passwords are not read")
        users[name.strip()] = User(password, frozenset(filter(None, roles)))
    return users


_JAAS_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/|#[^\n]*", re.DOTALL)
_JAAS_SECTION = re.compile(r"([\w.\-]+)\s*\{(.*?)\}\s*;", re.DOTALL)
_JAAS_ENTRY = re.compile(r"\s*([\w.$]+)\s+(\w+)((?:\s+[\w.\-]+\s*=\s*(?:\"[^\"]*\"|[^\s;]+))*)\s*;")
_JAAS_OPTION = re.compile(r"([\w.\-]+)\s*=\s*(?:\"([^\"]*)\"|([^\s;]+))")


def jaas_users(config: str | Path, realm: str) -> dict[str, User]:
    """The users of the JAAS ``config`` file's section named ``realm``
    (``authentication.realm``), whose login module must be Jetty's property file one."""
    try:
        text = _JAAS_COMMENTS.sub("", Path(config).read_text())
    except OSError as error:
        raise SecurityError(f"java.security.auth.login.config: {error}") from error
    sections = dict(_JAAS_SECTION.findall(text))
    if realm not in sections:
        raise SecurityError(
            f"java.security.auth.login.config: {config} has no section {realm!r}"
            " (authentication.realm)"
        )
    for module, _flag, options in _JAAS_ENTRY.findall(sections[realm]):
        if module != PROPERTY_FILE_LOGIN_MODULE:
            raise SecurityError(
                f"{config}: login module {module} is not supported (only"
                f" {PROPERTY_FILE_LOGIN_MODULE})"
            )
        values = {key: quoted or bare for key, quoted, bare in _JAAS_OPTION.findall(options)}
        if "file" not in values:
            raise SecurityError(f"{config}: {module} in {realm!r} names no file=")
        path = Path(values["file"])
        try:
            return _password_file(path)
        except OSError as error:
            raise SecurityError(f"{config}: the password file: {error}") from error
    raise SecurityError(f"{config}: section {realm!r} names no login module")
