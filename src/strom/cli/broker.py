"""``strom broker decommission ID``: move every replica off a broker before it is retired.

Each partition with a replica on the broker gets a new replica list: the broker replaced by the
live broker (not yet a replica of that partition) that holds the fewest replicas, leadership
order kept. The moves start together (AlterPartitionReassignments); the command then shows
progress until none is left (ListPartitionReassignments), or gives up after ``--timeout``
(the moves go on; ``strom partitions reassign --list`` shows them).
"""

from __future__ import annotations

import time
from collections import Counter

import click

from strom.cli.client_common import CliError, bootstrap_server_option, handle_errors
from strom.cli.quorum_client import connect
from strom.cli.reassignments import Assignment, alter, current_assignment, list_ongoing

__all__ = ["broker", "plan_decommission"]


@click.group("broker")
def broker() -> None:
    """Operate on one broker of the cluster."""


def plan_decommission(current: Assignment, brokers: list[int], victim: int) -> Assignment:
    """The new replica list of each partition with a replica on ``victim``."""
    others = [b for b in brokers if b != victim]
    load = Counter(b for replicas in current.values() for b in replicas if b != victim)
    plan: Assignment = {}
    for tp, replicas in current.items():
        if victim not in replicas:
            continue
        candidates = [b for b in others if b not in replicas]
        if not candidates:
            raise CliError(
                f"{tp.topic}-{tp.partition} has {len(replicas)} replicas and there are only "
                f"{len(others)} other brokers: add a broker first"
            )
        chosen = min(candidates, key=lambda b: (load[b], b))
        load[chosen] += 1
        plan[tp] = tuple(chosen if b == victim else b for b in replicas)
    return plan


@broker.command("decommission")
@click.argument("broker_id", type=click.IntRange(min=0), metavar="ID")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=600.0,
    show_default=True,
    help="Seconds to wait for the moves to finish.",
)
@bootstrap_server_option()
@handle_errors
def decommission(broker_id: int, timeout: float, bootstrap_server: str) -> None:
    """Move every replica off broker ID, showing progress until it holds none.

    \b
    Examples:
      strom broker decommission 3 --bootstrap-server 127.0.0.1:9092
    """
    with connect(bootstrap_server) as connection:
        current, brokers = current_assignment(connection, include_internal=True)
        if broker_id not in brokers:
            raise CliError(f"broker {broker_id} is not a live broker of the cluster")
        plan = plan_decommission(current, sorted(brokers), broker_id)
        if not plan:
            click.echo(f"broker {broker_id} holds no replica")
            return
        failed = {tp: e for tp, e in alter(connection, plan).items() if e is not None}
        if failed:
            tp, error = next(iter(failed.items()))
            raise CliError(f"cannot move {tp.topic}-{tp.partition}: {error}")
        click.echo(f"moving {len(plan)} replica(s) off broker {broker_id}")
        deadline = time.monotonic() + timeout
        last = -1
        while True:
            ongoing = len(set(list_ongoing(connection)) & set(plan))
            if ongoing != last:
                click.echo(f"{len(plan) - ongoing} of {len(plan)} moved")
                last = ongoing
            if not ongoing:
                break
            if time.monotonic() > deadline:
                raise CliError(
                    f"{ongoing} move(s) still going after {timeout:g} s; "
                    "see strom partitions reassign --list"
                )
            time.sleep(0.5)
    click.echo(f"broker {broker_id} holds no replica; it can be stopped")
