"""Nemeses: the faults a chaos run injects into a :class:`~strom.testing.Cluster`, each
recorded in the history as a ``fault`` operation (invoked when it starts, ``ok`` when healed).

A fault picks its victims when it starts (``target``: fixed node ids, or a question to the
cluster such as "the leader of orders-0", see :mod:`strom.testing.chaos.probes`) and undoes
itself in :meth:`Fault.heal`:

- :class:`Kill` (kill -9), :class:`Stop` (SIGTERM: a controlled shutdown), both restarted when
  healed; :class:`Pause` (SIGSTOP, then SIGCONT);
- :class:`LoseUnflushed`: kill -9, then cut every data log back to its recovery point (what
  the broker last recorded as fsynced), as a power cut would, before the restart;
- :class:`FillDisk`: fill a node's data directory, mounted on a small tmpfs, until ENOSPC;
- :class:`ShiftClock`: move a node's wall clock (the ``OffsetFileClock`` it runs on);
- :class:`Reassign`: move partitions with ``strom partitions reassign`` (not a fault, but the
  operation a fault should not break);
- :class:`Isolate` and :class:`SlowLink`: network faults between nodes in network namespaces
  (:class:`strom.testing.network.NetworkNemesis`);
- :class:`DegradeLinks`: a fixed delay and random loss of the answers a node gives other nodes,
  through the fault layer of strom's own network code (this kernel has no ``tc netem``).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from strom.common import TopicPartition
from strom.common.clock import CLOCK_OFFSET_FILE_ENV
from strom.server.network.faults_file import FAULTS_FILE_ENV
from strom.storage.checkpoint import RECOVERY_POINT_CHECKPOINT, read_offset_checkpoint
from strom.testing.chaos.history import Recorder
from strom.testing.cluster import Cluster, ClusterError

__all__ = [
    "DegradeLinks",
    "Fault",
    "FillDisk",
    "Isolate",
    "Kill",
    "LoseUnflushed",
    "Nemesis",
    "Pause",
    "Reassign",
    "ShiftClock",
    "SlowLink",
    "Stop",
    "Target",
    "cut_to_recovery_points",
    "mount_small_disk",
    "nodes",
    "unmount_small_disk",
    "use_faults_files",
    "use_offset_clock",
]

Target = Callable[[Cluster], Sequence[int]]
"""Chooses the nodes a fault hits, when it starts."""


def nodes(*node_ids: int) -> Target:
    """Always these nodes."""
    return lambda _: node_ids


class Fault(Protocol):
    @property
    def name(self) -> str: ...

    def choose(self, cluster: Cluster) -> Sequence[int]:
        """The nodes the fault will hit (asked of the cluster now)."""
        ...

    def start(self, cluster: Cluster) -> None:
        """Inject the fault into the chosen nodes."""
        ...

    def heal(self, cluster: Cluster) -> None:
        """Undo it: every node it hit serves again (restarted if it had to be)."""
        ...


@dataclass
class _OnNodes:
    """A fault on the nodes ``target`` chooses, remembered until healed."""

    target: Target
    hit: list[int] = field(default_factory=list, init=False)

    def choose(self, cluster: Cluster) -> Sequence[int]:
        self.hit = list(self.target(cluster))
        return self.hit

    def start(self, cluster: Cluster) -> None:
        for node_id in self.hit:
            self.strike(cluster, node_id)

    def heal(self, cluster: Cluster) -> None:
        for node_id in self.hit:
            self.recover(cluster, node_id)
        self.hit = []

    def strike(self, cluster: Cluster, node_id: int) -> None:
        raise NotImplementedError

    def recover(self, cluster: Cluster, node_id: int) -> None:
        """Restart a node the fault stopped (what most faults need)."""
        if not cluster.nodes[node_id].alive:
            cluster.restart(node_id)


class Kill(_OnNodes):
    name = "kill"

    def strike(self, cluster: Cluster, node_id: int) -> None:
        cluster.kill(node_id)


class Stop(_OnNodes):
    name = "stop"

    def strike(self, cluster: Cluster, node_id: int) -> None:
        cluster.terminate(node_id)


class Pause(_OnNodes):
    name = "pause"

    def strike(self, cluster: Cluster, node_id: int) -> None:
        cluster.pause(node_id)

    def recover(self, cluster: Cluster, node_id: int) -> None:
        cluster.resume(node_id)


class LoseUnflushed(_OnNodes):
    name = "lose-unflushed"

    def strike(self, cluster: Cluster, node_id: int) -> None:
        cluster.kill(node_id)
        cut_to_recovery_points(cluster.nodes[node_id].data_dir)


class Isolate(_OnNodes):
    """Cut the chosen nodes off from every other node (clients still reach them); the nodes
    run in network namespaces (``Cluster(network="netns")``)."""

    name = "isolate"

    def strike(self, cluster: Cluster, node_id: int) -> None:
        cluster.nemesis.isolate(node_id)

    def recover(self, cluster: Cluster, node_id: int) -> None:
        cluster.nemesis.heal()


@dataclass
class SlowLink(_OnNodes):
    """Everything to and from the chosen nodes through a ``rate_kbit`` token bucket."""

    rate_kbit: int = 256
    name = "slow-link"

    def strike(self, cluster: Cluster, node_id: int) -> None:
        cluster.nemesis.slow(node_id, rate_kbit=self.rate_kbit)

    def recover(self, cluster: Cluster, node_id: int) -> None:
        cluster.nemesis.fast(node_id)


_BALLAST: Final = ".chaos-ballast"


class FillDisk(_OnNodes):
    """Fill the node's data directory (see :func:`mount_small_disk`) to the last byte. The
    node may stay up with its logs failing, or stop; healing frees the space and restarts it
    if it stopped."""

    name = "fill-disk"

    def strike(self, cluster: Cluster, node_id: int) -> None:
        ballast = cluster.nodes[node_id].data_dir / _BALLAST
        descriptor = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            size = 1 << 20
            while size >= 512:  # the last free bytes, in smaller and smaller writes
                try:
                    os.write(descriptor, bytes(size))
                except OSError:
                    size //= 2
        finally:
            os.close(descriptor)

    def recover(self, cluster: Cluster, node_id: int) -> None:
        (cluster.nodes[node_id].data_dir / _BALLAST).unlink(missing_ok=True)
        super().recover(cluster, node_id)


@dataclass
class ShiftClock(_OnNodes):
    """Move the wall clock of the chosen nodes by ``offset_ms`` (a skew that stays, or a jump
    when applied briefly); the nodes must run with :func:`use_offset_clock`."""

    offset_ms: int = 0
    name = "shift-clock"

    def strike(self, cluster: Cluster, node_id: int) -> None:
        _offset_file(cluster, node_id).write_text(str(self.offset_ms), encoding="ascii")

    def recover(self, cluster: Cluster, node_id: int) -> None:
        _offset_file(cluster, node_id).write_text("0", encoding="ascii")


def _offset_file(cluster: Cluster, node_id: int) -> Path:
    return cluster.nodes[node_id].properties.parent / "clock-offset-ms"


def use_offset_clock(cluster: Cluster) -> None:
    """Run every node on a wall clock :class:`ShiftClock` can move (before it starts)."""
    for node_id, node in cluster.nodes.items():
        path = _offset_file(cluster, node_id)
        path.write_text("0", encoding="ascii")
        node.environment[CLOCK_OFFSET_FILE_ENV] = str(path)


NODE_CLIENTS: Final = "strom-"
"""The client id prefix of every request one strom node sends another (replica fetchers,
controller channels, Raft, transaction markers)."""


@dataclass
class DegradeLinks(_OnNodes):
    """Hold each answer the chosen nodes give to clients whose id starts with
    ``client_id_prefix`` (every other node, by default) ``delay`` seconds, and lose a share
    ``loss`` of them with the connection (:class:`strom.server.network.faults.LinkFault`); the
    nodes must run with :func:`use_faults_files`."""

    delay: float = 0.1
    loss: float = 0.1
    client_id_prefix: str = NODE_CLIENTS
    seed: int | None = None
    name = "degrade-links"

    def strike(self, cluster: Cluster, node_id: int) -> None:
        link = {"delay": self.delay, "loss": self.loss, "client_id_prefix": self.client_id_prefix}
        _write_faults(cluster, node_id, {"link": link, "seed": self.seed})

    def recover(self, cluster: Cluster, node_id: int) -> None:
        _write_faults(cluster, node_id, {})


def _faults_file(cluster: Cluster, node_id: int) -> Path:
    return cluster.nodes[node_id].properties.parent / "faults.json"


def _write_faults(cluster: Cluster, node_id: int, faults: dict[str, Any]) -> None:
    if FAULTS_FILE_ENV not in cluster.nodes[node_id].environment:
        raise ClusterError(f"node {node_id} does not read a faults file: use_faults_files first")
    path = _faults_file(cluster, node_id)
    staged = path.with_suffix(".tmp")
    staged.write_text(json.dumps(faults), encoding="utf-8")
    staged.replace(path)  # the node never reads half a file


def use_faults_files(cluster: Cluster) -> None:
    """Let :class:`DegradeLinks` reach every node (before it starts): each node watches a
    faults file of its own (``STROM_FAULTS_FILE``)."""
    for node_id, node in cluster.nodes.items():
        node.environment[FAULTS_FILE_ENV] = str(_faults_file(cluster, node_id))


def mount_small_disk(cluster: Cluster, node_id: int, *, megabytes: int) -> None:
    """Put the node's data directory on a tmpfs of ``megabytes`` (root only; before it starts,
    so that :class:`FillDisk` can fill it)."""
    directory = cluster.nodes[node_id].data_dir
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(directory)],
        check=True,
        capture_output=True,
    )


def unmount_small_disk(cluster: Cluster, node_id: int) -> None:
    subprocess.run(
        ["umount", "-l", str(cluster.nodes[node_id].data_dir)], check=False, capture_output=True
    )


@dataclass
class Reassign:
    """Move every partition of ``topic`` to ``replicas`` with ``strom partitions reassign``, as
    an operator would; healed once ``--verify`` says every move is done."""

    topic: str
    partitions: int
    replicas: tuple[int, ...]
    timeout: float = 60.0
    name = "reassign"

    def _command(self, cluster: Cluster, action: str) -> subprocess.CompletedProcess[str]:
        plan = cluster.base / f"reassign-{self.topic}.json"
        entries = [
            {"topic": self.topic, "partition": p, "replicas": list(self.replicas)}
            for p in range(self.partitions)
        ]
        plan.write_text(json.dumps({"version": 1, "partitions": entries}), encoding="utf-8")
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "strom",
                "partitions",
                "reassign",
                action,
                "--reassignment-json-file",
                str(plan),
                "--bootstrap-server",
                cluster.bootstrap_servers,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    def choose(self, cluster: Cluster) -> Sequence[int]:
        return self.replicas

    def start(self, cluster: Cluster) -> None:
        run = self._command(cluster, "--execute")
        if run.returncode != 0:
            raise ClusterError(f"strom partitions reassign --execute: {run.stderr.strip()}")

    def heal(self, cluster: Cluster) -> None:
        cluster.wait_for(
            lambda: self._command(cluster, "--verify").returncode == 0,
            timeout=self.timeout,
            what=f"the reassignment of {self.topic} to {list(self.replicas)}",
        )


class Nemesis:
    """Starts and heals faults, recording each; :meth:`heal_all` undoes whatever is left."""

    def __init__(self, cluster: Cluster, recorder: Recorder) -> None:
        self.cluster = cluster
        self.recorder = recorder
        self._active: list[tuple[Fault, dict[str, Any]]] = []

    def start(self, fault: Fault) -> Sequence[int]:
        """Choose the fault's victims, record it, strike; return the victims."""
        targets = fault.choose(self.cluster)
        value = {"name": fault.name, "targets": list(targets)}
        self.recorder.record("nemesis", "invoke", "fault", value)
        self._active.append((fault, value))
        fault.start(self.cluster)
        return targets

    def heal(self, fault: Fault) -> None:
        for index, (active, value) in enumerate(self._active):
            if active is fault:
                del self._active[index]
                fault.heal(self.cluster)
                self.recorder.record("nemesis", "ok", "fault", value)
                return

    def heal_all(self) -> None:
        while self._active:
            self.heal(self._active[-1][0])


