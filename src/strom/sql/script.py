"""The client side of statements, as ksqlDB's CLI reads them (`strom sql shell` and `strom sql
run`): text cut into statements at the `;` that ends each (not one inside a string, a quoted
name or a comment), and each statement sorted by where it goes: the client's own `SET`,
`UNSET` and `RUN SCRIPT`, a query for `/query-stream`, anything else for `/ksql`. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Local", "Piece", "Query", "classify", "split", "statements"]

_QUOTES = {"'": "'", '"': '"', "`": "`"}


@dataclass(frozen=True)
class Piece:
    """One statement of a text: as written (its `;` included, its comments each a space), and
    the line it starts on."""

    text: str
    line: int


def split(text: str) -> tuple[list[Piece], str]:
    """The complete statements of `text` (comments left out), and what follows the last (a
    statement not ended yet, or only blanks and comments)."""
    pieces: list[Piece] = []
    code: list[str] = []  # the current statement's text so far, a space for each comment
    first = -1  # where its first character that is not a blank or comment is
    start = i = 0
    while i < len(text):
        c = text[i]
        if text.startswith("--", i) or text.startswith("/*", i):
            end = text.find("\n" if c == "-" else "*/", i + 2)
            i = len(text) if end < 0 else end + (1 if c == "-" else 2)
            code.append(" ")
            continue
        if first < 0 and not c.isspace():
            first = i
        step = _after_quoted(text, i) if c in _QUOTES else i + 1
        code.append(text[i:step])
        i = step
        if c == ";":
            statement = "".join(code).strip()
            if statement != ";":
                pieces.append(Piece(statement, text.count("\n", 0, first) + 1))
            code, first, start = [], -1, i
    return pieces, text[start:]


def statements(text: str) -> list[Piece]:
    """Every statement of a script: the complete ones, then one not ended by `;` (the server
    answers it with its syntax error)."""
    pieces, rest = split(text)
    if split(rest + ";")[0]:
        start = len(text) - len(rest.lstrip())
        pieces.append(Piece(rest.strip(), text.count("\n", 0, start) + 1))
    return pieces


def _after_quoted(text: str, i: int) -> int:
    """The index after the quoted string or name opened at `i` (a doubled quote is one
    quote character inside it); the end of `text` when it is not closed yet."""
    quote = _QUOTES[text[i]]
    i += 1
    while True:
        end = text.find(quote, i)
        if end < 0:
            return len(text)
        if text.startswith(quote * 2, end):
            i = end + 2
            continue
        return end + 1


@dataclass(frozen=True)
class Local:
    """A statement the client runs itself: `SET` (value given), `UNSET` (value None) or `RUN
    SCRIPT` (`name` the file)."""

    command: str
    name: str
    value: str | None = None


@dataclass(frozen=True)
class Query:
    """A `SELECT` (or `PRINT`) for the query endpoint; `push` when it has `EMIT CHANGES`."""

    text: str
    push: bool
    limit: int | None


_STRING = r"'((?:[^']|'')*)'"
_LOCAL = {
    "SET": re.compile(rf"SET\s+{_STRING}\s*=\s*{_STRING}\s*;", re.IGNORECASE | re.DOTALL),
    "UNSET": re.compile(rf"UNSET\s+{_STRING}\s*;", re.IGNORECASE | re.DOTALL),
    "RUN SCRIPT": re.compile(rf"RUN\s+SCRIPT\s+{_STRING}\s*;", re.IGNORECASE | re.DOTALL),
}
_EMIT_CHANGES = re.compile(r"\bEMIT\s+CHANGES\b", re.IGNORECASE)
_LIMIT = re.compile(r"\bLIMIT\s+(\d+)\s*;$", re.IGNORECASE)


def classify(piece: str) -> Local | Query | str:
    """Where a statement (a `Piece`'s text) goes: a `Local`, a `Query`, else its text as
    `/ksql` takes it. A `SET`, `UNSET` or `RUN SCRIPT` the client cannot read goes to the
    server, which answers with the syntax error."""
    code = piece.strip()
    first = code.split(None, 1)[0].upper() if code else ""
    for command, pattern in _LOCAL.items():
        if command.split()[0] == first and (found := pattern.fullmatch(code)):
            name, *value = (g.replace("''", "'") for g in found.groups())
            return Local(command, name, value[0] if value else None)
    if first in ("SELECT", "PRINT"):
        limit = _LIMIT.search(code)
        return Query(code, bool(_EMIT_CHANGES.search(code)), int(limit[1]) if limit else None)
    return code
