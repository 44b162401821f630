"""Where the quorum's nodes are, and the voters a new cluster starts with (KIP-853).

* :class:`QuorumAddresses` says where the raft client's requests go: the static voters
  (``controller.quorum.voters``), the ``controller.quorum.bootstrap.servers`` (ids -1, -2, ...,
  as Kafka numbers them), the voters of the latest Voters record in the log (their controller
  endpoints), and a leader found through a bootstrap server: a bootstrap server that answers a
  fetch without an error is the leader it names.
* :func:`write_bootstrap_voters`: ``strom storage format --standalone`` or
  ``--initial-controllers`` puts the first voters into the metadata log's directory as its
  bootstrap snapshot ``00000000000000000000-0000000000.checkpoint``, as Kafka's format does.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from strom.config import ConfigError
from strom.raft import METADATA_TOPIC, OffsetAndEpoch, SnapshotWriter
from strom.raft.snapshots import snapshot_file_name
from strom.raft.voters import Endpoint, VoterNode, VoterSet
from strom.server.configs.node_config import HostPort, NodeConfig

__all__ = [
    "QuorumAddresses",
    "directory_uuid",
    "initial_voters",
    "kafka_uuid",
    "parse_initial_controllers",
    "standalone_voters",
    "write_bootstrap_voters",
]


def directory_uuid(text: str | None) -> uuid.UUID | None:
    """A ``directory.id`` of meta.properties (Kafka's 22-character base64) as a UUID."""
    if not text:
        return None
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def kafka_uuid(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


class QuorumAddresses:
    """The address of a quorum node by id (see the module doc)."""

    def __init__(
        self,
        *,
        voters: Mapping[int, HostPort],
        bootstrap: tuple[HostPort, ...],
        listener_name: str,
        voter_set: Callable[[], VoterSet],
    ) -> None:
        self._voters = voters
        self._bootstrap = bootstrap
        self._listener_name = listener_name
        self._voter_set = voter_set
        self._learned: dict[int, tuple[str, int]] = {}

    @property
    def bootstrap_ids(self) -> tuple[int, ...]:
        return tuple(-1 - index for index in range(len(self._bootstrap)))

    def address_of(self, node_id: int) -> tuple[str, int] | None:
        if node_id < 0:
            index = -1 - node_id
            if index >= len(self._bootstrap):
                return None
            server = self._bootstrap[index]
            return server.host, server.port
        static = self._voters.get(node_id)
        if static is not None:
            return static.host, static.port
        voter = self._voter_set().get(node_id)
        if voter is not None and voter.endpoints:
            named = [e for e in voter.endpoints if e.name == self._listener_name]
            endpoint = (named or list(voter.endpoints))[0]
            return endpoint.host, endpoint.port
        return self._learned.get(node_id)

    def learn(self, source: int, response: Any) -> None:
        """A bootstrap server answered a fetch without an error: it is the leader it names."""
        if source >= 0 or response is None or int(response.__api_key__) != 1:
            return
        if int(getattr(response, "error_code", 0)) != 0 or not response.responses:
            return
        partition = response.responses[0].partitions[0]
        leader = int(partition.current_leader.leader_id)
        address = self.address_of(source)
        if int(partition.error_code) == 0 and leader >= 0 and address is not None:
            self._learned[leader] = address


def parse_initial_controllers(text: str, *, listener_name: str) -> VoterSet:
    """``--initial-controllers``: ``id@host:port:directory-id`` entries, comma-separated (the
    directory ids Kafka's 22-character base64, from ``strom storage random-uuid``)."""
    nodes: list[VoterNode] = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        node, _, rest = entry.partition("@")
        parts = rest.rsplit(":", 2)
        try:
            if len(parts) != 3 or not parts[0]:
                raise ValueError(entry)
            host, port, directory = parts
            endpoint = Endpoint(listener_name, host, int(port))
            nodes.append(VoterNode(int(node), directory_uuid(directory), (endpoint,)))
        except ValueError:
            raise ConfigError(
                "--initial-controllers", f"expected id@host:port:directory-id, got {entry!r}"
            ) from None
    if not nodes:
        raise ConfigError("--initial-controllers", "name at least one controller")
    if len({n.node_id for n in nodes}) != len(nodes):
        raise ConfigError("--initial-controllers", "a controller is listed twice")
    return VoterSet.of(nodes)


def write_bootstrap_voters(metadata_dir: Path, voters: VoterSet) -> Path:
    """The bootstrap snapshot holding the first voters, in ``__cluster_metadata-0``."""
    directory = metadata_dir / f"{METADATA_TOPIC}-0"
    directory.mkdir(parents=True, exist_ok=True)
    snapshot = OffsetAndEpoch(0, 0)
    path = directory / snapshot_file_name(snapshot)

    def store(_: OffsetAndEpoch, data: bytes) -> None:
        path.write_bytes(data)

    SnapshotWriter(snapshot, timestamp=0, on_frozen=store, voters=voters).freeze()
    return path


def initial_voters(
    node: NodeConfig, *, standalone: bool, initial_controllers: str | None, none: bool
) -> VoterSet | None:
    """The first voters the flags name (``--standalone``'s: this node, filled in once its
    directory id is known), or None for a static quorum or a controller that joins later."""
    if sum((standalone, initial_controllers is not None, none)) > 1:
        raise ConfigError(
            "format", "give one of --standalone, --initial-controllers, --no-initial-controllers"
        )
    if (standalone or initial_controllers is not None) and not node.is_controller:
        raise ConfigError("format", "--standalone and --initial-controllers are for controllers")
    if (standalone or initial_controllers is not None) and node.voters:
        raise ConfigError(
            "controller.quorum.voters",
            "a dynamic quorum's controllers use controller.quorum.bootstrap.servers instead",
        )
    if standalone:
        return VoterSet(())
    if initial_controllers is not None:
        listener = (node.controller_listener_names or ("CONTROLLER",))[0]
        voters = parse_initial_controllers(initial_controllers, listener_name=listener)
        if voters.get(node.node_id) is None:
            raise ConfigError("--initial-controllers", f"node.id {node.node_id} is not listed")
        return voters
    return None


def standalone_voters(node: NodeConfig, directory_id: str | None) -> VoterSet:
    listener = node.controller_listener
    if listener is None:
        raise ConfigError("--standalone", "this node has no controller listener")
    advertised = node.advertised.get(listener.name)
    host = (advertised.host if advertised is not None else "") or listener.address.host
    port = (advertised.port if advertised is not None else 0) or listener.address.port
    endpoint = Endpoint(listener.name, host or "localhost", port)
    return VoterSet.of([VoterNode(node.node_id, directory_uuid(directory_id), (endpoint,))])
