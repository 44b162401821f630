"""``strom metadata-quorum describe --status | --replication``, as ``kafka-metadata-quorum.sh``:
the controller quorum's leader, epoch and high watermark, and each voter's and observer's log
end offset, lag and fetch times. Asks any broker (``--bootstrap-server``, which forwards the
question to the active controller) or a controller (``--bootstrap-controller``).

``add-controller --command-config controller.properties`` and ``remove-controller
--controller-id N --controller-directory-id ID`` change a dynamic quorum's voters (KIP-853):
the controller to add runs already, as an observer that has caught up with the leader."""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from strom.cli.client_common import (
    DEFAULT_BOOTSTRAP_SERVER,
    ToolGroup,
    output_console,
)
from strom.cli.quorum_client import QuorumState, ask_quorum, change_voters

__all__ = ["metadata_quorum"]


@click.group("metadata-quorum", cls=ToolGroup)
@click.option(
    "--bootstrap-controller", default=None, metavar="HOST:PORT[,...]", help="Controller(s) to ask."
)
def metadata_quorum() -> None:
    """Describe the controller quorum (as kafka-metadata-quorum.sh)."""


@metadata_quorum.command("describe")
@click.option(
    "--bootstrap-server", default=None, metavar="HOST:PORT[,...]", help="Broker(s) to ask."
)
@click.option(
    "--bootstrap-controller", default=None, metavar="HOST:PORT[,...]", help="Controller(s) to ask."
)
@click.option(
    "--status", "what", flag_value="status", help="The leader, epoch, high watermark, lag."
)
@click.option("--replication", "what", flag_value="replication", help="Each replica's offsets.")
def describe(
    bootstrap_server: str | None, bootstrap_controller: str | None, what: str | None
) -> None:
    """Describe the quorum's status or its replication (one of --status, --replication).

    \b
    Examples:
      strom metadata-quorum describe --bootstrap-server 127.0.0.1:9092 --status
      strom metadata-quorum describe --bootstrap-controller 127.0.0.1:9093 --replication
    """
    if what is None:
        raise click.UsageError("choose one of --status or --replication")
    servers, controllers = _servers(bootstrap_server, bootstrap_controller)
    quorum, cluster_id = ask_quorum(servers, controllers=controllers)
    if what == "status":
        _status(quorum, cluster_id)
    else:
        _replication(quorum)


def _status(quorum: QuorumState, cluster_id: str) -> None:
    now = int(time.time() * 1000)
    followers = [r for r in quorum.replicas if r.voter and r.node_id != quorum.leader_id]
    lag = max((quorum.high_watermark - r.log_end_offset for r in followers), default=0)
    lag_ms = max(
        (now - r.last_caught_up_timestamp for r in followers if r.last_caught_up_timestamp >= 0),
        default=-1,
    )
    voters: list[Any] = [r.node_id for r in quorum.replicas if r.voter]
    if any(r.directory_id for r in quorum.replicas if r.voter):  # a dynamic quorum's (3.9's form)
        voters = [
            {
                "id": r.node_id,
                "directoryId": r.directory_id,
                "endpoints": quorum.endpoints.get(r.node_id, []),
            }
            for r in quorum.replicas
            if r.voter
        ]
    observers = [r.node_id for r in quorum.replicas if not r.voter]
    rows = [
        ("ClusterId", cluster_id or "-"),
        ("LeaderId", str(quorum.leader_id)),
        ("LeaderEpoch", str(quorum.leader_epoch)),
        ("HighWatermark", str(quorum.high_watermark)),
        ("MaxFollowerLag", str(max(lag, 0))),
        ("MaxFollowerLagTimeMs", str(lag_ms)),
        ("CurrentVoters", json.dumps(voters)),
        ("CurrentObservers", json.dumps(observers)),
    ]
    for name, value in rows:
        click.echo(f"{name + ':':<22}{value}")


def _replication(quorum: QuorumState) -> None:
    now = int(time.time() * 1000)
    table = Table(box=None, pad_edge=False)
    for column in (
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ):
        table.add_column(column)
    for replica in sorted(quorum.replicas, key=lambda r: (not r.voter, r.node_id)):
        if replica.node_id == quorum.leader_id:
            status = "Leader"
        else:
            status = "Follower" if replica.voter else "Observer"
        table.add_row(
            str(replica.node_id),
            replica.directory_id or "-",
            str(replica.log_end_offset),
            str(max(quorum.high_watermark - replica.log_end_offset, 0)),
            _ago(replica.last_fetch_timestamp, now),
            _ago(replica.last_caught_up_timestamp, now),
            status,
        )
    output_console().print(table)


def _servers(bootstrap_server: str | None, bootstrap_controller: str | None) -> tuple[str, bool]:
    if bootstrap_server and bootstrap_controller:
        raise click.UsageError("give --bootstrap-server or --bootstrap-controller, not both")
    servers = bootstrap_controller or bootstrap_server or DEFAULT_BOOTSTRAP_SERVER
    return servers, bool(bootstrap_controller)


