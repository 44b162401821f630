"""``bootstrap.checkpoint``: the metadata a new cluster starts with, written at format time.

As ``kafka-storage.sh format`` does, ``strom storage format`` writes the file into the data
directory, in the metadata snapshot format (a header, the records, a footer). It holds the
cluster's ``metadata.version`` (a ``FeatureLevelRecord``). The first active controller of a new
cluster writes those records as the log's first ones; a directory without the file bootstraps
at strom's default level.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

from strom.controller import DEFAULT_METADATA_VERSION
from strom.metadata import (
    METADATA_VERSION_FEATURE,
    FeatureLevelRecord,
    decode_record,
    encode_record,
)
from strom.raft import OffsetAndEpoch, SnapshotReader, SnapshotWriter

__all__ = [
    "BOOTSTRAP_FILE",
    "RELEASE_VERSIONS",
    "BootstrapError",
    "read_bootstrap_metadata_version",
    "release_metadata_version",
    "write_bootstrap_checkpoint",
]

BOOTSTRAP_FILE: Final = "bootstrap.checkpoint"

RELEASE_VERSIONS: Final = {
    "3.3-IV3": 7,
    "3.4-IV0": 8,
    "3.5-IV0": 9,
    "3.5-IV1": 10,
    "3.5-IV2": 11,
    "3.6-IV0": 12,
    "3.6-IV1": 13,
    "3.6-IV2": 14,
}
"""Kafka's ``metadata.version`` names and levels that strom can run (``--release-version``)."""

_RELEASE: Final = re.compile(r"^(\d+\.\d+)(-IV\d+)?$")


class BootstrapError(ValueError):
    """An unknown release version, or an unreadable bootstrap file (one line)."""


def release_metadata_version(release: str) -> int:
    """The metadata.version level of a release: ``3.6-IV2``, or ``3.6`` for its newest level."""
    match = _RELEASE.match(release.strip())
    if match is not None and match.group(2) is None:
        levels = [
            v for name, v in RELEASE_VERSIONS.items() if name.startswith(match.group(1) + "-")
        ]
        if levels:
            return max(levels)
    if release.strip() in RELEASE_VERSIONS:
        return RELEASE_VERSIONS[release.strip()]
    raise BootstrapError(
        f"--release-version: {release!r} is not one of {', '.join(RELEASE_VERSIONS)} "
        "(or a release such as 3.6)"
    )


def write_bootstrap_checkpoint(data_dir: Path, *, metadata_version: int, timestamp: int) -> None:
    """Write ``bootstrap.checkpoint`` atomically (a temporary file, fsync, rename)."""
    frozen: list[bytes] = []
    writer = SnapshotWriter(
        OffsetAndEpoch(0, 0), timestamp=timestamp, on_frozen=lambda _, data: frozen.append(data)
    )
    record = FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=metadata_version)
    writer.append([encode_record(record)])
    writer.freeze()
    path = data_dir / BOOTSTRAP_FILE
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as file:
        file.write(frozen[0])
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)


def read_bootstrap_metadata_version(data_dir: Path) -> int:
    """The metadata.version a new cluster starts at: the bootstrap file's, else the default."""
    path = data_dir / BOOTSTRAP_FILE
    if not path.exists():
        return DEFAULT_METADATA_VERSION
    try:
        snapshot = SnapshotReader(OffsetAndEpoch(0, 0), path.read_bytes())
        for data in snapshot.records():
            record = decode_record(data)
            if isinstance(record, FeatureLevelRecord) and record.name == METADATA_VERSION_FEATURE:
                return int(record.feature_level)
    except (OSError, ValueError) as error:
        raise BootstrapError(f"{path}: cannot read the bootstrap metadata: {error}") from None
    raise BootstrapError(f"{path}: holds no metadata.version")
