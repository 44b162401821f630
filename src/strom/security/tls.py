"""TLS contexts from Kafka's ``ssl.*`` settings, with Python's ``ssl`` module.

Keystores: ``PEM`` (``ssl.keystore.certificate.chain`` and ``ssl.keystore.key`` as text, or a
``.pem`` file at ``ssl.keystore.location`` holding the key and the chain) and ``PKCS12``.
Truststores: ``PEM`` (``ssl.truststore.certificates`` or a file) and ``PKCS12``; none configured
means the system's. A store of Kafka's default type ``JKS`` that is a PKCS12 file (what
``keytool`` writes since Java 9) is read as PKCS12, as Java reads it; a real ``JKS`` (or any
other Java-only type) is refused with the ``keytool`` command that converts it. ``ssl.client.auth``
none/requested/required, ``ssl.enabled.protocols``, and ``ssl.cipher.suites`` in IANA names
(as Java writes them) or OpenSSL's.

Every problem is a :class:`TlsConfigError` naming the setting in one line.
"""

from __future__ import annotations

import contextlib
import os
import re
import ssl
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from strom.config.setting import ConfigError, Value

__all__ = ["TlsConfigError", "client_context", "server_context"]

Lookup = Callable[[str], Value]
"""A setting's value for the listener being configured (``ServerConfig.for_listener``)."""

_PROTOCOLS: Final = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
_CLIENT_AUTH: Final = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}
_TLS13_SUITES: Final = frozenset(
    {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
)
_IANA: Final = re.compile(r"TLS_(?:(ECDHE_RSA|ECDHE_ECDSA|DHE_RSA|RSA)_)?WITH_(\w+)")
_CIPHERS: Final = {
    "AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "AES_128_CBC_SHA256": "AES128-SHA256",
    "AES_256_CBC_SHA384": "AES256-SHA384",
    "AES_128_CBC_SHA": "AES128-SHA",
    "AES_256_CBC_SHA": "AES256-SHA",
    "CHACHA20_POLY1305_SHA256": "CHACHA20-POLY1305",
}


class TlsConfigError(ConfigError):
    """A TLS setting that cannot be used."""


def server_context(setting: Lookup, *, client_auth: str | None = None) -> ssl.SSLContext:
    """The context of one TLS listener: its keystore, and the truststore its clients'
    certificates are checked against when ``ssl.client.auth`` (or ``client_auth``, which
    overrides it) asks for them."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _configure(context, setting)
    if not _text(setting, "ssl.keystore.location") and not _text(
        setting, "ssl.keystore.certificate.chain"
    ):
        raise TlsConfigError("ssl.keystore.location", "a TLS listener needs a keystore")
    _load_keystore(context, setting)
    auth = client_auth or _text(setting, "ssl.client.auth") or "none"
    context.verify_mode = _CLIENT_AUTH[auth]
    if auth != "none":
        _load_truststore(context, setting, ssl.Purpose.CLIENT_AUTH)
    return context


def client_context(setting: Lookup) -> ssl.SSLContext:
    """A client's context (another broker, a controller): verifies the server against the
    truststore and presents the keystore when there is one."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _configure(context, setting)
    context.check_hostname = _text(setting, "ssl.endpoint.identification.algorithm") == "https"
    _load_truststore(context, setting, ssl.Purpose.SERVER_AUTH)
    if _text(setting, "ssl.keystore.location") or _text(setting, "ssl.keystore.certificate.chain"):
        _load_keystore(context, setting)
    return context


def _text(setting: Lookup, name: str) -> str:
    value = setting(name)
    return value if isinstance(value, str) else ""


def _configure(context: ssl.SSLContext, setting: Lookup) -> None:
    protocols = setting("ssl.enabled.protocols")
    names = [name for name in protocols if name] if isinstance(protocols, tuple) else []
    unknown = [name for name in names if name not in _PROTOCOLS]
    if unknown or not names:
        raise TlsConfigError(
            "ssl.enabled.protocols",
            f"expected some of {', '.join(_PROTOCOLS)}, got {', '.join(names) or 'none'}",
        )
    versions = sorted(_PROTOCOLS[name] for name in names)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    suites = setting("ssl.cipher.suites")
    if isinstance(suites, tuple) and any(suites):
        _set_cipher_suites(context, [suite for suite in suites if suite])


def _set_cipher_suites(context: ssl.SSLContext, suites: list[str]) -> None:
    """TLS 1.2 suites restrict what OpenSSL offers; TLS 1.3's cannot be restricted from Python,
    so a list without any of them turns TLS 1.3 off, as it does on Java."""
    openssl_names = []
    for suite in suites:
        if suite in _TLS13_SUITES:
            continue
        name = _openssl_name(suite)
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).set_ciphers(name)
        except ssl.SSLError:
            raise TlsConfigError("ssl.cipher.suites", f"unknown cipher suite {suite}") from None
        openssl_names.append(name)
    if openssl_names:
        context.set_ciphers(":".join(openssl_names))
    if not _TLS13_SUITES.intersection(suites):
        context.maximum_version = min(context.maximum_version, ssl.TLSVersion.TLSv1_2)