@metadata_quorum.command("add-controller")
@click.option(
    "--bootstrap-server", default=None, metavar="HOST:PORT[,...]", help="Broker(s) to ask."
)
@click.option(
    "--bootstrap-controller", default=None, metavar="HOST:PORT[,...]", help="Controller(s) to ask."
)
@click.option(
    "--command-config",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The server.properties of the controller to add (its node.id, log.dirs, listeners).",
)
def add_controller(
    bootstrap_server: str | None, bootstrap_controller: str | None, command_config: Path
) -> None:
    """Make a running controller a voter of the dynamic quorum (KIP-853).

    The controller was formatted with --no-initial-controllers and runs, following the
    quorum as an observer; the leader adds it once it has caught up.

    \b
    Examples:
      strom metadata-quorum add-controller --bootstrap-server 127.0.0.1:9092 \\
        --command-config controller2.properties
    """
    from kio.schema.add_raft_voter.v0.request import (  # noqa: PLC0415
        AddRaftVoterRequest,
        Listener,
    )
    from kio.static.primitive import i32, i32Timedelta, u16  # noqa: PLC0415

    from strom.cli.client_common import CliError  # noqa: PLC0415
    from strom.cli.settings import build_config  # noqa: PLC0415
    from strom.config import ConfigError  # noqa: PLC0415
    from strom.server.configs.node_config import NodeConfig  # noqa: PLC0415
    from strom.server.meta_properties import (  # noqa: PLC0415
        MetaPropertiesError,
        load_formatted,
    )
    from strom.server.raft.quorum_voters import directory_uuid  # noqa: PLC0415

    try:
        config = build_config(
            properties_file=command_config, overrides=(), data_dir=None, listener=None
        )
        node = NodeConfig.from_config(config)
        meta = load_formatted(Path(config.get_str("log.dirs")), node_id=node.node_id)
    except (ConfigError, MetaPropertiesError) as error:
        raise CliError(f"{command_config}: {error}") from None
    listener = node.controller_listener
    if listener is None or not node.is_controller:
        raise CliError(f"{command_config}: node {node.node_id} is not a controller")
    advertised = node.advertised.get(listener.name)
    host = (advertised.host if advertised else "") or listener.address.host or "localhost"
    port = (advertised.port if advertised else 0) or listener.address.port
    servers, controllers = _servers(bootstrap_server, bootstrap_controller)
    request = AddRaftVoterRequest(
        cluster_id=meta.cluster_id,
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        voter_id=i32(node.node_id),
        voter_directory_id=directory_uuid(meta.directory_id),
        listeners=(Listener(name=listener.name, host=host, port=u16(port)),),
    )
    change_voters(servers, controllers=controllers, request=request)
    click.echo(f"added controller {node.node_id} ({meta.directory_id}) at {host}:{port}")


@metadata_quorum.command("remove-controller")
@click.option(
    "--bootstrap-server", default=None, metavar="HOST:PORT[,...]", help="Broker(s) to ask."
)
@click.option(
    "--bootstrap-controller", default=None, metavar="HOST:PORT[,...]", help="Controller(s) to ask."
)
@click.option("--controller-id", required=True, type=int, help="The node id of the voter.")
@click.option(
    "--controller-directory-id",
    required=True,
    metavar="ID",
    help="Its directory id (describe --replication shows it).",
)
def remove_controller(
    bootstrap_server: str | None,
    bootstrap_controller: str | None,
    controller_id: int,
    controller_directory_id: str,
) -> None:
    """Remove a voter from the dynamic quorum (KIP-853); the leader may remove itself.

    \b
    Examples:
      strom metadata-quorum remove-controller --bootstrap-server 127.0.0.1:9092 \\
        --controller-id 3 --controller-directory-id 7OvnJ7Eo0x-l1dLSYPr3Ng
    """
    from kio.schema.remove_raft_voter.v0.request import RemoveRaftVoterRequest  # noqa: PLC0415
    from kio.static.primitive import i32  # noqa: PLC0415

    from strom.server.raft.quorum_voters import directory_uuid  # noqa: PLC0415

    try:
        directory = directory_uuid(controller_directory_id)
    except ValueError:
        raise click.BadParameter(
            f"{controller_directory_id!r} is not a directory id",
            param_hint="--controller-directory-id",
        ) from None
    servers, controllers = _servers(bootstrap_server, bootstrap_controller)
    request = RemoveRaftVoterRequest(
        cluster_id=None, voter_id=i32(controller_id), voter_directory_id=directory
    )
    change_voters(servers, controllers=controllers, request=request)
    click.echo(f"removed controller {controller_id} ({controller_directory_id})")


def _ago(timestamp: int, now: int) -> str:
    if timestamp < 0:
        return "-"
    return f"{max(now - timestamp, 0)} ms ago"
