"""``sasl.jaas.config``: a JAAS login module entry, parsed as Kafka's ``JaasConfig`` does.

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

One module: its class name, a control flag (required, requisite, sufficient, optional) and
``name=value`` options, values bare or double-quoted (a backslash escapes the next character),
ended by ``;``. Anything else is a :class:`JaasConfigError` saying what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

__all__ = ["JaasConfigError", "LoginModule", "parse_jaas_config"]

_FLAGS: Final = frozenset({"required", "requisite", "sufficient", "optional"})
_TOKEN: Final = re.compile(r'\s*(?:"((?:\\.|[^"\\])*)"|([=;])|([^\s=;"]+))', re.DOTALL)


class JaasConfigError(ValueError):
    """``sasl.jaas.config`` cannot be parsed."""


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


def parse_jaas_config(text: str) -> LoginModule:
    """The one login module of a ``sasl.jaas.config`` value."""
    tokens = _tokens(text)
    if not tokens:
        raise JaasConfigError("expected a login module, got nothing")
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
    if len(modules) != 1:
        raise JaasConfigError(f"expected one login module, got {len(modules)}")
    return modules[0]
