"""Compatibility levels and the check a new schema must pass against a subject's versions.

BACKWARD: the new schema reads data written with the previous one; FORWARD: the previous one
reads data written with the new one; FULL: both. The ``_TRANSITIVE`` levels check against every
live version instead of only the latest. NONE checks nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from strom.registry.schema_types import ParsedSchema

__all__ = ["CompatibilityLevel", "incompatibilities"]


class CompatibilityLevel(StrEnum):
    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @property
    def transitive(self) -> bool:
        return self.endswith("_TRANSITIVE")

    @property
    def backward(self) -> bool:
        return self.startswith(("BACKWARD", "FULL"))

    @property
    def forward(self) -> bool:
        return self.startswith(("FORWARD", "FULL"))


def incompatibilities(
    level: CompatibilityLevel, new: ParsedSchema, previous: Sequence[tuple[int, ParsedSchema]]
) -> list[str]:
    """Why ``new`` fails ``level`` against ``previous`` ((version, schema), oldest first);
    empty when it passes."""
    targets = previous if level.transitive else previous[-1:]
    messages: list[str] = []
    for version, old in reversed(targets):
        problems = []
        if level.backward:
            problems += [
                f"{error} (the new schema cannot read it)" for error in new.read_errors(old)
            ]
        if level.forward:
            problems += [
                f"{error} (it cannot read the new schema)" for error in old.read_errors(new)
            ]
        messages += [f"version {version}: {problem}" for problem in problems]
        if problems:
            messages.append(f"{{compatibility: '{level.value}'}}")
    return messages