# --- losing what was not fsynced ----------------------------------------------------------

_BATCH_HEAD: Final = struct.Struct(">qi")
"""A record batch starts with its base offset and the length of the rest."""
_SEGMENT_FILES: Final = (".log", ".index", ".timeindex", ".txnindex")


def cut_to_recovery_points(data_dir: Path) -> dict[str, int]:
    """Cut each data partition's log back to the recovery point the broker last checkpointed
    (0 when it has none): what a machine losing its page cache would keep, at most. The
    metadata log (fsynced by Raft before anything is acknowledged) is left alone. Returns the
    bytes cut per partition directory."""
    points = read_offset_checkpoint(data_dir / RECOVERY_POINT_CHECKPOINT)
    cut: dict[str, int] = {}
    for directory in sorted(data_dir.iterdir()):
        if not directory.is_dir() or directory.name.startswith("__cluster_metadata"):
            continue
        try:
            tp = TopicPartition.from_dir_name(directory.name)
        except ValueError:
            continue
        cut[directory.name] = _cut_log(directory, points.get(tp, 0))
    return cut


def _cut_log(directory: Path, recovery_point: int) -> int:
    removed = 0
    for log in sorted(directory.glob("*.log")):
        base_offset = int(log.stem)
        if base_offset >= recovery_point:
            removed += log.stat().st_size
            for suffix in _SEGMENT_FILES:
                log.with_suffix(suffix).unlink(missing_ok=True)
            continue
        keep = _position_of(log, recovery_point)
        removed += log.stat().st_size - keep
        os.truncate(log, keep)
    for snapshot in directory.glob("*.snapshot"):
        if int(snapshot.stem) > recovery_point:
            snapshot.unlink()
    return removed


def _position_of(log: Path, offset: int) -> int:
    """Where the first batch at or above ``offset`` starts in the segment (its size if none)."""
    data = log.read_bytes()
    position = 0
    while position + _BATCH_HEAD.size <= len(data):
        base_offset, length = _BATCH_HEAD.unpack_from(data, position)
        if base_offset >= offset:
            return position
        position += _BATCH_HEAD.size + length
    return min(position, len(data))
