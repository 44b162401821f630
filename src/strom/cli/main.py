"""The ``strom`` command: one click group; each subcommand lives in its own module.

A subcommand's module is imported only when that subcommand runs: ``strom --help`` lists the
short help of ``SUBCOMMANDS`` without importing any of them, and ``strom server`` never loads
the client libraries the other commands use. A command whose optional dependencies (an extra)
are not installed says in one line which extra to install.
"""

from __future__ import annotations

import difflib
from typing import Any

import click

from strom import __version__

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "server": (".server:server", "Run a strom node (broker, controller or both)."),
    "storage": (".storage:storage", "Format data directories, as kafka-storage.sh."),
    "topics": (".topics:topics", "Create, list, describe, alter and delete topics."),
    "configs": (".configs:configs", "Describe and change topic and broker settings."),
    "users": (".users:users", "Users' SCRAM credentials."),
    "acls": (".acls:acls", "Add, remove and list ACLs, as kafka-acls.sh."),
    "produce": (".produce:produce", "Send each line of stdin to a topic as one message."),
    "consume": (".consume:consume", "Print the messages of a topic, one per line."),
    "groups": (".groups:groups", "List, describe, delete and reset consumer groups."),
    "perf": (".perf:perf", "Measure producer and consumer throughput and latency."),
    "leader-election": (".leader_election:leader_election", "Elect partition leaders."),
    "partitions": (".partitions:partitions", "Move partition replicas between brokers."),
    "broker": (".broker:broker", "Operate on one broker of the cluster."),
    "balance": (".balance:balance", "Plan and carry out moves that even out the cluster."),
    "cluster": (".cluster:cluster", "Run a local cluster, or describe a cluster's brokers."),
    "metadata-quorum": (".metadata_quorum:metadata_quorum", "Describe the controller quorum."),
    "metrics": (".metrics:metrics", "Print a node's metrics (its metrics listener) as a table."),
    "chaos": (".chaos:chaos", "Fault scenarios on a local cluster, checked for lost data."),
    "registry": (".registry:registry", "Run a Confluent-compatible schema registry."),
    "schemas": (".schemas:schemas", "List, read, register and delete registry schemas."),
    "connect": (".connect:connect", "Run a Kafka Connect worker whose connectors run on Spark."),
    "connectors": (".connectors:connectors", "Create, list and manage Kafka Connect connectors."),
    "rest": (".rest:rest", "Run a REST proxy (Confluent REST Proxy's v3 API)."),
    "console": (".console:console", "Run the web console."),
    "sql": (".sql:sql", "Run a ksqlDB-compatible SQL server on Spark."),
    "get-offsets": (".get_offsets:get_offsets", "Print each partition's offset at a time."),
    "delete-records": (".delete_records:delete_records", "Delete records below offsets."),
    "log-dirs": (".log_dirs:log_dirs", "Describe the brokers' log directories."),
    "transactions": (".transactions:transactions", "List, describe and abort transactions."),
    "features": (".features:features", "Describe and change the cluster's feature levels."),
    "dump-log": (".dump_log:dump_log", "Print what segment files hold, offline."),
}
"""Subcommand name -> (``module:attribute`` of its click command, relative to ``strom.cli``;
its short help for ``strom --help``), in help order."""

EXTRAS: dict[str, str] = {
    **dict.fromkeys(
        ["starlette", "uvicorn", "httpx", "httpx2", "avro", "fastavro", "jsonschema"], "registry"
    ),
    **dict.fromkeys(["referencing", "google", "grpc_tools", "authlib", "cachetools"], "registry"),
    "matplotlib": "chaos",
    "lark": "sql",
    **dict.fromkeys(["pyspark", "pyarrow"], "spark"),
}
"""Top-level module -> the extra of pyproject.toml that installs it."""

COMMAND_EXTRAS: dict[str, str] = {
    "connect": "connect",
    "connectors": "connect",
    "rest": "rest",
    "console": "rest",
    "sql": "sql",
}
"""Subcommand -> the one extra that installs all it needs, where its modules are in several."""


def missing_extra(error: ImportError, command: str) -> click.ClickException | None:
    """The one-line error for a module of an extra that is not installed (``error.name``),
    else None."""
    extra = EXTRAS.get((error.name or "").partition(".")[0])
    if extra is None:
        return None
    extra = COMMAND_EXTRAS.get(command, extra)
    return click.ClickException(
        f"strom {command} needs the {extra!r} extra ({error.name} is not installed): "
        f"pip install 'strom[{extra}]'"
    )


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = SUBCOMMANDS.get(cmd_name)
        if entry is None:
            return None
        from strom.server.collector import import_module  # noqa: PLC0415 - not for --help

        module, _, attribute = entry[0].partition(":")
        try:
            command = getattr(import_module(module, "strom.cli"), attribute)
        except ModuleNotFoundError as error:
            raise missing_extra(error, cmd_name) or error from None
        assert isinstance(command, click.Command)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        ctx.meta["strom.command"] = name
        if name in SUBCOMMANDS or name.startswith("-"):
            return super().resolve_command(ctx, args)
        close = difflib.get_close_matches(name, SUBCOMMANDS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise click.UsageError(f"No such command {name!r}.{hint}", ctx)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; a module it imports late from a missing extra is one line."""
        try:
            return super().invoke(ctx)
        except ImportError as error:
            raise missing_extra(error, ctx.meta.get("strom.command", "")) or error from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command with its short help from ``SUBCOMMANDS`` (nothing is imported)."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, text) for name, (_, text) in SUBCOMMANDS.items()])


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="strom")
def cli() -> None:
    """strom: an Apache Kafka-compatible event streaming platform."""


def main() -> None:
    cli()
