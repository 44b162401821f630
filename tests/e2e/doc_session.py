"""The shell sessions of a Markdown document: each ``$ command`` shown in an indented code block,
with the output shown under it, in document order.

A command continues on the next line after a trailing backslash. The output is every line up to
the next ``$`` line or the end of the block; a line of ``...`` stands for any number of lines,
and a lone ``$`` means the command printed nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

ELLIPSIS = "..."
_BLOCK_INDENT = re.compile(r"^( {4,})\S")


@dataclass(frozen=True)
class Example:
    line: int
    """Where the command starts in the document (1-based)."""
    command: str
    output: tuple[str, ...]


def examples(markdown: str) -> list[Example]:
    """Every ``$`` command of the document's indented code blocks, in order."""
    found: list[Example] = []
    for start, block in _code_blocks(markdown.splitlines()):
        found.extend(_session(start, block))
    return found


def _code_blocks(lines: Sequence[str]) -> Iterator[tuple[int, list[str]]]:
    """(first line number, dedented lines) of each indented block after a blank line."""
    index = 0
    while index < len(lines):
        match = _BLOCK_INDENT.match(lines[index])
        if match is None or (index > 0 and lines[index - 1].strip()):
            index += 1
            continue
        indent = len(match.group(1))
        start = index
        block: list[str] = []
        while index < len(lines) and (
            lines[index].startswith(" " * indent) or not lines[index].strip()
        ):
            block.append(lines[index][indent:])
            index += 1
        while block and not block[-1].strip():
            block.pop()
        yield start + 1, block


def _session(start: int, block: list[str]) -> Iterator[Example]:
    index = 0
    while index < len(block):
        if not (block[index] == "$" or block[index].startswith("$ ")):
            index += 1
            continue
        first = index
        parts = [block[index][2:]]
        while parts[-1].endswith("\\") and index + 1 < len(block):
            index += 1
            parts[-1] = parts[-1][:-1].rstrip()
            parts.append(block[index].strip())
        index += 1
        output: list[str] = []
        while index < len(block) and not (block[index] == "$" or block[index].startswith("$ ")):
            output.append(block[index])
            index += 1
        if index < len(block) and block[index] == "$" and not output:
            index += 1  # a lone "$": the command printed nothing
        yield Example(start + first, " ".join(part for part in parts if part), tuple(output))


def matches(expected: Sequence[str], actual: Sequence[str]) -> bool:
    """Whether ``actual`` lines are ``expected``, where an ``...`` line stands for any lines."""
    if not expected:
        return not actual
    head, *rest = expected
    if head == ELLIPSIS:
        return any(matches(rest, actual[skip:]) for skip in range(len(actual) + 1))
    return bool(actual) and actual[0] == head and matches(rest, actual[1:])
