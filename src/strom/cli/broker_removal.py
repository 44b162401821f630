"""``strom cluster unregister`` and ``strom cluster remove-broker``: a broker leaves the cluster.

``unregister --id ID`` is ``kafka-cluster.sh unregister``: one UnregisterBroker request (the
controller forgets the broker's registration). ``remove-broker ID`` first drains the broker:
the balancer plans every replica off it (refused, with nothing moved, when the other brokers
cannot hold every partition's replication factor and rack spread), the moves run as
``strom balance execute`` runs them (reassignments under replication throttles, a few at a
time), then, once the broker has stopped, it is unregistered. A broker that still runs would
register again with its next heartbeat, so the command waits for it to stop.
"""

from __future__ import annotations

import dataclasses
import time

import click
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.schema.unregister_broker.v0.request import UnregisterBrokerRequest

from strom.balancer import BalanceError, BrokerModel, plan_balance
from strom.cli.balance import execute_options
from strom.cli.balance_executor import execute_plan, load_model, refuse_while_moving
from strom.cli.client_common import CliError, bootstrap_server_option, handle_errors
from strom.cli.quorum_client import Node, connect, describe_cluster
from strom.client.blocking import BrokerConnection

__all__ = ["remove_broker", "unregister"]


def unregister_broker(connection: BrokerConnection, broker_id: int) -> None:
    """UnregisterBroker; a refusal is a :class:`CliError` naming the error code."""
    response = connection.request(UnregisterBrokerRequest(broker_id=BrokerId(broker_id)))
    if response.error_code != ErrorCode.none:
        name = ErrorCode(response.error_code).name.upper()
        message = response.error_message or f"broker {broker_id} was not unregistered"
        raise CliError(f"{name}: {message}")


def _registered(connection: BrokerConnection, broker_id: int) -> Node:
    nodes = {n.node_id: n for n in describe_cluster(connection).nodes}
    if broker_id not in nodes:
        known = ", ".join(map(str, sorted(nodes)))
        raise CliError(f"broker {broker_id} is not registered in the cluster (brokers: {known})")
    return nodes[broker_id]


@click.command("unregister")
@click.option("--id", "broker_id", type=int, required=True, help="The broker to unregister.")
@bootstrap_server_option()
@handle_errors
def unregister(broker_id: int, bootstrap_server: str) -> None:
    """Remove a broker's registration (kafka-cluster.sh unregister); a stopped broker's job.

    \b
    Examples:
      strom cluster unregister --id 4 --bootstrap-server 127.0.0.1:9092
    """
    with connect(bootstrap_server) as connection:
        unregister_broker(connection, broker_id)
    click.echo(f"broker {broker_id} unregistered")


@click.command("remove-broker")
@click.argument("broker_id", metavar="ID", type=int)
@execute_options
@bootstrap_server_option()
@handle_errors
def remove_broker(
    *,
    broker_id: int,
    throttle: int,
    max_concurrent_moves: int,
    timeout: float,
    bootstrap_server: str,
) -> None:
    """Move every replica off broker ID, wait for it to stop, then unregister it.

    \b
    Examples:
      strom cluster remove-broker 4 --bootstrap-server 127.0.0.1:9092
      strom cluster remove-broker 4 --throttle 20971520 --max-concurrent-moves 10
    """
    deadline = time.monotonic() + timeout
    with connect(bootstrap_server) as connection:
        node = _registered(connection, broker_id)
        others = [
            n for n in describe_cluster(connection).nodes if n.node_id != broker_id and not n.fenced
        ]
    if not others:
        raise CliError(f"broker {broker_id} is the only running broker: nothing can take its data")
    # The rest goes through another broker: this one stops before it is unregistered.
    with connect(f"{others[0].host}:{others[0].port}") as connection:
        refuse_while_moving(connection)
        model = load_model(connection)
        if broker_id not in model.by_id:  # fenced: not in Metadata, still in replica lists
            brokers = (*model.brokers, BrokerModel(broker_id, rack=node.rack))
            model = dataclasses.replace(model, brokers=brokers)
        try:
            plan = plan_balance(model, remove_brokers=frozenset({broker_id}))
        except BalanceError as error:
            raise CliError(str(error)) from None
        click.echo(
            f"moving {len(plan.moves)} partition(s) off broker {broker_id}, "
            f"{plan.data_to_move} bytes to copy"
        )
        if plan.moves:
            execute_plan(
                connection,
                plan.moves,
                throttle=throttle,
                max_concurrent_moves=max_concurrent_moves,
                timeout=max(deadline - time.monotonic(), 0),
                report=click.echo,
            )
        _wait_stopped(connection, broker_id, deadline, timeout)
        unregister_broker(connection, broker_id)
    click.echo(f"broker {broker_id} unregistered")


def _wait_stopped(
    connection: BrokerConnection, broker_id: int, deadline: float, timeout: float
) -> None:
    """Until the broker is fenced (stopped) or gone."""
    told = False
    while not _registered(connection, broker_id).fenced:
        if not told:
            click.echo(f"broker {broker_id} holds no replicas; waiting for it to be shut down")
            told = True
        if time.monotonic() > deadline:
            raise CliError(
                f"broker {broker_id} still runs after {timeout:g} s: shut it down, then run "
                f"strom cluster unregister --id {broker_id}"
            )
        time.sleep(0.5)
