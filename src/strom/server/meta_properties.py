"""``<data-dir>/meta.properties``: which cluster and node a data directory belongs to, as Kafka.

Written on the first start (KRaft's version 1 layout: ``version``, ``cluster.id``, ``node.id``,
``directory.id``), read and checked on every later one, so that a directory is never served by
another node id or joined to another cluster by mistake.

A cluster id is what Kafka's ``Uuid.randomUuid().toString()`` gives: 16 random bytes in URL-safe
base64 without padding, 22 characters, never starting with ``-`` (it would read as an option on
a command line) and never the reserved all-zero or metadata-topic ids.
"""

from __future__ import annotations

import base64
import binascii
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from strom.config import ConfigError, parse_properties

__all__ = [
    "META_PROPERTIES",
    "MetaProperties",
    "MetaPropertiesError",
    "ensure_meta_properties",
    "format_data_dir",
    "load_formatted",
    "random_kafka_uuid",
    "validate_kafka_uuid",
]

META_PROPERTIES: Final = "meta.properties"
_RESERVED: Final = frozenset({bytes(16), (1).to_bytes(16, "big")})


class MetaPropertiesError(Exception):
    """meta.properties is unreadable or belongs to another node or cluster."""


def random_kafka_uuid() -> str:
    while True:
        raw = uuid.uuid4().bytes
        text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        if raw not in _RESERVED and not text.startswith("-"):
            return text


def validate_kafka_uuid(text: str) -> str | None:
    """None when ``text`` is a Kafka Uuid string, otherwise why it is not."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return f"{text!r} is not URL-safe base64"
    if len(text) != 22 or len(raw) != 16:
        return f"{text!r} is not a 22-character base64 encoding of 16 bytes"
    return None


@dataclass(frozen=True, slots=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: str | None = None
    version: int = 1

    def render(self) -> str:
        stamp = time.strftime("%a %b %d %H:%M:%S %Z %Y")
        lines = ["#", f"#{stamp}", f"cluster.id={self.cluster_id}"]
        if self.directory_id is not None:
            lines.append(f"directory.id={self.directory_id}")
        lines += [f"node.id={self.node_id}", f"version={self.version}"]
        return "\n".join(lines) + "\n"


def read_meta_properties(path: Path) -> MetaProperties:
    try:
        values = parse_properties(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ConfigError) as error:
        raise MetaPropertiesError(f"cannot read {path}: {error}") from None
    try:
        version = int(values["version"])
        cluster_id = values["cluster.id"]
        node_id = int(values["node.id"])
    except KeyError as error:
        raise MetaPropertiesError(f"{path} has no {error.args[0]}") from None
    except ValueError as error:
        raise MetaPropertiesError(f"{path}: {error}") from None
    if version != 1:
        raise MetaPropertiesError(f"{path} has version={version}; strom reads version 1 (KRaft)")
    return MetaProperties(
        cluster_id=cluster_id,
        node_id=node_id,
        directory_id=values.get("directory.id"),
        version=version,
    )


def write_meta_properties(path: Path, meta: MetaProperties) -> None:
    """Write atomically: a temporary file, fsync, rename, fsync of the directory."""
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", encoding="utf-8") as file:
        file.write(meta.render())
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def ensure_meta_properties(
    data_dir: Path, *, node_id: int, cluster_id: str | None = None
) -> MetaProperties:
    """Read ``meta.properties`` and check it, or create the directory and file on first start.

    ``cluster_id`` is the configured ``cluster.id``, if any: it must match a stored one, and is
    used instead of a random one on first start.
    """
    if cluster_id is not None and (reason := validate_kafka_uuid(cluster_id)):
        raise MetaPropertiesError(f"cluster.id: {reason}")
    path = data_dir / META_PROPERTIES
    if path.exists():
        meta = read_meta_properties(path)
        if meta.node_id != node_id:
            raise MetaPropertiesError(
                f"{path} belongs to node.id={meta.node_id}, but this node is node.id={node_id}"
            )
        if cluster_id is not None and meta.cluster_id != cluster_id:
            raise MetaPropertiesError(
                f"{path} belongs to cluster {meta.cluster_id}, but cluster.id={cluster_id}"
            )
        return meta
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise MetaPropertiesError(f"cannot create data dir {data_dir}: {error.strerror}") from None
    meta = MetaProperties(
        cluster_id=cluster_id or random_kafka_uuid(),
        node_id=node_id,
        directory_id=random_kafka_uuid(),
    )
    try:
        write_meta_properties(path, meta)
    except OSError as error:
        raise MetaPropertiesError(f"cannot write {path}: {error.strerror}") from None
    return meta


FORMAT_HINT: Final = (
    "strom storage format --cluster-id $(strom storage random-uuid) --config <server.properties>"
)


def format_data_dir(
    data_dir: Path,
    *,
    node_id: int,
    cluster_id: str,
    ignore_formatted: bool = False,
    directory_id: str | None = None,
) -> MetaProperties | None:
    """Write ``meta.properties`` into a new (or empty) data directory, as ``kafka-storage.sh
    format``; returns it, or None when the directory was already formatted and
    ``ignore_formatted`` says to leave it. ``directory_id``: the one ``--initial-controllers``
    names for this node (else a new one)."""
    if reason := validate_kafka_uuid(cluster_id):
        raise MetaPropertiesError(f"--cluster-id: {reason}")
    path = data_dir / META_PROPERTIES
    if path.exists():
        if ignore_formatted:
            return None
        raise MetaPropertiesError(
            f"{data_dir} is already formatted (cluster {read_meta_properties(path).cluster_id}); "
            "use --ignore-formatted to leave it as it is"
        )
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        meta = MetaProperties(
            cluster_id=cluster_id,
            node_id=node_id,
            directory_id=directory_id or random_kafka_uuid(),
        )
        write_meta_properties(path, meta)
    except OSError as error:
        raise MetaPropertiesError(f"cannot format {data_dir}: {error.strerror}") from None
    return meta


def load_formatted(data_dir: Path, *, node_id: int) -> MetaProperties:
    """``meta.properties`` of a formatted data directory of this node, or a one-line error that
    says what to run."""
    path = data_dir / META_PROPERTIES
    if not path.exists():
        raise MetaPropertiesError(f"{data_dir} is not formatted: run {FORMAT_HINT}")
    meta = read_meta_properties(path)
    if meta.node_id != node_id:
        raise MetaPropertiesError(
            f"{path} belongs to node.id={meta.node_id}, but this node is node.id={node_id}"
        )
    return meta