def _openssl_name(suite: str) -> str:
    found = _IANA.fullmatch(suite)
    if found is None or found.group(2) not in _CIPHERS:
        return suite  # already OpenSSL's name, or unknown (refused by the caller)
    exchange = (found.group(1) or "RSA").replace("_", "-")
    cipher = _CIPHERS[found.group(2)]
    return cipher if exchange == "RSA" else f"{exchange}-{cipher}"


def _password(setting: Lookup, name: str) -> bytes | None:
    text = _text(setting, name)
    return text.encode() if text else None


def _read(name: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as error:
        raise TlsConfigError(name, f"cannot read {location}: {error.strerror}") from None


def _store_kind(setting: Lookup, store: str) -> str:
    """``PEM`` or ``PKCS12``: what the ``store`` (keystore, truststore) holds."""
    kind = (_text(setting, f"ssl.{store}.type") or "JKS").upper()
    if kind in ("PEM", "PKCS12"):
        return kind
    location = _text(setting, f"ssl.{store}.location")
    if kind == "JKS" and location and _read(f"ssl.{store}.location", location)[:1] == b"\x30":
        return "PKCS12"  # a DER sequence: PKCS12 (a JKS file starts with FE ED FE ED)
    where = location or f"the {store}"
    raise TlsConfigError(
        f"ssl.{store}.type",
        f"{kind} {store}s need a JVM; convert {where} with: keytool -importkeystore"
        f" -srckeystore {where} -destkeystore {where}.p12 -deststoretype PKCS12,"
        f" then set ssl.{store}.type=PKCS12",
    )


def _load_keystore(context: ssl.SSLContext, setting: Lookup) -> None:
    kind = _store_kind(setting, "keystore")
    location = _text(setting, "ssl.keystore.location")
    key_password = _password(setting, "ssl.key.password")
    if kind == "PEM":
        chain = _text(setting, "ssl.keystore.certificate.chain")
        if chain:
            pem = (_text(setting, "ssl.keystore.key") + "\n" + chain).encode()
        else:
            pem = _read("ssl.keystore.location", location)
    else:
        pem, key_password = _pkcs12_as_pem(setting, location), None
    with _private_file(pem) as path:
        try:
            context.load_cert_chain(path, password=key_password)
        except (ssl.SSLError, ValueError) as error:
            raise TlsConfigError(
                "ssl.keystore.location" if location else "ssl.keystore.key",
                f"cannot load the key and certificate chain ({_reason(error)})",
            ) from None


def _pkcs12_as_pem(setting: Lookup, location: str) -> bytes:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - PKCS12 only
    from cryptography.hazmat.primitives.serialization import pkcs12  # noqa: PLC0415

    data = _read("ssl.keystore.location", location)
    password = _password(setting, "ssl.keystore.password")
    try:
        key, certificate, extra = pkcs12.load_key_and_certificates(data, password)
    except ValueError as error:
        raise TlsConfigError("ssl.keystore.location", f"cannot read {location}: {error}") from None
    if key is None or certificate is None:
        raise TlsConfigError("ssl.keystore.location", f"{location} holds no private key entry")
    encoding = serialization.Encoding.PEM
    return key.private_bytes(
        encoding, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ) + b"".join(cert.public_bytes(encoding) for cert in (certificate, *extra))


def _load_truststore(context: ssl.SSLContext, setting: Lookup, purpose: ssl.Purpose) -> None:
    location = _text(setting, "ssl.truststore.location")
    certificates = _text(setting, "ssl.truststore.certificates")
    if not location and not certificates:
        context.load_default_certs(purpose)
        return
    if _store_kind(setting, "truststore") == "PEM":
        pem = certificates or _read("ssl.truststore.location", location).decode("ascii", "replace")
    else:
        pem = _pkcs12_certificates(setting, location)
    try:
        context.load_verify_locations(cadata=pem)
    except (ssl.SSLError, ValueError) as error:
        raise TlsConfigError(
            "ssl.truststore.location" if location else "ssl.truststore.certificates",
            f"cannot load the trusted certificates ({_reason(error)})",
        ) from None


def _pkcs12_certificates(setting: Lookup, location: str) -> str:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - PKCS12 only
    from cryptography.hazmat.primitives.serialization import pkcs12  # noqa: PLC0415

    data = _read("ssl.truststore.location", location)
    try:
        store = pkcs12.load_pkcs12(data, _password(setting, "ssl.truststore.password"))
    except ValueError as error:
        raise TlsConfigError(
            "ssl.truststore.location", f"cannot read {location}: {error}"
        ) from None
    certificates = [entry.certificate for entry in store.additional_certs]
    if store.cert is not None:
        certificates.append(store.cert.certificate)
    return "".join(
        cert.public_bytes(serialization.Encoding.PEM).decode("ascii") for cert in certificates
    )


def _reason(error: Exception) -> str:
    """OpenSSL's reason without the source location (``[SSL] PEM lib (_ssl.c:3905)``)."""
    if isinstance(error, ssl.SSLError):
        text = str(error.reason or error.strerror or error)
        text = re.sub(r"^\[\w+\]\s*|\s*\(_ssl\.c:\d+\)$", "", text)
        return text.lower().replace("_", " ")
    return str(error)


@contextlib.contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    """``data`` in a file only this user can read, removed on exit (``load_cert_chain``
    takes file names only)."""
    descriptor, path = tempfile.mkstemp(prefix="strom-keystore-", suffix=".pem")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        yield path
    finally:
        Path(path).unlink()
