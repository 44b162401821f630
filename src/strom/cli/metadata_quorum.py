"""``strom metadata-quorum describe --status | --replication``, as ``kafka-metadata-quorum.sh``:
the controller quorum's leader, epoch and high watermark, and each voter's and observer's log
end offset, lag and fetch times. Asks any broker (``--bootstrap-server``, which forwards the
question to the active controller) or a controller (``--bootstrap-controller``)."""

from __future__ import annotations

import json
import time

import click
from rich.table import Table

from strom.cli.client_common import (
    DEFAULT_BOOTSTRAP_SERVER,
    ToolGroup,
    output_console,
)
from strom.cli.quorum_client import QuorumState, ask_quorum

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
    if bootstrap_server and bootstrap_controller:
        raise click.UsageError("give --bootstrap-server or --bootstrap-controller, not both")
    servers = bootstrap_controller or bootstrap_server or DEFAULT_BOOTSTRAP_SERVER
    quorum, cluster_id = ask_quorum(servers, controllers=bool(bootstrap_controller))
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
    voters = [r.node_id for r in quorum.replicas if r.voter]
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
            str(replica.log_end_offset),
            str(max(quorum.high_watermark - replica.log_end_offset, 0)),
            _ago(replica.last_fetch_timestamp, now),
            _ago(replica.last_caught_up_timestamp, now),
            status,
        )
    output_console().print(table)


def _ago(timestamp: int, now: int) -> str:
    if timestamp < 0:
        return "-"
    return f"{max(now - timestamp, 0)} ms ago"
