"""``bootstrap.checkpoint``: the metadata a new cluster starts with, written at format time.

As ``kafka-storage.sh format`` does, ``strom storage format`` writes the file into the data
directory, in the metadata snapshot format (a header, the records, a footer). It holds the
cluster's ``metadata.version`` (a ``FeatureLevelRecord``), and the SCRAM credentials of
``--add-scram`` (``UserScramCredentialRecord``s, so that SASL/SCRAM users can log in to a new
cluster). The first active controller of a new cluster writes those records as the log's first
ones; a directory without the file bootstraps at strom's default level.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from strom.controller import DEFAULT_METADATA_VERSION
from strom.metadata import (
    METADATA_VERSION_FEATURE,
    FeatureLevelRecord,
    MetadataRecord,
    UserScramCredentialRecord,
    decode_record,
    encode_record,
)
from strom.raft import OffsetAndEpoch, SnapshotReader, SnapshotWriter
from strom.security.scram import ScramUser

__all__ = [
    "BOOTSTRAP_FILE",
    "RELEASE_VERSIONS",
    "BootstrapError",
    "read_bootstrap_metadata_version",
    "read_bootstrap_scram",
    "release_metadata_version",
    "scram_records",
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


def scram_records(users: Sequence[ScramUser]) -> list[UserScramCredentialRecord]:
    """The credential records of ``--add-scram`` users (a fresh random salt each)."""
    records = []
    for user in users:
        credential = user.credential()
        records.append(
            UserScramCredentialRecord(
                name=user.name,
                mechanism=user.mechanism,
                salt=credential.salt,
                stored_key=credential.stored_key,
                server_key=credential.server_key,
                iterations=credential.iterations,
            )
        )
    return records


def write_bootstrap_checkpoint(
    data_dir: Path,
    *,
    metadata_version: int,
    timestamp: int,
    scram: Sequence[UserScramCredentialRecord] = (),
) -> None:
    """Write ``bootstrap.checkpoint`` atomically (a temporary file, fsync, rename)."""
    frozen: list[bytes] = []
    writer = SnapshotWriter(
        OffsetAndEpoch(0, 0), timestamp=timestamp, on_frozen=lambda _, data: frozen.append(data)
    )
    version = FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=metadata_version)
    records: list[MetadataRecord] = [version, *scram]
    writer.append([encode_record(record) for record in records])
    writer.freeze()
    path = data_dir / BOOTSTRAP_FILE
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as file:
        file.write(frozen[0])
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)


def _read(path: Path) -> list[MetadataRecord]:
    try:
        snapshot = SnapshotReader(OffsetAndEpoch(0, 0), path.read_bytes())
        return [decode_record(data) for data in snapshot.records()]
    except (OSError, ValueError) as error:
        raise BootstrapError(f"{path}: cannot read the bootstrap metadata: {error}") from None


def read_bootstrap_metadata_version(data_dir: Path) -> int:
    """The metadata.version a new cluster starts at: the bootstrap file's, else the default."""
    path = data_dir / BOOTSTRAP_FILE
    if not path.exists():
        return DEFAULT_METADATA_VERSION
    for record in _read(path):
        if isinstance(record, FeatureLevelRecord) and record.name == METADATA_VERSION_FEATURE:
            return int(record.feature_level)
    raise BootstrapError(f"{path}: holds no metadata.version")


def read_bootstrap_scram(data_dir: Path) -> tuple[UserScramCredentialRecord, ...]:
    """The SCRAM credentials a new cluster starts with (``--add-scram``)."""
    path = data_dir / BOOTSTRAP_FILE
    if not path.exists():
        return ()
    return tuple(r for r in _read(path) if isinstance(r, UserScramCredentialRecord))
