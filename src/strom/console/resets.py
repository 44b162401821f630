"""A consumer group's offset reset, pure, as kafka-consumer-groups.sh --reset-offsets plans it:
the target read from the page's request, refused while the group has members, and each
partition's new offset (an asked-for offset is kept within the partition's earliest and latest;
a timestamp that no record reaches resets to the latest)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["INACTIVE_STATES", "ResetTarget", "check_inactive", "new_offset", "parse_target"]

KINDS: Final = ("earliest", "latest", "timestamp", "offset")
INACTIVE_STATES: Final = frozenset({"EMPTY", "DEAD"})
"""The states a group's offsets may be reset in (it has no members to overwrite them)."""


@dataclass(frozen=True)
class ResetTarget:
    kind: str
    value: int | None = None


def parse_target(body: Mapping[str, object]) -> ResetTarget:
    """The target of ``{"to": KIND, "value": N}``; a ``ValueError`` says what is wrong."""
    kind = body.get("to")
    if kind not in KINDS:
        raise ValueError(f"to: one of {', '.join(KINDS)}")
    if kind in ("earliest", "latest"):
        return ResetTarget(str(kind))
    value = body.get("value")
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        what = "milliseconds since the epoch" if kind == "timestamp" else "an offset"
        raise ValueError(f"value: {what}, a whole number >= 0")
    return ResetTarget(str(kind), value)


def check_inactive(group: str, state: str) -> None:
    """Refuse, as Kafka's tool does, while the group has members (they would commit over it)."""
    if state.upper() not in INACTIVE_STATES:
        raise ValueError(
            f"Assignments can only be reset if the group '{group}' is inactive, "
            f"but the current state is {''.join(w.title() for w in state.split('_'))}."
        )


def new_offset(target: ResetTarget, earliest: int, latest: int, by_time: int | None) -> int:
    """A partition's offset after the reset; ``by_time`` is the first offset at or after the
    target's timestamp (None when no record is that late)."""
    if target.kind == "earliest":
        return earliest
    if target.kind == "latest":
        return latest
    if target.kind == "timestamp":
        return latest if by_time is None or by_time < 0 else by_time
    assert target.value is not None
    return min(max(target.value, earliest), latest)
