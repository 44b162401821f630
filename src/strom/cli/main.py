"""The ``strom`` command: one click group; each subcommand lives in its own module.

A subcommand's module is imported only when that subcommand runs (or help lists it): ``strom
server`` never loads the client libraries the other commands use, which keeps the broker's
start short.
"""

from __future__ import annotations

import importlib

import click

from strom import __version__

SUBCOMMANDS: dict[str, str] = {
    "server": "strom.cli.server",
    "storage": "strom.cli.storage",
    "topics": "strom.cli.topics",
    "configs": "strom.cli.configs",
    "produce": "strom.cli.produce",
    "consume": "strom.cli.consume",
    "groups": "strom.cli.groups",
    "perf": "strom.cli.perf",
    "cluster": "strom.cli.cluster",
    "metadata-quorum": "strom.cli.metadata_quorum",
}
"""Subcommand name -> the module defining a click command of that name, in help order."""


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = SUBCOMMANDS.get(cmd_name)
        if module is None:
            return None
        command = getattr(importlib.import_module(module), cmd_name.replace("-", "_"))
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="strom")
def cli() -> None:
    """strom: an Apache Kafka-compatible event streaming platform."""


def main() -> None:
    cli()
