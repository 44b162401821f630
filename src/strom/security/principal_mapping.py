"""``ssl.principal.mapping.rules``: from a certificate's distinguished name to a user name.

Kafka's ``SslPrincipalMapper``: comma-separated rules, ``DEFAULT`` (the name unchanged) or
``RULE:pattern/replacement/[LU]``; the first rule whose pattern matches the whole name gives the
result (``L``/``U`` lower- or upper-cases it). A name no rule matches fails authentication.
Replacements use Java's syntax: ``$1`` is a group, ``\\$`` a literal dollar.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = ["NoMatchingRule", "PrincipalMapper"]

_RULE: Final = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER: Final = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSER: Final = re.compile(_RULE)
_BACK_REFERENCE: Final = re.compile(r"\\(.)|\$(\d+)")


class NoMatchingRule(ValueError):
    """No rule maps the distinguished name (the connection fails authentication)."""


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None
    """None: DEFAULT."""
    replacement: Callable[[re.Match[str]], str]
    case: str

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(self.replacement, name)
        if self.case == "L":
            return result.lower()
        return result.upper() if self.case == "U" else result


def _replacement(template: str, groups: int) -> Callable[[re.Match[str]], str]:
    """Java's ``Matcher.replaceAll`` template as a function: ``$`` takes as many digits as
    still name a group; one that names none stays literal (Kafka escapes it)."""
    parts: list[str | int] = []
    position = 0
    for found in _BACK_REFERENCE.finditer(template):
        parts.append(template[position : found.start()])
        position = found.end()
        escaped, digits = found.group(1), found.group(2)
        if escaped is not None:
            parts.append(escaped)
            continue
        index, used = int(digits[0]), 1
        while used < len(digits) and index * 10 + int(digits[used]) <= groups:
            index, used = index * 10 + int(digits[used]), used + 1
        parts.append(index if index <= groups else "$" + digits[0])
        position -= len(digits) - used
    parts.append(template[position:])

    def expand(match: re.Match[str]) -> str:
        return "".join(part if isinstance(part, str) else match.group(part) or "" for part in parts)

    return expand


class PrincipalMapper:
    """Parsed ``ssl.principal.mapping.rules`` (ValueError naming a rule it cannot parse)."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self._rules: tuple[_Rule, ...] = tuple(
            rule for text in _split(rules) if (rule := _parse(text)) is not None
        )

    def name_of(self, distinguished_name: str) -> str:
        for rule in self._rules:
            name = rule.apply(distinguished_name)
            if name is not None:
                return name
        raise NoMatchingRule(f"no ssl.principal.mapping.rules rule applies to {distinguished_name}")


def _split(rules: str) -> list[str]:
    return [found.group(1) for found in _SPLITTER.finditer(rules.strip()) if found.group(1)]


def _parse(text: str) -> _Rule | None:
    found = _PARSER.match(text)
    if found is None or found.end() != len(text):
        raise ValueError(f"invalid rule {text!r}")
    if found.group(1) is not None:
        return _Rule(None, lambda match: match.group(0), "")
    if found.group(2) is None:
        return None  # empty rules are ignored
    try:
        pattern = re.compile(found.group(2))
    except re.error as error:
        raise ValueError(f"invalid rule {text!r}: {error}") from None
    return _Rule(pattern, _replacement(found.group(3), pattern.groups), found.group(4))
