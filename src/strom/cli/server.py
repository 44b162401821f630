"""``strom server``: run a node (a standalone one-node cluster by default) until SIGINT or SIGTERM.

Settings, lowest precedence first: Kafka's defaults, the properties file, ``--override``, then
``--data-dir`` and ``--listener`` (which set ``log.dirs`` and ``listeners``). Invalid values stop
the start with one line naming them all and exit code 1; unknown names get one warning.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from strom.cli.settings import build_config, registry_section
from strom.config import ConfigError
from strom.protocol.kafka_releases import KAFKA_RELEASES
from strom.server.allocator import keep_large_buffers_in_heap
from strom.server.collector import import_module, settle_after_start
from strom.server.eventloop import run
from strom.server.meta_properties import MetaPropertiesError

if TYPE_CHECKING:  # the registry's libraries load only when a registry runs, the node's when
    from strom.registry.server import RegistryServer  # one does (not for --help)
    from strom.server.node import Node

__all__ = ["server"]

log = logging.getLogger("strom.server")

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _fail(message: str) -> NoReturn:
    click.echo(f"strom server: {message}", err=True)
    sys.exit(1)


@click.command("server")
@click.argument(
    "properties_file",
    required=False,
    type=click.Path(dir_okay=False, path_type=Path),
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory for the logs and meta.properties (log.dirs).  [default: ./data]",
)
@click.option(
    "--listener",
    metavar="HOST:PORT",
    default=None,
    help="Address to serve clients on; port 0 picks a free one.  [default: localhost:9092]",
)
@click.option(
    "--override",
    "overrides",
    metavar="NAME=VALUE",
    multiple=True,
    help="Set any server setting by its Kafka name; repeatable.",
)
@click.option(
    "--emulate-kafka-version",
    metavar="RELEASE",
    default=None,
    help="Advertise and serve only the API versions of this Apache Kafka release "
    f"({', '.join(KAFKA_RELEASES)}).",
)
def server(
    properties_file: Path | None,
    data_dir: Path | None,
    listener: str | None,
    overrides: tuple[str, ...],
    emulate_kafka_version: str | None,
) -> None:
    """Run a strom node: with no process.roles a standalone one-node cluster (broker and
    controller); otherwise the roles of PROPERTIES_FILE (see docs/cluster.md). Settings named
    registry.* run a schema registry beside it (see docs/registry.md)."""
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    import_module("strom.server.node")  # the server stack, imported with the collector paused
    from strom.server.node import Node, NodeStartError  # noqa: PLC0415 - imported just above

    try:
        config = build_config(
            properties_file=properties_file,
            overrides=overrides,
            data_dir=data_dir,
            listener=listener,
        )
        node = Node(config, emulate_kafka_version=emulate_kafka_version)
        registry = registry_section(properties_file=properties_file, overrides=overrides)
    except (ConfigError, ValueError) as error:
        _fail(str(error))
    try:
        run(_serve(node, registry))
    except (MetaPropertiesError, NodeStartError) as error:
        _fail(str(error))
    except OSError as error:
        addresses = ", ".join(str(listener.address) for listener in node.node.listeners)
        _fail(f"cannot listen on {addresses}: {error.strerror or error}")
    except KeyboardInterrupt:  # a second Ctrl-C during shutdown
        sys.exit(130)


async def _serve(node: Node, registry: dict[str, str]) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM)

    def request_stop(signum: int) -> None:
        log.info("%s received, shutting down", signal.Signals(signum).name)
        for number in signals:  # a second signal ends the process at once
            loop.remove_signal_handler(number)
        stop.set()

    for number in signals:
        loop.add_signal_handler(number, request_stop, number)
    await node.start()
    settle_after_start()
    keep_large_buffers_in_heap()
    beside: RegistryServer | None = None
    try:
        if registry:
            beside = await asyncio.to_thread(_start_registry, node, registry)
        await stop.wait()
    finally:
        if beside is not None:
            await asyncio.to_thread(beside.stop)
        await node.stop()


def _start_registry(node: Node, values: dict[str, str]) -> RegistryServer:
    """A schema registry on this node's listener (the ``registry.*`` settings)."""
    from strom.registry.server import RegistryServer, RegistrySettings  # noqa: PLC0415
    from strom.server.node import NodeStartError  # noqa: PLC0415 - loaded by server()

    values.setdefault("kafkastore.bootstrap.servers", str(node.bound_address))
    try:
        registry = RegistryServer(RegistrySettings.from_properties(values))
    except ValueError as error:  # a setting refused: a JKS keystore, a missing JAAS file
        raise NodeStartError(f"schema registry: {error}") from error
    registry.start()
    log.info("ready: schema registry listening on %s", registry.url)
    return registry
