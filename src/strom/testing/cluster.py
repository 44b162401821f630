"""A strom cluster on this machine: controller and broker processes, for tests and ``strom cluster
up``.

Every node is a ``strom server`` child process with a properties file and a data directory of
its own (formatted with ``strom storage format``), on ports chosen when the cluster is made and
kept across restarts, so clients' bootstrap lists stay valid. Faults come from outside, as an
operator's would: :meth:`Cluster.kill` (SIGKILL), :meth:`Cluster.terminate` (SIGTERM, a
controlled shutdown), :meth:`Cluster.pause` / :meth:`Cluster.resume` (SIGSTOP / SIGCONT),
:meth:`Cluster.restart`. With ``network="netns"`` every node runs in a network namespace of
its own (:mod:`strom.testing.netns`), and :attr:`Cluster.nemesis` partitions them and slows
their links (:mod:`strom.testing.network`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Final, Literal, Self

from kio.schema.describe_cluster.v2.request import DescribeClusterRequest
from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest, PartitionData, TopicData
from kio.schema.types import TopicName
from kio.static.primitive import i8, i32

from strom.client.blocking import BrokerConnection
from strom.client.security import PLAINTEXT
from strom.raft.voters import Endpoint, VoterNode, VoterSet
from strom.server.meta_properties import format_data_dir, random_kafka_uuid
from strom.server.raft.quorum_voters import directory_uuid, write_bootstrap_voters
from strom.testing.broker import TEST_DEFAULTS, _ClientConfigs
from strom.testing.netns import NamespaceNetwork
from strom.testing.network import NetworkNemesis
from strom.testing.security import Security, SecurityFiles

__all__ = ["CLUSTER_TEST_DEFAULTS", "Cluster", "ClusterError", "ClusterNode"]

CLUSTER_TEST_DEFAULTS: Final[Mapping[str, str]] = {
    **TEST_DEFAULTS,
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "4000",
    "controller.quorum.election.timeout.ms": "1000",
    "controller.quorum.fetch.timeout.ms": "2000",
    "controller.quorum.election.backoff.max.ms": "500",
}
"""Settings that make a local cluster react within seconds (overridable): brokers heartbeat
twice a second and are fenced after 4 s of silence."""

_READY: Final = re.compile(r"ready: listening on (?P<address>\S+),")
_METRICS: Final = re.compile(r"metrics: (?P<url>http://\S+)")
_NETNS_PORTS: Final = (9092, 9093)
"""The broker and controller ports of a node in a namespace of its own (its own address)."""


class ClusterError(RuntimeError):
    """A node did not start, or the cluster did not reach the state asked for in time."""


@dataclass(eq=False)
class ClusterNode:
    node_id: int
    roles: tuple[str, ...]
    data_dir: Path
    properties: Path
    host: str
    broker_port: int | None
    controller_port: int | None
    process: subprocess.Popen[str] | None = None
    lines: list[str] = field(default_factory=list)
    """Everything the process wrote to stderr, across restarts."""
    paused: bool = False
    started_at_line: int = 0
    """Where the current process's output starts in ``lines``."""
    environment: dict[str, str] = field(default_factory=dict)
    """Added to the process's environment at each start (a chaos clock file, ...)."""

    @property
    def log_path(self) -> Path:
        """Where the node's log goes (every start appends)."""
        return self.properties.parent / "server.log"

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def metrics_url(self) -> str | None:
        """Where its metrics are scraped, as its current process said (None: not serving)."""
        for line in reversed(self.lines[self.started_at_line :]):
            found = _METRICS.search(line)
            if found is not None:
                return found["url"]
        return None

    @property
    def address(self) -> str:
        """Where clients reach it: its broker listener, else its controller listener."""
        port = self.broker_port if self.broker_port is not None else self.controller_port
        return f"{self.host}:{port}"


