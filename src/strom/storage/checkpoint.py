"""Kafka's offset checkpoint files, written atomically.

Format (Kafka's ``CheckpointFile`` with the offset formatter)::

    0                      <- version
    2                      <- number of entries
    orders 0 1234          <- topic, partition, offset; one space apart
    payments 3 99

Two of them live in each data directory: ``recovery-point-offset-checkpoint`` (where crash
recovery may start for each partition) and ``log-start-offset-checkpoint``. A write goes to
``<name>.tmp``, is fsynced, renamed over the file and the directory fsynced, so a reader sees
the old file or the new one, never a mix.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final, TypeVar

from strom.common import TopicPartition
from strom.storage._files import fsync_directory

__all__ = [
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "CheckpointError",
    "read_checkpoint",
    "read_offset_checkpoint",
    "write_checkpoint",
    "write_offset_checkpoint",
]

RECOVERY_POINT_CHECKPOINT: Final = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT: Final = "log-start-offset-checkpoint"
VERSION: Final = 0

T = TypeVar("T")


class CheckpointError(ValueError):
    """A checkpoint file that cannot be parsed; the message names the file and line."""


def write_checkpoint(path: Path, entries: Sequence[Sequence[str | int]]) -> None:
    """Replace ``path`` atomically with Kafka's checkpoint format: version 0, the number of
    entries, then one line per entry, its fields one space apart."""
    lines = [str(VERSION), str(len(entries))]
    lines += [" ".join(str(field) for field in entry) for entry in entries]
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)
    fsync_directory(path.parent)


def read_checkpoint(
    path: Path, *, fields: int, what: str, parse: Callable[[list[str]], T]
) -> list[T]:
    """The entries of a checkpoint file of ``fields`` fields each, each made by ``parse`` (a
    ValueError from it is a malformed entry; ``what`` names the fields in errors); empty when
    the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.splitlines()

    def fail(line: int, reason: str) -> CheckpointError:
        return CheckpointError(f"{path}: line {line}: {reason}")

    if not lines or lines[0].strip() != str(VERSION):
        raise fail(1, f"unknown checkpoint version {lines[0] if lines else ''!r}")
    if len(lines) < 2 or not lines[1].strip().isdigit():
        raise fail(2, "expected the number of entries")
    expected = int(lines[1])
    entries = [
        (number, line.split()) for number, line in enumerate(lines[2:], start=3) if line.strip()
    ]
    if len(entries) != expected:
        raise fail(2, f"expected {expected} entries, found {len(entries)}")
    parsed: list[T] = []
    for number, entry in entries:
        if len(entry) != fields:
            raise fail(number, f"expected {what!r}, got {' '.join(entry)!r}")
        try:
            parsed.append(parse(entry))
        except ValueError:
            raise fail(number, f"malformed entry {' '.join(entry)!r}") from None
    return parsed


def write_offset_checkpoint(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    """Replace ``path`` atomically with ``offsets`` (sorted by topic, then partition)."""
    entries: list[tuple[str, int, int]] = []
    for tp, offset in sorted(offsets.items()):
        if not tp.topic or any(c.isspace() for c in tp.topic):
            raise ValueError(f"topic name {tp.topic!r} cannot be written to a checkpoint")
        entries.append((tp.topic, tp.partition, offset))
    write_checkpoint(path, entries)


def read_offset_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """The offsets in ``path``; empty when the file does not exist."""

    def parse(fields: list[str]) -> tuple[TopicPartition, int]:
        topic, partition, offset = fields
        return TopicPartition(topic, int(partition)), int(offset)

    return dict(read_checkpoint(path, fields=3, what="topic partition offset", parse=parse))
