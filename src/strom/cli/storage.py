"""``strom storage``: prepare a node's data directory, as ``kafka-storage.sh``.

* ``strom storage random-uuid``: a new cluster id (Kafka's 22-character form).
* ``strom storage format --cluster-id ID --config server.properties``: write ``meta.properties``
  (cluster id, node id, directory id) and ``bootstrap.checkpoint`` (the cluster's starting
  ``metadata.version``, ``--release-version``) into the node's data directory. Every node of a
  cluster is formatted with the same cluster id; a node with ``process.roles`` set refuses to
  start on a directory that is not formatted, or that belongs to another node or cluster.
  A controller of a dynamic quorum (KIP-853, ``controller.quorum.bootstrap.servers``) is
  formatted with ``--standalone`` (it is the first and only voter), ``--initial-controllers``
  (the first voters, ``id@host:port:directory-id``), or ``--no-initial-controllers`` (it joins
  later, ``strom metadata-quorum add-controller``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import NoReturn

import click

from strom.config import ConfigError
from strom.server.meta_properties import (
    MetaPropertiesError,
    format_data_dir,
    random_kafka_uuid,
)

__all__ = ["storage"]


def _fail(message: str) -> NoReturn:
    click.echo(f"strom storage: {message}", err=True)
    sys.exit(1)


@click.group("storage")
def storage() -> None:
    """Format data directories and make cluster ids (as kafka-storage.sh)."""


@storage.command("random-uuid")
def random_uuid() -> None:
    """Print a new random cluster id.

    \b
    Examples:
      strom storage random-uuid
    """
    click.echo(random_kafka_uuid())


@storage.command("format")
@click.option(
    "-t", "--cluster-id", required=True, help="The cluster id (strom storage random-uuid)."
)
@click.option(
    "-c",
    "--config",
    "properties_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The node's server.properties (node.id, log.dirs, roles).",
)
@click.option(
    "--override",
    "overrides",
    metavar="NAME=VALUE",
    multiple=True,
    help="Set a server setting by its Kafka name; repeatable.",
)
@click.option(
    "-r",
    "--release-version",
    default=None,
    help="The metadata.version the cluster starts at, as Kafka names it (3.6-IV2, or 3.6); "
    "default: the newest strom runs.",
)
@click.option(
    "-S",
    "--add-scram",
    "scram_users",
    metavar="MECHANISM=[name=NAME,password=PASSWORD]",
    multiple=True,
    help="A SCRAM credential the new cluster starts with (SCRAM-SHA-256 or SCRAM-SHA-512, "
    "optionally iterations=N); repeatable.",
)
@click.option(
    "-s",
    "--standalone",
    is_flag=True,
    help="This controller is the dynamic quorum's first and only voter (KIP-853).",
)
@click.option(
    "-I",
    "--initial-controllers",
    default=None,
    metavar="ID@HOST:PORT:DIRECTORY-ID,...",
    help="The dynamic quorum's first voters; this node's directory id is the one listed for it.",
)
@click.option(
    "-N",
    "--no-initial-controllers",
    is_flag=True,
    help="A controller that joins a dynamic quorum later (strom metadata-quorum add-controller).",
)
@click.option(
    "-g",
    "--ignore-formatted",
    is_flag=True,
    help="Leave a directory that is already formatted as it is instead of failing.",
)
def format_(
    *,
    cluster_id: str,
    properties_file: Path | None,
    overrides: tuple[str, ...],
    release_version: str | None,
    scram_users: tuple[str, ...],
    standalone: bool,
    initial_controllers: str | None,
    no_initial_controllers: bool,
    ignore_formatted: bool,
) -> None:
    """Format the node's data directory for a cluster.

    \b
    Examples:
      strom storage format --cluster-id $(strom storage random-uuid) --config node1.properties
      strom storage format -t q1Sh-9_ISia_zwGINzRvyQ -c node1.properties --release-version 3.6
      strom storage format -t q1Sh-9_ISia_zwGINzRvyQ -c node1.properties \\
        --add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]'
      strom storage format -t q1Sh-9_ISia_zwGINzRvyQ -c controller1.properties --standalone
    """
    from strom.cli.settings import build_config  # noqa: PLC0415
    from strom.controller import DEFAULT_METADATA_VERSION  # noqa: PLC0415
    from strom.security.scram import parse_scram_user  # noqa: PLC0415
    from strom.server.bootstrap_metadata import (  # noqa: PLC0415
        BootstrapError,
        release_metadata_version,
        scram_records,
        write_bootstrap_checkpoint,
    )
    from strom.server.configs.node_config import NodeConfig  # noqa: PLC0415
    from strom.server.raft.quorum_voters import (  # noqa: PLC0415
        initial_voters,
        kafka_uuid,
        standalone_voters,
        write_bootstrap_voters,
    )

    try:
        config = build_config(
            properties_file=properties_file, overrides=overrides, data_dir=None, listener=None
        )
        node = NodeConfig.from_config(config)
        try:
            scram = scram_records([parse_scram_user(text) for text in scram_users])
        except ValueError as error:
            raise BootstrapError(f"--add-scram: {error}") from None
        level = (
            DEFAULT_METADATA_VERSION
            if release_version is None
            else release_metadata_version(release_version)
        )
        data_dir = Path(config.get_str("log.dirs"))
        voters = initial_voters(
            node,
            standalone=standalone,
            initial_controllers=initial_controllers,
            none=no_initial_controllers,
        )
        listed = voters.get(node.node_id) if voters is not None else None
        meta = format_data_dir(
            data_dir,
            node_id=node.node_id,
            cluster_id=cluster_id,
            ignore_formatted=ignore_formatted,
            directory_id=kafka_uuid(listed.directory_id)
            if listed is not None and listed.directory_id is not None
            else None,
        )
        if meta is not None and voters is not None:
            if standalone:
                voters = standalone_voters(node, meta.directory_id)
            write_bootstrap_voters(data_dir, voters)
        if meta is not None:
            write_bootstrap_checkpoint(
                data_dir,
                metadata_version=level,
                timestamp=int(time.time() * 1000),
                scram=scram,
            )
    except (ConfigError, MetaPropertiesError, BootstrapError) as error:
        _fail(str(error))
    if meta is None:
        click.echo(f"{data_dir} is already formatted; left as it is")
    else:
        click.echo(f"formatted {data_dir} for cluster {meta.cluster_id} as node {meta.node_id}")


format_.name = "format"
