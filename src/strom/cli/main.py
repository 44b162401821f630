"""The ``strom`` command: one click group; each subcommand lives in its own module.

A subcommand's module is imported only when that subcommand runs (or help lists it): ``strom
server`` never loads the client libraries the other commands use, which keeps the broker's
start short.
"""

from __future__ import annotations

import difflib
import importlib

import click

from strom import __version__

SUBCOMMANDS: dict[str, str] = {
    "server": "strom.cli.server",
    "storage": "strom.cli.storage",
    "topics": "strom.cli.topics",
    "configs": "strom.cli.configs",
    "users": "strom.cli.users",
    "acls": "strom.cli.acls",
    "produce": "strom.cli.produce",
    "consume": "strom.cli.consume",
    "groups": "strom.cli.groups",
    "perf": "strom.cli.perf",
    "leader-election": "strom.cli.leader_election",
    "partitions": "strom.cli.partitions",
    "broker": "strom.cli.broker",
    "cluster": "strom.cli.cluster",
    "metadata-quorum": "strom.cli.metadata_quorum",
    "chaos": "strom.cli.chaos",
    "registry": "strom.cli.registry",
    "schemas": "strom.cli.schemas",
    "get-offsets": "strom.cli.get_offsets",
    "delete-records": "strom.cli.delete_records",
    "log-dirs": "strom.cli.log_dirs",
    "transactions": "strom.cli.transactions",
    "features": "strom.cli.features",
    "dump-log": "strom.cli.dump_log",
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

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name in SUBCOMMANDS or name.startswith("-"):
            return super().resolve_command(ctx, args)
        close = difflib.get_close_matches(name, SUBCOMMANDS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise click.UsageError(f"No such command {name!r}.{hint}", ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command with its whole first sentence (click cuts them to fit one line)."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None:
                rows.append((name, command.get_short_help_str(limit=500)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="strom")
def cli() -> None:
    """strom: an Apache Kafka-compatible event streaming platform."""


def main() -> None:
    cli()
