"""``strom cluster``: a local cluster in one command, and what a cluster's brokers are doing.

* ``strom cluster up --brokers 3 --controllers 3 --data-dir DIR``: formats and starts controller
  and broker processes on this machine (``strom.testing.Cluster``), prints the bootstrap
  servers and every node, and stops them all on Ctrl-C (or SIGTERM). Started again with the same
  ``--data-dir``, the cluster comes back with its data.
* ``strom cluster describe --bootstrap-server HOST:PORT``: each registered broker, its address,
  rack and state (active, or fenced: not heartbeating, or shut down), and the quorum's leader.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click
from rich.table import Table

from strom.cli.client_common import (
    ClientGroup,
    CliError,
    bootstrap_server_option,
    output_console,
    parse_assignments,
)
from strom.cli.quorum_client import connect, describe_cluster, describe_quorum, replica_counts

__all__ = ["cluster"]


@click.group("cluster", cls=ClientGroup)
def cluster() -> None:
    """Run a local cluster, or describe a cluster's brokers."""


@cluster.command("up")
@click.option("--brokers", type=click.IntRange(0), default=3, show_default=True)
@click.option("--controllers", type=click.IntRange(1), default=3, show_default=True)
@click.option(
    "--combined",
    is_flag=True,
    help="Nodes that are broker and controller both (--brokers of them).",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Directory for every node's data and settings (kept; reused when started again).",
)
@click.option(
    "--override",
    "overrides",
    metavar="NAME=VALUE",
    multiple=True,
    help="A server setting for every node, by its Kafka name; repeatable.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--base-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="Listen on this port and the ones after it (two a node, then each node's metrics).  "
    "[default: the ports the --data-dir had, else free ones]",
)
@click.option(
    "--metrics/--no-metrics",
    default=True,
    show_default=True,
    help="Every node serves GET /metrics (Prometheus's text format) on a metrics listener.",
)
def up(
    *,
    brokers: int,
    controllers: int,
    combined: bool,
    data_dir: Path,
    overrides: tuple[str, ...],
    host: str,
    base_port: int | None,
    metrics: bool,
) -> None:
    """Start a cluster of strom processes on this machine until Ctrl-C.

    \b
    Examples:
      strom cluster up --brokers 3 --controllers 3 --data-dir ./cluster
      strom cluster up --brokers 3 --data-dir ./cluster --base-port 19090
      strom cluster up --combined --brokers 3 --data-dir ./cluster \\
          --override controller.quorum.election.timeout.ms=500
    """
    from strom.testing.cluster import Cluster, ClusterError  # noqa: PLC0415 - on use only

    config = parse_assignments(overrides, option="'--override'")
    local = Cluster(
        brokers,
        controllers,
        combined=combined,
        data_dir=data_dir,
        config=config,
        host=host,
        defaults={},
        base_port=base_port,
        metrics=metrics,
    )
    stop = threading.Event()

    def interrupt(*_: object) -> None:
        stop.set()
        raise KeyboardInterrupt  # also ends a start still under way (which stops every node)

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, interrupt)
    click.echo(f"starting {len(local.nodes)} node(s) in {data_dir} ...", err=True)
    try:
        local.start()
    except (ClusterError, OSError) as error:
        raise CliError(str(error)) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    try:
        click.echo(f"cluster {local.cluster_id} is up")
        for node in local.nodes.values():
            click.echo(
                f"  node {node.node_id:>5} {'+'.join(node.roles):<18} {node.address:<22} "
                f"{node.data_dir}"
            )
            if node.metrics_url is not None:
                click.echo(f"             metrics {node.metrics_url}")
        click.echo(f"bootstrap servers: {local.bootstrap_servers}")
        click.echo("press Ctrl-C to stop every node", err=True)
        while not stop.wait(0.5):
            for node in local.nodes.values():
                if not node.alive:
                    tail = "".join(node.lines[-3:]).strip()
                    raise CliError(f"node {node.node_id} exited: {tail}")
    finally:
        click.echo("stopping every node ...", err=True)
        local.stop()


@cluster.command("describe")
@bootstrap_server_option("Broker(s) to ask.")
def describe(bootstrap_server: str) -> None:
    """Every registered broker, its state, the partitions it leads and the replicas it holds,
    and the active controller.

    \b
    Examples:
      strom cluster describe --bootstrap-server 127.0.0.1:9092
    """
    with connect(bootstrap_server) as connection:
        state = describe_cluster(connection)
        quorum = describe_quorum(connection)
        counts = replica_counts(connection)
    click.echo(f"cluster id: {state.cluster_id}")
    click.echo(f"active controller: {quorum.leader_id} (epoch {quorum.leader_epoch})")
    table = Table(box=None, pad_edge=False)
    for column in ("BrokerId", "Address", "Rack", "State", "Leaders", "Replicas"):
        table.add_column(column)
    for node in sorted(state.nodes, key=lambda n: n.node_id):
        leaders, replicas = counts.get(node.node_id, (0, 0))
        table.add_row(
            str(node.node_id),
            f"{node.host}:{node.port}",
            node.rack or "-",
            "fenced" if node.fenced else "active",
            str(leaders),
            str(replicas),
        )
    output_console().print(table)