def _free_ports(count: int, host: str) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _stored_ports(properties: Path) -> dict[str, int]:
    """The broker and controller ports in a node's ``listeners`` of an earlier start (none
    when the file is not there)."""
    if not properties.exists():
        return {}
    ports: dict[str, int] = {}
    for line in properties.read_text(encoding="utf-8").splitlines():
        if line.startswith("listeners="):
            for listener in line.removeprefix("listeners=").split(","):
                name, _, address = listener.partition("://")
                role = "controller" if name == "CONTROLLER" else "broker"
                ports[role] = int(address.rpartition(":")[2])
    return ports


class Cluster(_ClientConfigs):
    """``with Cluster(brokers=3, controllers=3) as cluster: cluster.bootstrap_servers``.

    Controllers get node ids 1001, 1002, ...; brokers 1, 2, .... With ``combined=True`` there are
    ``brokers`` nodes, each broker and controller, ids 1, 2, .... ``config``: settings for every
    node over :data:`CLUSTER_TEST_DEFAULTS`; ``node_config``: per node id.

    ``network="loopback"``: every node listens on ``host``, on ports free when the cluster is
    made. ``network="netns"``: every node in a network namespace of its own with an address of
    its own (:class:`~strom.testing.netns.NamespaceNetwork`; root only, else
    :class:`~strom.testing.netns.NetnsError` says why), listening on 9092 (broker) and 9093
    (controller); :attr:`nemesis` injects network faults.

    ``dynamic_quorum=True``: a dynamic quorum (KIP-853): every node finds the controllers through
    ``controller.quorum.bootstrap.servers``, the first controller is formatted as the only voter
    (``--standalone``), the others as observers (``--no-initial-controllers``) that
    ``strom metadata-quorum add-controller`` makes voters.
    """

    def __init__(
        self,
        brokers: int = 3,
        controllers: int = 3,
        *,
        combined: bool = False,
        data_dir: str | os.PathLike[str] | None = None,
        config: Mapping[str, object] | None = None,
        node_config: Mapping[int, Mapping[str, object]] | None = None,
        host: str = "127.0.0.1",
        start_timeout: float = 60.0,
        defaults: Mapping[str, str] = CLUSTER_TEST_DEFAULTS,
        network: Literal["loopback", "netns"] = "loopback",
        security: Security | None = None,
        dynamic_quorum: bool = False,
        base_port: int | None = None,
        metrics: bool = False,
    ) -> None:
        """``security``: every listener (client, inter-broker and controller) speaks its
        protocol, with generated certificates and users; nodes log in to each other as the
        first user. ``base_port``: the nodes listen on it and the ports after it (broker, then
        controller port of each node in id order: controllers first); without it, a node of
        an existing ``data_dir`` keeps the ports it had, and new nodes get free ones.
        ``metrics``: every node serves its metrics (``metrics.listener``; on the ports after the
        nodes' with ``base_port``, else free ones: :attr:`ClusterNode.metrics_url`)."""
        if brokers < (0 if not combined else 1) or (not combined and controllers < 1):
            raise ValueError("a cluster needs at least one controller (and brokers >= 0)")
        layout: list[tuple[int, tuple[str, ...]]]
        if combined:
            layout = [(i, ("broker", "controller")) for i in range(1, brokers + 1)]
        else:
            layout = [(1000 + i, ("controller",)) for i in range(1, controllers + 1)]
            layout += [(i, ("broker",)) for i in range(1, brokers + 1)]
        self.netns = (  # first: it raises where namespaces are not available
            NamespaceNetwork(node_id for node_id, _ in layout) if network == "netns" else None
        )
        self.dynamic_quorum = dynamic_quorum
        self._temporary = data_dir is None
        self.base = (
            Path(tempfile.mkdtemp(prefix="strom-cluster-")) if data_dir is None else Path(data_dir)
        )
        self.cluster_id = self._stored_cluster_id() or random_kafka_uuid()
        self.start_timeout = start_timeout
        if security is not None and self.netns is not None:
            raise ValueError(
                "a secured cluster in network namespaces is not supported yet: its certificates "
                "name one host"
            )
        self.security = (
            None if security is None else SecurityFiles(security, self.base / "security", host)
        )
        self._client_security = (
            PLAINTEXT if self.security is None else self.security.client_security()
        )
        secured = {} if self.security is None else self.security.server_settings()
        settings = {**defaults, **secured, **{k: str(v) for k, v in (config or {}).items()}}
        if self.netns is not None:
            ports = iter(_NETNS_PORTS * len(layout))
        elif base_port is not None:
            ports = iter(range(base_port, base_port + 2 * len(layout)))
        else:
            ports = iter(_free_ports(2 * len(layout), host))
        self.nodes: dict[int, ClusterNode] = {}
        for node_id, roles in layout:
            directory = self.base / f"node-{node_id}"
            broker_port, controller_port = next(ports), next(ports)
            if self.netns is None and base_port is None:
                stored = _stored_ports(directory / "server.properties")
                broker_port, controller_port = (
                    stored.get("broker", broker_port),
                    stored.get("controller", controller_port),
                )
            self.nodes[node_id] = ClusterNode(
                node_id=node_id,
                roles=roles,
                data_dir=directory / "data",
                properties=directory / "server.properties",
                host=host if self.netns is None else self.netns.address(node_id),
                broker_port=broker_port if "broker" in roles else None,
                controller_port=controller_port if "controller" in roles else None,
            )
        quorum = [node for node in self.nodes.values() if node.is_controller]
        if dynamic_quorum:
            voters = ",".join(f"{node.host}:{node.controller_port}" for node in quorum)
        else:
            voters = ",".join(
                f"{node.node_id}@{node.host}:{node.controller_port}" for node in quorum
            )
        for index, node in enumerate(self.nodes.values()):
            own = {k: str(v) for k, v in ((node_config or {}).get(node.node_id) or {}).items()}
            if metrics:
                port = 0 if base_port is None else base_port + 2 * len(layout) + index
                own.setdefault("metrics.listener", f"http://{node.host}:{port}")
            self._write_properties(node, {**settings, **own}, voters)
        self.bootstrap_servers = ",".join(
            node.address for node in self.nodes.values() if node.is_broker
        )

    # --- layout --------------------------------------------------------------------------------

    @property
    def broker_ids(self) -> list[int]:
        return [node.node_id for node in self.nodes.values() if node.is_broker]

    @property
    def controller_ids(self) -> list[int]:
        return [node.node_id for node in self.nodes.values() if node.is_controller]

    def _stored_cluster_id(self) -> str | None:
        """The cluster id of an existing data directory (``strom cluster up`` again)."""
        for meta in sorted(self.base.glob("node-*/data/meta.properties")):
            for line in meta.read_text(encoding="utf-8").splitlines():
                if line.startswith("cluster.id="):
                    return line.split("=", 1)[1].strip()
        return None

    def _write_properties(
        self, node: ClusterNode, settings: Mapping[str, str], voters: str
    ) -> None:
        protocol = "PLAINTEXT" if self.security is None else self.security.security.protocol
        listeners = []
        if node.broker_port is not None:
            listeners.append(f"{protocol}://{node.host}:{node.broker_port}")
        if node.controller_port is not None:
            listeners.append(f"CONTROLLER://{node.host}:{node.controller_port}")
        values = {
            "listener.security.protocol.map": f"{protocol}:{protocol},CONTROLLER:{protocol}",
            **settings,
            "process.roles": ",".join(node.roles),
            "node.id": str(node.node_id),
            "log.dirs": str(node.data_dir),
            "listeners": ",".join(listeners),
            "controller.listener.names": "CONTROLLER",
            (
                "controller.quorum.bootstrap.servers"
                if self.dynamic_quorum
                else "controller.quorum.voters"
            ): voters,
        }
        node.properties.parent.mkdir(parents=True, exist_ok=True)
        node.properties.write_text(
            "".join(f"{name}={value}\n" for name, value in sorted(values.items())),
            encoding="utf-8",
        )

    # --- start and stop ------------------------------------------------------------------------

    def start(self) -> None:
        """Format every node (once), start them all, wait until each is ready and every broker
        is registered and unfenced in every broker's metadata."""
        try:
            if self.netns is not None:
                self.netns.up()
            for node in self.nodes.values():
                self._format(node)
            for node in self.nodes.values():
                self._spawn(node)
            deadline = time.monotonic() + self.start_timeout
            for node in self.nodes.values():
                self._wait_ready(node, deadline)
            self.wait_for(
                self._every_broker_sees_every_broker,
                timeout=max(deadline - time.monotonic(), 1.0),
                what="every broker registered and unfenced, as each broker sees it",
            )
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop every node (SIGTERM, then SIGKILL after 15 s): the brokers first, while the
        controllers can still answer their controlled shutdowns; remove the network namespaces
        (with their rules) and a temporary directory."""
        brokers = [node for node in self.nodes.values() if node.is_broker]
        others = [node for node in self.nodes.values() if not node.is_broker]
        for group in (brokers, others):
            for node in group:
                self.resume(node.node_id)
                if node.alive:
                    assert node.process is not None
                    node.process.terminate()
            deadline = time.monotonic() + 15.0  # one grace period for the group, not per node
            for node in group:
                self._reap(node, timeout=max(deadline - time.monotonic(), 0.0))
        if self._temporary:
            shutil.rmtree(self.base, ignore_errors=True)
        if self.netns is not None:
            self.netns.down()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _format(self, node: ClusterNode) -> None:
        """What ``strom storage format --ignore-formatted`` does, without a process (with
        ``--add-scram`` for a secured cluster's users)."""
        if self.security is not None:
            self.security.bootstrap(node.data_dir)
        meta = format_data_dir(
            node.data_dir, node_id=node.node_id, cluster_id=self.cluster_id, ignore_formatted=True
        )
        if meta is not None and self.dynamic_quorum and node.node_id == self.controller_ids[0]:
            assert node.controller_port is not None
            endpoint = Endpoint("CONTROLLER", node.host, node.controller_port)
            voter = VoterNode(node.node_id, directory_uuid(meta.directory_id), (endpoint,))
            write_bootstrap_voters(node.data_dir, VoterSet.of([voter]))

    def _spawn(self, node: ClusterNode) -> None:
        argv = [sys.executable, "-m", "strom", "server", str(node.properties)]
        if self.netns is not None:
            argv = self.netns.command(node.node_id, argv)  # ip netns exec: execs, same pid
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **node.environment},
        )
        node.process = process
        node.paused = False
        node.started_at_line = len(node.lines)
        threading.Thread(
            target=_collect,
            args=(process, node.lines, node.log_path),
            daemon=True,
            name=f"node-{node.node_id}",
        ).start()

    def _wait_ready(self, node: ClusterNode, deadline: float) -> None:
        while time.monotonic() < deadline:
            if any(_READY.search(line) for line in node.lines[node.started_at_line :]):
                return
            if not node.alive:
                raise ClusterError(
                    f"node {node.node_id} exited: {''.join(node.lines[-5:]).strip()}"
                )
            time.sleep(0.05)
        raise ClusterError(f"node {node.node_id} was not ready in time: {node.lines[-3:]}")

    def _reap(self, node: ClusterNode, *, timeout: float) -> None:
        process = node.process
        if process is None:
            return
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    # --- faults --------------------------------------------------------------------------------

    def kill(self, node_id: int) -> None:
        """SIGKILL: the process dies at once, nothing flushed."""
        node = self.nodes[node_id]
        if node.process is not None:
            node.process.kill()
            node.process.wait()
        node.paused = False

    def terminate(self, node_id: int, *, timeout: float = 30.0) -> None:
        """SIGTERM: a clean (controlled) shutdown; waits for the process to end."""
        node = self.nodes[node_id]
        self.resume(node_id)
        if node.alive:
            assert node.process is not None
            node.process.terminate()
        self._reap(node, timeout=timeout)

    def restart(self, node_id: int, *, wait: bool = True) -> None:
        """Start a stopped or killed node again (killing it first if it still runs)."""
        node = self.nodes[node_id]
        if node.alive:
            self.kill(node_id)
        self._spawn(node)
        if wait:
            self._wait_ready(node, time.monotonic() + self.start_timeout)

    def pause(self, node_id: int) -> None:
        """SIGSTOP: the process stops answering, its sockets stay open."""
        node = self.nodes[node_id]
        if node.alive and not node.paused:
            assert node.process is not None
            node.process.send_signal(signal.SIGSTOP)
            node.paused = True

    def resume(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.paused and node.process is not None:
            node.process.send_signal(signal.SIGCONT)
        node.paused = False

    @property
    def nemesis(self) -> NetworkNemesis:
        """Partitions and slow links between the nodes (``network="netns"`` only)."""
        if self.netns is None:
            raise ClusterError('network faults need Cluster(network="netns")')
        return NetworkNemesis(self.netns)

    # --- what the cluster says -----------------------------------------------------------------

    def _ask(
        self, node_ids: list[int], request: object, *, timeout: float = 2.0
    ) -> Iterator[object]:
        """Answers of the live, unpaused nodes among ``node_ids`` (the ones that answer)."""
        for node_id in node_ids:
            node = self.nodes[node_id]
            if not node.alive or node.paused:
                continue
            host, port = node.address.rsplit(":", 1)
            if node.is_controller and not node.is_broker:
                port = str(node.controller_port)
            try:
                with BrokerConnection(
                    host, int(port), timeout=timeout, security=self._client_security
                ) as connection:
                    yield connection.request(request)  # type: ignore[arg-type]
            except OSError:
                continue

    def active_controller(self, *, timeout: float = 30.0) -> int:
        """The id of the active controller (the quorum's leader) as the live controllers see it."""
        found: list[int] = []

        def known() -> bool:
            for answer in self._ask(self.controller_ids, _describe_quorum()):
                for topic in answer.topics:  # type: ignore[attr-defined]
                    for partition in topic.partitions:
                        if partition.error_code == 0 and partition.leader_id >= 0:
                            found.append(int(partition.leader_id))
                            return True
            return False

        self.wait_for(known, timeout=timeout, what="an active controller")
        return found[-1]

    def unfenced_brokers(self, *, via: Iterable[int] | None = None) -> set[int]:
        """Brokers registered and unfenced, as the first live broker of ``via`` (default: every
        broker) to answer DescribeCluster says. Under a partition, ask one that reaches the
        active controller: a cut-off broker still believes what it last heard."""
        request = DescribeClusterRequest(
            include_cluster_authorized_operations=False,
            endpoint_type=i8(1),
            include_fenced_brokers=True,
        )
        for answer in self._ask(self.broker_ids if via is None else list(via), request):
            if answer.error_code == 0:  # type: ignore[attr-defined]
                return {int(b.broker_id) for b in answer.brokers if not b.is_fenced}  # type: ignore[attr-defined]
        return set()

    def _every_broker_sees_every_broker(self) -> bool:
        """Each broker's metadata has every broker unfenced: a client's first answers, from
        whichever broker, name the same brokers (one that lags could leave out the broker
        another named as the controller)."""
        everyone = set(self.broker_ids)
        return all(self.unfenced_brokers(via=[b]) == everyone for b in self.broker_ids)

    def wait_for(self, condition: Callable[[], bool], *, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise ClusterError(f"timed out after {timeout:g} s waiting for {what}")
            time.sleep(0.1)


def _describe_quorum() -> DescribeQuorumRequest:
    return DescribeQuorumRequest(
        topics=(
            TopicData(
                topic_name=TopicName("__cluster_metadata"),
                partitions=(PartitionData(partition_index=i32(0)),),
            ),
        )
    )


def _collect(process: subprocess.Popen[str], lines: list[str], path: Path) -> None:
    assert process.stderr is not None
    with contextlib.suppress(ValueError), path.open("a", encoding="utf-8") as file:
        for line in process.stderr:
            lines.append(line)
            file.write(line)
            file.flush()
