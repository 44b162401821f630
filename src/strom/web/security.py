"""An HTTP service's listener security under Kafka's and Confluent's settings: TLS from the
``ssl.*`` settings, read by ``strom.security.tls`` as the broker's listeners are (PKCS12 or PEM
stores; JKS refused with the ``keytool`` command that converts it), with ``ssl.client.auth``
(Kafka Connect's ``none``/``requested``/``required``, or Confluent's ``true``/``false``) or
Confluent's ``ssl.client.authentication``; and HTTP basic authentication's users from the JAAS
file that ``java.security.auth.login.config`` names (Jetty's ``PropertyFileLoginModule`` and its
``user: password[,role...]`` file, or Kafka Connect's and its ``user=password`` properties)."""

from __future__ import annotations

import hashlib
import hmac
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from strom.config.properties import load_properties
from strom.config.setting import ConfigError, Value
from strom.security.jaas import (
    LOGIN_CONFIG,
    JaasConfigError,
    login_config_from_jvm_options,
    read_jaas_file,
)
from strom.security.tls import server_context

__all__ = ["ListenerSecurity", "SecurityError", "User", "jaas_users", "listener_ssl_context"]

PROPERTY_FILE_LOGIN_MODULE = "org.eclipse.jetty.jaas.spi.PropertyFileLoginModule"
CONNECT_LOGIN_MODULE = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
"""Kafka Connect's: a Java properties file of ``user=password``, no roles, passwords as written."""
_LISTS = {"ssl.enabled.protocols": "TLSv1.2,TLSv1.3", "ssl.cipher.suites": ""}
_CLIENT_AUTH = {"NONE": "none", "REQUESTED": "requested", "REQUIRED": "required"}


class SecurityError(ValueError):
    """A security setting that cannot be used; the message names the setting."""


def listener_ssl_context(values: Mapping[str, str]) -> ssl.SSLContext:
    """The https listener's context from the ``ssl.*`` settings; a ``ValueError`` naming the
    setting when one cannot be used."""

    def setting(name: str) -> Value:
        if name in _LISTS:
            return tuple(part.strip() for part in values.get(name, _LISTS[name]).split(","))
        return values.get(name)

    name = "ssl.client.authentication"
    mode = values.get(name)
    if mode is None:  # Kafka's names, or Confluent's older boolean
        name, mode = "ssl.client.auth", values.get("ssl.client.auth", "none")
        mode = {"true": "REQUIRED", "false": "NONE"}.get(mode.strip().lower(), mode)
    if mode.strip().upper() not in _CLIENT_AUTH:
        raise SecurityError(f"{name}: expected NONE, REQUESTED or REQUIRED, got {mode}")
    return server_context(setting, client_auth=_CLIENT_AUTH[mode.strip().upper()])


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


def _connect_password_file(path: Path) -> dict[str, User]:
    try:
        return {
            name: User(password, frozenset()) for name, password in load_properties(path).items()
        }
    except ConfigError as error:
        raise SecurityError(f"the password file: {error}") from error


def jaas_users(config: str | Path, realm: str) -> dict[str, User]:
    """The users of the JAAS ``config`` file's section named ``realm``
    (``authentication.realm``), whose login module must be Jetty's or Kafka Connect's property
    file one."""
    try:
        sections = read_jaas_file(config)
    except JaasConfigError as error:
        raise SecurityError(f"{LOGIN_CONFIG}: {error}") from error
    if realm not in sections:
        raise SecurityError(
            f"{LOGIN_CONFIG}: {config} has no section {realm!r} (authentication.realm)"
        )
    modules = sections[realm]
    if len(modules) != 1:
        raise SecurityError(
            f"{config}: section {realm!r}: expected one login module, got {len(modules)}"
        )
    module = modules[0]
    read = {
        PROPERTY_FILE_LOGIN_MODULE: _password_file,
        CONNECT_LOGIN_MODULE: _connect_password_file,
    }.get(module.class_name)
    if read is None:
        raise SecurityError(
            f"{config}: login module {module.class_name} is not supported (only"
            f" {PROPERTY_FILE_LOGIN_MODULE} or {CONNECT_LOGIN_MODULE})"
        )
    if "file" not in module.options:
        raise SecurityError(f"{config}: {module.class_name} in {realm!r} names no file=")
    try:
        return read(Path(module.options["file"]))
    except OSError as error:
        raise SecurityError(f"{config}: the password file: {error}") from error


@dataclass(frozen=True)
class ListenerSecurity:
    """A listener's security settings as Confluent's services read them: ``tls``, the ``ssl.*``
    settings of an https listener; ``jaas_config``, the JAAS file of basic authentication's
    users (``authentication.method=BASIC``) with its ``realm`` and the ``roles`` a user needs
    one of (``authentication.roles``; ``*``: any user)."""

    tls: Mapping[str, str] | None = None
    jaas_config: str | None = None
    realm: str = ""
    roles: frozenset[str] = frozenset({"*"})

    @classmethod
    def from_properties(
        cls, values: Mapping[str, str], scheme: str, *, realm: str, jvm_options: str = ""
    ) -> ListenerSecurity:
        """The settings in ``values`` for a listener of ``scheme``; ``realm`` is the default
        ``authentication.realm``, ``jvm_options`` the service's ``*_OPTS`` (where
        ``-Djava.security.auth.login.config=`` may name the JAAS file)."""
        method = values.get("authentication.method", "NONE").strip().upper()
        if method not in ("NONE", "BASIC"):
            raise SecurityError(f"authentication.method: expected NONE or BASIC, got {method}")
        jaas = values.get(LOGIN_CONFIG) or login_config_from_jvm_options(jvm_options)
        if method == "BASIC" and not jaas:
            raise SecurityError(f"authentication.method=BASIC needs {LOGIN_CONFIG}")
        roles = values.get("authentication.roles", "*")
        return cls(
            tls={k: v for k, v in values.items() if k.startswith("ssl.")}
            if scheme == "https"
            else None,
            jaas_config=jaas if method == "BASIC" else None,
            realm=values.get("authentication.realm", realm),
            roles=frozenset(r.strip() for r in roles.split(",") if r.strip()),
        )

    def ssl_context(self) -> ssl.SSLContext | None:
        """The https listener's context (None for http)."""
        return listener_ssl_context(self.tls) if self.tls is not None else None

    def users(self) -> dict[str, User] | None:
        """Basic authentication's users (None without it)."""
        return jaas_users(self.jaas_config, self.realm) if self.jaas_config else None
