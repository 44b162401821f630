"""``strom mirror``: MirrorMaker 2's dedicated mode (``strom mirror mm2.properties``, as
``connect-mirror-maker.sh``) and consumer failover (``strom mirror translate-offsets``)."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import click

from strom.config import load_properties

__all__ = ["mirror"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _MirrorGroup(click.Group):
    """``strom mirror FILE`` runs the flows (``run``); other words are subcommands."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group("mirror", cls=_MirrorGroup)
def mirror() -> None:
    """Mirror topics, consumer offsets and heartbeats between clusters, as MirrorMaker 2
    (see docs/mirroring.md).

    \b
    Examples:
      strom mirror mm2.properties       # the flows the file enables (strom mirror run FILE)
      strom mirror translate-offsets --group billing --source A --bootstrap-server b:9092
    """


@mirror.command("run")
@click.argument("properties_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--clusters",
    metavar="ALIAS[,ALIAS...]",
    default=None,
    help="Run only the flows into these target clusters (MM2's --clusters).",
)
def run(*, properties_file: Path, clusters: str | None) -> None:
    """Run the flows of PROPERTIES_FILE (MirrorMaker 2's mm2.properties: clusters = A, B;
    A.bootstrap.servers; A->B.enabled = true; ...) until interrupted."""
    from strom.config import ConfigError as PropertiesError  # noqa: PLC0415
    from strom.connect.connectors.mirror.maker import MirrorMaker  # noqa: PLC0415
    from strom.connect.connectors.mirror.mm2config import (  # noqa: PLC0415
        ConfigError,
        MirrorMakerConfig,
    )
    from strom.connect.errors import ConnectError  # noqa: PLC0415

    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    targets = [c.strip() for c in clusters.split(",") if c.strip()] if clusters else None
    try:
        maker = MirrorMaker(MirrorMakerConfig.of(load_properties(properties_file)), targets=targets)
        maker.check_clusters()
    except (ConfigError, PropertiesError, ValueError) as error:
        raise click.ClickException(f"{properties_file}: {error}") from None
    stop, started = threading.Event(), threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        # still reading the internal topics, however long that takes: stop now (but not while
        # Spark's JVM starts, which would outlive the process; then once started)
        if not started.is_set() and not maker.starting_spark:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        maker.start()
        started.set()
        flows = ", ".join(f.name for f in maker.flows)
        logging.getLogger(__name__).info("ready: mirroring %s", flows)
        stop.wait()
    except KeyboardInterrupt:
        pass
    except ConnectError as error:
        raise click.ClickException(str(error)) from None
    finally:
        maker.stop()


@mirror.command("translate-offsets")
@click.option("--group", required=True, help="The consumer group to fail over.")
@click.option("--source", required=True, metavar="ALIAS", help="The cluster the group left.")
@click.option(
    "--target",
    metavar="ALIAS",
    default=None,
    help="The cluster the group moves to, by its alias in --config.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="An mm2.properties naming the target's settings (with --target).",
)
@click.option(
    "--bootstrap-server",
    "bootstrap_servers",
    metavar="HOST:PORT",
    default=None,
    help="The target cluster, without --config.",
)
@click.option(
    "--execute",
    is_flag=True,
    help="Commit the offsets into GROUP on the target (it must have no active member there).",
)
def translate_offsets(
    *,
    execute: bool,
    group: str,
    source: str,
    target: str | None,
    config_file: Path | None,
    bootstrap_servers: str | None,
) -> None:
    """Print where GROUP resumes on the target cluster, from the checkpoints the mirror from
    SOURCE wrote there (RemoteClusterUtils.translateOffsets): TOPIC PARTITION OFFSET lines;
    with --execute, also commit them as the group's offsets there."""
    from strom.connect.connectors.mirror.clients import Cluster  # noqa: PLC0415
    from strom.connect.connectors.mirror.mm2config import ConfigError  # noqa: PLC0415
    from strom.connect.connectors.mirror.policy import PolicyError  # noqa: PLC0415
    from strom.connect.connectors.mirror.remote import (  # noqa: PLC0415
        MirrorClientError,
        commit_offsets,
    )
    from strom.connect.connectors.mirror.remote import (  # noqa: PLC0415
        translate_offsets as translate,
    )

    settings: dict[str, str] = {}
    client: dict[str, Any]
    if config_file is not None:
        if target is None:
            raise click.UsageError("--config needs --target, the alias of the target cluster")
        settings = load_properties(config_file)
        aliases = [c.strip() for c in settings.get("clusters", "").split(",") if c.strip()]
        for alias, option in ((source, "--source"), (target, "--target")):
            if alias not in aliases:
                raise click.BadParameter(
                    f"{alias!r} is not a cluster of {config_file} (clusters:"
                    f" {', '.join(aliases) or 'none'})",
                    param_hint=option,
                )
        prefix = f"{target}."
        java = {k[len(prefix) :]: v for k, v in settings.items() if k.startswith(prefix)}
        if not java.get("bootstrap.servers"):
            raise click.ClickException(f"{config_file}: {target}.bootstrap.servers is not set")
        try:
            client = dict(Cluster(target, java).client)
        except ConfigError as error:
            raise click.ClickException(str(error)) from None
    elif bootstrap_servers is not None:
        client = {"bootstrap.servers": bootstrap_servers}
    else:
        raise click.UsageError(
            "give the target cluster: --bootstrap-server, or --config and --target"
        )
    try:
        offsets = translate(client, source, group, policy=settings)
        if offsets and execute:
            commit_offsets(client, group, offsets)
    except (MirrorClientError, PolicyError) as error:
        raise click.ClickException(str(error)) from None
    if not offsets:
        click.echo(
            f"no checkpoints of group {group!r} from {source}: is MirrorCheckpointConnector"
            " running for the flow, with the group in its 'groups'?",
            err=True,
        )
        sys.exit(1)
    for tp in sorted(offsets):
        click.echo(f"{tp.topic} {tp.partition} {offsets[tp]}")
