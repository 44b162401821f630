"""The I/O around :mod:`strom.balancer` for ``strom balance``: the cluster's model (Metadata
for replicas and racks, DescribeLogDirs on every broker for the load) and the execution of a
plan as partition reassignments, a bounded number at a time, under replication throttles
(``strom partitions reassign --throttle``'s), removed at the end.

Load: each broker answers DescribeLogDirs with its latest load sample when asked in strom's
tagged field (``strom.protocol.strom_fields``): the sizes of its replicas and the byte rates of
the partitions it led over its last ``strom.balancer.metrics.reporter.interval.ms``, the same
sample it reports to the controller; they are combined as the controller combines them
(``strom.balancer.load.partition_loads``).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Sequence
from typing import Any

from kio.schema.elect_leaders.v2 import request as elect_wire
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.static.primitive import i8, i32, i32Timedelta

from strom.balancer import BrokerModel, ClusterModel, Move, PartitionModel
from strom.balancer.load import ReplicaLoad, partition_loads, with_loads
from strom.cli.client_common import CliError
from strom.cli.quorum_client import connect, describe_cluster
from strom.cli.reassignments import Assignment, alter, current_assignment, list_ongoing
from strom.cli.throttles import clear_throttles, set_throttles
from strom.client.blocking import BrokerConnection
from strom.common import TopicPartition
from strom.protocol.strom_fields import DescribeLogDirsRequest, DescribeLogDirsResponse

__all__ = ["cancel_all", "execute_plan", "load_model", "refuse_while_moving"]

_METADATA_LAG_S = 5.0


def load_model(connection: BrokerConnection) -> ClusterModel:
    """The live brokers with their racks, and every partition with its replicas and load."""
    current, racks = current_assignment(connection, include_internal=True)
    nodes = [n for n in describe_cluster(connection).nodes if not n.fenced]
    samples: list[ReplicaLoad] = []
    for node in nodes:
        with connect(f"{node.host}:{node.port}") as broker:
            samples += _replica_loads(broker)
    brokers = tuple(BrokerModel(b, rack=racks[b]) for b in sorted(racks))
    partitions = (PartitionModel(tp, replicas) for tp, replicas in current.items())
    return ClusterModel(brokers, with_loads(partitions, partition_loads(samples)))


def _replica_loads(connection: BrokerConnection) -> list[ReplicaLoad]:
    """The broker's replicas with their sizes now and its last sample's byte rates."""
    try:
        response: DescribeLogDirsResponse = connection.request(
            DescribeLogDirsRequest(topics=None, include_partition_loads=True),
            response_type=DescribeLogDirsResponse,
        )
    except OSError as error:
        raise CliError(f"DescribeLogDirs failed: {error}") from None
    if response.error_code != ErrorCode.none:
        raise CliError(f"{ErrorCode(response.error_code).name.upper()}: DescribeLogDirs refused")
    rates = {
        TopicPartition(load.topic, int(load.partition)): load for load in response.partition_loads
    }
    loads = []
    for result in response.results:
        for topic in result.topics:
            for p in topic.partitions:
                if p.is_future_key:
                    continue
                tp = TopicPartition(str(topic.name), int(p.partition_index))
                rate = rates.get(tp)
                loads.append(
                    ReplicaLoad(
                        tp,
                        int(p.partition_size),
                        0.0 if rate is None else float(rate.bytes_in_rate),
                        0.0 if rate is None else float(rate.bytes_out_rate),
                    )
                )
    return loads


def refuse_while_moving(connection: BrokerConnection) -> None:
    """Refuse to plan while partition reassignments are in progress."""
    if list_ongoing(connection):
        raise CliError(
            "partition reassignments are already in progress: wait for them "
            "(strom balance status) or stop them (strom balance cancel)"
        )


def execute_plan(
    connection: BrokerConnection,
    moves: Sequence[Move],
    *,
    throttle: int | None,
    max_concurrent_moves: int,
    timeout: float,
    report: Callable[[str], None],
) -> None:
    """Start the moves ``max_concurrent_moves`` at a time, each batch once the previous one is
    done; throttled while they run. Stops (``CliError``) when a move was cancelled meanwhile."""
    current: Assignment = {m.tp: m.before for m in moves}
    target: Assignment = {m.tp: m.after for m in moves}
    brokers = sorted({b for m in moves for b in (*m.before, *m.after)})
    if throttle is not None:
        for line in set_throttles(connection, current, target, throttle):
            report(line)
    deadline = time.monotonic() + timeout
    try:
        for start in range(0, len(moves), max_concurrent_moves):
            batch = {m.tp: m.after for m in moves[start : start + max_concurrent_moves]}
            failed = {tp: e for tp, e in alter(connection, batch).items() if e is not None}
            if failed:
                tp, error = min(failed.items())
                raise CliError(f"cannot move {tp.topic}-{tp.partition}: {error}")
            _wait(connection, batch, deadline, timeout)
            report(f"{min(start + len(batch), len(moves))} of {len(moves)} moves done")
        _elect_preferred(connection, [m.tp for m in moves if m.leader_changed], report)
    finally:
        if throttle is not None:
            for line in clear_throttles(connection, {m.tp.topic for m in moves}, brokers):
                report(line)


def _wait(connection: BrokerConnection, batch: Assignment, deadline: float, timeout: float) -> None:
    """Until every move of ``batch`` is done; a move no longer in progress whose partition does
    not reach its target within ``_METADATA_LAG_S`` (the broker asked learns of it a moment
    after the controller) was cancelled."""
    settled: float | None = None
    while True:
        now = time.monotonic()
        if set(list_ongoing(connection)) & set(batch):
            settled = None
        else:
            topics = {tp.topic for tp in batch}
            replicas, _ = current_assignment(connection, topics, include_internal=True)
            undone = sorted(tp for tp, target in batch.items() if replicas.get(tp) != target)
            if not undone:
                return
            settled = now if settled is None else settled
            if now - settled > _METADATA_LAG_S:
                tp = undone[0]
                raise CliError(f"the move of {tp.topic}-{tp.partition} was cancelled; stopping")
        if now > deadline:
            raise CliError(
                f"moves still going after {timeout:g} s; see strom balance status "
                "(strom balance cancel stops them)"
            )
        time.sleep(0.2)


def _elect_preferred(
    connection: BrokerConnection, partitions: list[TopicPartition], report: Callable[[str], None]
) -> None:
    """Move leadership to each moved partition's first replica (ElectLeaders, preferred)."""
    if not partitions:
        return
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    response: Any = connection.request(
        elect_wire.ElectLeadersRequest(
            election_type=i8(0),
            topic_partitions=tuple(
                elect_wire.TopicPartitions(topic=TopicName(t), partitions=tuple(map(i32, ps)))
                for t, ps in sorted(by_topic.items())
            ),
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        )
    )
    failed = [
        f"{result.topic}-{p.partition_id}"
        for result in response.replica_election_results
        for p in result.partition_result
        if p.error_code not in (ErrorCode.none, ErrorCode.election_not_needed)
    ]
    report(f"preferred leaders elected for {len(partitions) - len(failed)} partition(s)")
    if failed:
        report(
            f"leadership not moved yet (the controller's auto leader balancing will): "
            f"{', '.join(failed)}"
        )


def cancel_all(connection: BrokerConnection) -> tuple[int, list[str]]:
    """Cancel every ongoing reassignment and remove every replication throttle."""
    ongoing = list_ongoing(connection)
    if ongoing:
        alter(connection, dict.fromkeys(ongoing))
    current, brokers = current_assignment(connection, include_internal=True)
    lines = clear_throttles(connection, {tp.topic for tp in current}, brokers)
    return len(ongoing), lines
