"""JAAS login configuration, parsed as Kafka's ``JaasConfig`` and Java's ``ConfigFile`` do.

A login module entry (the value of ``sasl.jaas.config``)::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

is a class name, a control flag (required, requisite, sufficient, optional) and
``name=value`` options, values bare or double-quoted (a backslash escapes the next character),
ended by ``;``. A JAAS file (the one the JVM property ``java.security.auth.login.config``
names) holds sections of such entries, ``//`` and ``/* */`` comments between them::

    KafkaServer {
        org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";
    };

Anything else is a :class:`JaasConfigError` saying what was expected.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final

__all__ = [
    "LOGIN_CONFIG",
    "JaasConfigError",
    "LoginModule",
    "login_config_from_jvm_options",
    "login_module_class",
    "parse_jaas_config",
    "parse_jaas_file",
    "read_jaas_file",
    "server_section",
]

LOGIN_CONFIG: Final = "java.security.auth.login.config"
"""The JVM property (and strom's setting) naming the JAAS file."""

SERVER_SECTION: Final = "KafkaServer"
_LOGIN_MODULES: Final = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}
_FLAGS: Final = frozenset({"required", "requisite", "sufficient", "optional"})
_TOKEN: Final = re.compile(r'\s*(?:"((?:\\.|[^"\\])*)"|([=;])|([^\s=;"]+))', re.DOTALL)
_COMMENT: Final = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.DOTALL)
_SECTION: Final = re.compile(
    r'\s*([^\s{};"]+)\s*\{((?:"(?:\\.|[^"\\])*"|[^"{}])*)\}\s*;', re.DOTALL
)


class JaasConfigError(ValueError):
    """A JAAS configuration cannot be parsed."""


@dataclass(frozen=True, slots=True)
class LoginModule:
    class_name: str
    flag: str
    options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def users(self) -> Mapping[str, str]:
        """PLAIN's users: ``user_<name>="<password>"`` options (``PlainServerCallbackHandler``)."""
        return MappingProxyType(
            {
                name.removeprefix("user_"): password
                for name, password in self.options.items()
                if name.startswith("user_")
            }
        )


def login_module_class(mechanism: str) -> str | None:
    """The class of Kafka's login module for a SASL mechanism (None: Kafka has none)."""
    return _LOGIN_MODULES.get(mechanism.upper())


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text): kind is "quoted", "=", ";" or "word"."""
    tokens: list[tuple[str, str]] = []
    position, end = 0, len(text.rstrip())
    while position < end:
        found = _TOKEN.match(text, position)
        if found is None:
            raise JaasConfigError(f"unterminated quoted value at character {position}")
        quoted, symbol, word = found.groups()
        if quoted is not None:
            tokens.append(("quoted", re.sub(r"\\(.)", r"\1", quoted, flags=re.DOTALL)))
        elif symbol is not None:
            tokens.append((symbol, symbol))
        else:
            tokens.append(("word", word))
        position = found.end()
    return tokens


def _modules(text: str) -> tuple[LoginModule, ...]:
    """The login module entries of ``text``, in order."""
    tokens = _tokens(text)
    modules: list[LoginModule] = []
    index = 0
    while index < len(tokens):
        kind, class_name = tokens[index]
        if kind != "word":
            raise JaasConfigError(f"expected a login module class name, got {class_name!r}")
        if index + 1 >= len(tokens) or tokens[index + 1][1].lower() not in _FLAGS:
            got = tokens[index + 1][1] if index + 1 < len(tokens) else "the end"
            raise JaasConfigError(
                f"expected a control flag ({', '.join(sorted(_FLAGS))}) after {class_name}, "
                f"got {got!r}"
            )
        flag = tokens[index + 1][1].lower()
        index += 2
        options: dict[str, str] = {}
        while index < len(tokens) and tokens[index][0] != ";":
            if index + 2 >= len(tokens) or tokens[index][0] != "word":
                raise JaasConfigError(f"expected name=value, got {tokens[index][1]!r}")
            name, equals, value = tokens[index], tokens[index + 1], tokens[index + 2]
            if equals[0] != "=" or value[0] not in ("word", "quoted"):
                raise JaasConfigError(f"expected name=value after {name[1]!r}")
            options[name[1]] = value[1]
            index += 3
        if index >= len(tokens):
            raise JaasConfigError(f"the entry of {class_name} must end with ';'")
        index += 1
        modules.append(LoginModule(class_name, flag, MappingProxyType(options)))
    return tuple(modules)


def parse_jaas_config(text: str) -> LoginModule:
    """The one login module of a ``sasl.jaas.config`` value."""
    modules = _modules(text)
    if not modules:
        raise JaasConfigError("expected a login module, got nothing")
    if len(modules) != 1:
        raise JaasConfigError(f"expected one login module, got {len(modules)}")
    return modules[0]


def parse_jaas_file(text: str) -> Mapping[str, tuple[LoginModule, ...]]:
    """Section name -> its login modules, in the order of a JAAS file's ``Name { ... };``."""
    text = _COMMENT.sub(lambda found: found.group(1) or "", text)
    sections: dict[str, tuple[LoginModule, ...]] = {}
    position, end = 0, len(text.rstrip())
    while position < end:
        found = _SECTION.match(text, position)
        if found is None:
            rest = text[position:end].lstrip()
            line = text.count("\n", 0, end - len(rest)) + 1
            got = rest.split(None, 1)[0][:40]
            raise JaasConfigError(f"line {line}: expected a section 'Name {{ ... }};', got {got!r}")
        name, body = found.groups()
        where = f"section {name!r} (line {text.count(chr(10), 0, found.start(1)) + 1})"
        if name in sections:
            raise JaasConfigError(f"{where} appears twice")
        try:
            modules = _modules(body)
        except JaasConfigError as error:
            raise JaasConfigError(f"{where}: {error}") from None
        if not modules:
            raise JaasConfigError(f"{where} has no login module")
        sections[name] = modules
        position = found.end()
    return MappingProxyType(sections)


def read_jaas_file(path: str | Path) -> Mapping[str, tuple[LoginModule, ...]]:
    """The sections of the JAAS file at ``path``; a :class:`JaasConfigError` naming the file
    when it cannot be read or parsed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise JaasConfigError(f"{path}: {error.strerror or error}") from None
    try:
        return parse_jaas_file(text)
    except JaasConfigError as error:
        raise JaasConfigError(f"{path}: {error}") from None


def server_section(
    sections: Mapping[str, tuple[LoginModule, ...]], listener: str
) -> tuple[LoginModule, ...] | None:
    """A broker listener's modules, as Kafka's ``JaasContext.loadServerContext`` finds them:
    the section ``<listener, lower case>.KafkaServer``, else ``KafkaServer``."""
    own = sections.get(f"{listener.lower()}.{SERVER_SECTION}")
    return own if own is not None else sections.get(SERVER_SECTION)


def login_config_from_jvm_options(options: str) -> str | None:
    """The JAAS file of ``-Djava.security.auth.login.config=PATH`` in JVM options as
    ``KAFKA_OPTS`` passes them (the last one wins, as on the JVM)."""
    try:
        words = shlex.split(options)
    except ValueError:  # an unbalanced quote: the shell would not have started the JVM either
        words = options.split()
    found = None
    for word in words:
        name, sep, value = word.partition("=")
        if sep and name == f"-D{LOGIN_CONFIG}":
            found = value.removeprefix("=")  # ``==PATH``: this file only, for the JVM
    return found
