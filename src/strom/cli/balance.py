"""``strom balance``: plan and carry out the moves that even out a cluster's load, goal by goal
as Cruise Control's defaults (:mod:`strom.balancer`), over strom's own partition
reassignments (:mod:`strom.cli.balance_executor`)."""

from __future__ import annotations

import json
from collections import Counter

import click

from strom.balancer import GOALS, BalanceError, Plan, plan_balance
from strom.cli.balance_executor import cancel_all, execute_plan, load_model, refuse_while_moving
from strom.cli.client_common import CliError, bootstrap_server_option, handle_errors
from strom.cli.quorum_client import connect, replica_counts
from strom.cli.reassignments import list_ongoing, reassignment_json
from strom.client.blocking import BrokerConnection

__all__ = ["balance", "execute_options"]

_DEFAULT_THROTTLE = 10 * 1024 * 1024


@click.group("balance")
def balance() -> None:
    """Even out the cluster's replicas, disk and leaders (Cruise Control's goals)."""


def _broker_options(func: click.decorators.FC) -> click.decorators.FC:
    func = click.option(
        "--remove-broker",
        "remove_brokers",
        type=int,
        multiple=True,
        metavar="ID",
        help="Move every replica off this broker (repeatable).",
    )(func)
    return click.option(
        "--add-broker",
        "add_brokers",
        type=int,
        multiple=True,
        metavar="ID",
        help="Move a fair share onto this new broker only (repeatable).",
    )(func)


def _plan(
    connection: BrokerConnection, add_brokers: tuple[int, ...], remove_brokers: tuple[int, ...]
) -> Plan:
    try:
        return plan_balance(
            load_model(connection),
            add_brokers=frozenset(add_brokers),
            remove_brokers=frozenset(remove_brokers),
        )
    except BalanceError as error:
        raise CliError(str(error)) from None


_COLUMNS = (
    ("replicas", "replicas", 13),
    ("leaders", "leaders", 11),
    ("disk", "disk (bytes)", 27),
    ("nw_in", "in (bytes/s)", 23),
    ("nw_out", "out (bytes/s)", 23),
)


def _table(plan: Plan) -> list[str]:
    lines = [" ".join([f"{'broker':>6}", *(f"{title:>{w}}" for _, title, w in _COLUMNS)])]
    for b in sorted(plan.after["replicas"]):
        cells = [
            f"{f'{plan.before[m][b]:.0f} -> {plan.after[m][b]:.0f}':>{w}}" for m, _, w in _COLUMNS
        ]
        lines.append(" ".join([f"{b:>6}", *cells]))
    return lines


def execute_options(func: click.decorators.FC) -> click.decorators.FC:
    """``--throttle``, ``--max-concurrent-moves`` and ``--timeout`` of a command that moves
    replicas (``strom balance execute``, ``strom cluster remove-broker``)."""
    func = click.option(
        "--timeout",
        type=click.FloatRange(min=0),
        default=3600.0,
        show_default=True,
        help="Seconds to wait for all the moves.",
    )(func)
    func = click.option(
        "--max-concurrent-moves",
        type=click.IntRange(min=1),
        default=5,
        show_default=True,
        help="Partitions moved at a time.",
    )(func)
    return click.option(
        "--throttle",
        type=click.IntRange(min=1),
        default=_DEFAULT_THROTTLE,
        show_default=True,
        help="Replication throttle in bytes/s while the moves run.",
    )(func)


@balance.command("plan")
@_broker_options
@click.option("--json", "as_json", is_flag=True, help="Print the plan as a reassignment JSON.")
@bootstrap_server_option()
@handle_errors
def plan_command(
    *,
    add_brokers: tuple[int, ...],
    remove_brokers: tuple[int, ...],
    as_json: bool,
    bootstrap_server: str,
) -> None:
    """Show the moves that would balance the cluster; nothing is moved.

    \b
    Examples:
      strom balance plan --bootstrap-server 127.0.0.1:9092
      strom balance plan --add-broker 4
      strom balance plan --remove-broker 2 --json > drain.json
    """
    with connect(bootstrap_server) as connection:
        refuse_while_moving(connection)  # replica lists mid-move hold the adding replicas too
        plan = _plan(connection, add_brokers, remove_brokers)
    if as_json:
        click.echo(reassignment_json({m.tp: m.after for m in plan.moves}))
        return
    click.echo(f"goals, in order: {', '.join(GOALS)}")
    click.echo("load: partition sizes and the brokers' last sampled byte rates")
    for move in plan.moves:
        click.echo(
            f"{move.tp.topic}-{move.tp.partition}: {list(move.before)} -> {list(move.after)}"
        )
    click.echo(f"{len(plan.moves)} partition(s) to move, {plan.data_to_move} bytes to copy")
    for line in _table(plan):
        click.echo(line)


@balance.command("execute")
@_broker_options
@execute_options
@bootstrap_server_option()
@handle_errors
def execute_command(
    *,
    add_brokers: tuple[int, ...],
    remove_brokers: tuple[int, ...],
    throttle: int,
    max_concurrent_moves: int,
    timeout: float,
    bootstrap_server: str,
) -> None:
    """Plan, then carry the moves out, throttled, a few at a time, until they are done.

    \b
    Examples:
      strom balance execute --bootstrap-server 127.0.0.1:9092
      strom balance execute --add-broker 4 --throttle 20971520 --max-concurrent-moves 10
    """
    with connect(bootstrap_server) as connection:
        refuse_while_moving(connection)
        plan = _plan(connection, add_brokers, remove_brokers)
        if not plan.moves:
            click.echo("the cluster is balanced: nothing to move")
            return
        click.echo(f"moving {len(plan.moves)} partition(s), {plan.data_to_move} bytes to copy")
        execute_plan(
            connection,
            plan.moves,
            throttle=throttle,
            max_concurrent_moves=max_concurrent_moves,
            timeout=timeout,
            report=click.echo,
        )
    click.echo("balanced")


@balance.command("status")
@bootstrap_server_option()
@handle_errors
def status_command(bootstrap_server: str) -> None:
    """Moves in progress, and each broker's replicas and leaders now.

    \b
    Examples:
      strom balance status --bootstrap-server 127.0.0.1:9092
    """
    with connect(bootstrap_server) as connection:
        ongoing = list_ongoing(connection)
        counts = replica_counts(connection)
    click.echo(f"{len(ongoing)} partition move(s) in progress")
    for tp, move in sorted(ongoing.items()):
        click.echo(
            f"{tp.topic}-{tp.partition}: replicas {list(move.replicas)}, "
            f"adding {list(move.adding)}, removing {list(move.removing)}"
        )
    leaders = Counter({b: c[0] for b, c in counts.items()})
    click.echo(
        json.dumps(
            {
                str(b): {"replicas": c[1], "leaders": leaders[b]}
                for b, c in sorted(counts.items())
                if b >= 0
            }
        )
    )


@balance.command("cancel")
@bootstrap_server_option()
@handle_errors
def cancel_command(bootstrap_server: str) -> None:
    """Stop the moves in progress and remove the replication throttles.

    \b
    Examples:
      strom balance cancel --bootstrap-server 127.0.0.1:9092
    """
    with connect(bootstrap_server) as connection:
        cancelled, lines = cancel_all(connection)
    click.echo(f"cancelled {cancelled} partition move(s)")
    for line in lines:
        click.echo(line)
