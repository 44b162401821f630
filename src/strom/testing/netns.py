"""Network namespaces for a local cluster: each node in a namespace of its own, on one bridge.

A :class:`NamespaceNetwork` holds one *slot* ``s`` of the private range 10.213.0.0/16: the
subnet 10.213.s.0/24, the bridge ``strom<s>`` in the root namespace with the host's address
10.213.s.1 (so tests and clients reach every node), and per node a namespace ``strom<s>-<id>``
joined to the bridge by a veth pair, ``strom<s>v<id>`` on the bridge and ``strom<s>p<id>`` in
the namespace with the node's address. A slot is held by an ``flock`` on
``/run/strom-netns/<s>.lock``, which the kernel drops when its holder dies; whoever brings a
slot up first removes what a crashed holder left in it.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Final

__all__ = ["NamespaceNetwork", "NetnsError", "netns_unavailable", "run"]

_LOCKS: Final = Path("/run/strom-netns")
_SLOTS: Final = 256
_MAX_NODES: Final = 250
"""Addresses .2 to .251 of the slot's /24 (.1 is the host's)."""


class NetnsError(RuntimeError):
    """Network namespaces are not available here, or a command that builds them failed."""


def run(argv: Sequence[str], *, stdin: str | None = None) -> str:
    """Run a network command (``ip``, ``nft``, ``tc``); its output, or :class:`NetnsError`."""
    result = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise NetnsError(f"{' '.join(argv)}: {result.stderr.strip() or result.returncode}")
    return result.stdout


@functools.cache
def netns_unavailable() -> str | None:
    """Why this machine cannot run a cluster in network namespaces, or ``None`` if it can
    (``pytest.skip(reason)`` in tests). Checked once per process."""
    if os.geteuid() != 0:
        return f"network namespaces need root (running as uid {os.geteuid()})"
    for tool, package in (("ip", "iproute2"), ("tc", "iproute2"), ("nft", "nftables")):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed (Debian package {package}; see make tools)"
    probe = f"strom-probe-{os.getpid()}"
    try:
        run(["ip", "netns", "add", probe])
    except NetnsError as error:
        return f"cannot make a network namespace: {error}"
    run(["ip", "netns", "delete", probe])
    return None


class NamespaceNetwork:
    """The namespaces, veths and bridge of ``node_ids``: :meth:`up` makes them, :meth:`down`
    removes them. ``slot``: this subnet (10.213.<slot>.0/24), else the lowest free one."""

    def __init__(self, node_ids: Iterable[int], *, slot: int | None = None) -> None:
        reason = netns_unavailable()
        if reason is not None:
            raise NetnsError(reason)
        self.node_ids: Final = tuple(node_ids)
        if len(self.node_ids) > _MAX_NODES:
            raise ValueError(f"at most {_MAX_NODES} nodes share a bridge")
        self._lock: IO[str] | None = None
        self.slot: Final = self._claim(slot)

    @property
    def host_address(self) -> str:
        """The root namespace's address on the bridge: where the nodes see the host from."""
        return f"10.213.{self.slot}.1"

    @property
    def bridge(self) -> str:
        return f"strom{self.slot}"

    def address(self, node_id: int) -> str:
        return f"10.213.{self.slot}.{self.node_ids.index(node_id) + 2}"

    def namespace(self, node_id: int) -> str:
        return f"strom{self.slot}-{node_id}"

    def veths(self, node_id: int) -> tuple[str, str]:
        """The node's veth pair: the end on the bridge, the end in its namespace."""
        return f"strom{self.slot}v{node_id}", f"strom{self.slot}p{node_id}"

    def command(self, node_id: int, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the node's namespace."""
        return ["ip", "netns", "exec", self.namespace(node_id), *argv]

    def up(self) -> None:
        """Make the bridge and every node's namespace and veth pair, after removing whatever
        this slot still has (an earlier ``up``, a crashed holder's leftovers)."""
        if self._lock is None:
            self._claim(self.slot)
        self._remove()
        run(["ip", "link", "add", self.bridge, "type", "bridge"])
        run(["ip", "addr", "add", f"{self.host_address}/24", "dev", self.bridge])
        run(["ip", "link", "set", self.bridge, "up"])
        for node_id in self.node_ids:
            namespace = self.namespace(node_id)
            outer, inner = self.veths(node_id)
            run(["ip", "netns", "add", namespace])
            run(["ip", "link", "add", outer, "type", "veth", "peer", inner, "netns", namespace])
            run(["ip", "link", "set", outer, "master", self.bridge, "up"])
            run(["ip", "-n", namespace, "addr", "add", f"{self.address(node_id)}/24", "dev", inner])
            run(["ip", "-n", namespace, "link", "set", inner, "up"])
            run(["ip", "-n", namespace, "link", "set", "lo", "up"])

    def down(self) -> None:
        """Remove every namespace, veth and the bridge of this slot (rules and shaping go with
        them), and give the slot up. Stop the processes inside first. Again: nothing (the slot
        may be another's by then)."""
        if self._lock is not None:
            self._remove()
            self._lock.close()
            self._lock = None

    def leftovers(self) -> list[str]:
        """The links and namespaces of this slot that exist now (none after :meth:`down`)."""
        return self._links() + self._namespaces()

    def _links(self) -> list[str]:
        ours = re.compile(rf"strom{self.slot}(v\d+)?")
        links = json.loads(run(["ip", "-j", "link", "show"]))
        return [link["ifname"] for link in links if ours.fullmatch(link["ifname"])]

    def _namespaces(self) -> list[str]:
        ours = re.compile(rf"strom{self.slot}-\d+")
        namespaces = json.loads(run(["ip", "-j", "netns", "list"]) or "[]")
        return [entry["name"] for entry in namespaces if ours.fullmatch(entry["name"])]

    def _remove(self) -> None:
        # Links first: removing a veth's end on the bridge removes its other end at once, where
        # removing its namespace would leave that to the kernel's cleanup, some time later.
        for link in self._links():
            run(["ip", "link", "delete", link])
        for namespace in self._namespaces():
            run(["ip", "netns", "delete", namespace])

    def _claim(self, wanted: int | None) -> int:
        if wanted is not None and not 0 <= wanted < _SLOTS:
            raise ValueError(f"slot {wanted} is not in 0..{_SLOTS - 1}")
        _LOCKS.mkdir(exist_ok=True)
        for slot in range(_SLOTS) if wanted is None else [wanted]:
            lock = (_LOCKS / f"{slot}.lock").open("w", encoding="utf-8")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.close()
                continue
            self._lock = lock
            return slot
        held = "every network slot is" if wanted is None else f"network slot {wanted} is"
        raise NetnsError(f"{held} held by another process (lock files in {_LOCKS})")
