"""Kafka's offset checkpoint files."""

from __future__ import annotations

from pathlib import Path

import pytest

from strom.common import TopicPartition
from strom.storage.checkpoint import (
    CheckpointError,
    read_offset_checkpoint,
    write_offset_checkpoint,
)


def test_round_trip_and_format(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    offsets = {
        TopicPartition("b-topic", 1): 7,
        TopicPartition("a", 10): 0,
        TopicPartition("a", 2): 5,
    }
    write_offset_checkpoint(path, offsets)
    assert path.read_text() == "0\n3\na 2 5\na 10 0\nb-topic 1 7\n"
    assert read_offset_checkpoint(path) == offsets
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()
    write_offset_checkpoint(path, {})
    assert path.read_text() == "0\n0\n"
    assert read_offset_checkpoint(path) == {}


def test_missing_file_is_empty(tmp_path: Path) -> None:
    assert read_offset_checkpoint(tmp_path / "nope") == {}


def test_reads_kafkas_own_file(tmp_path: Path) -> None:
    path = tmp_path / "log-start-offset-checkpoint"
    path.write_text("0\n2\n__consumer_offsets 13 4096\norders 0 12\n")
    assert read_offset_checkpoint(path) == {
        TopicPartition("__consumer_offsets", 13): 4096,
        TopicPartition("orders", 0): 12,
    }


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "version"),
        ("1\n0\n", "version"),
        ("0\nx\n", "number of entries"),
        ("0\n2\na 0 1\n", "expected 2 entries, found 1"),
        ("0\n1\na 0\n", "topic partition offset"),
        ("0\n1\na zero 1\n", "malformed"),
    ],
)
def test_malformed_files(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CheckpointError, match=reason):
        read_offset_checkpoint(path)
