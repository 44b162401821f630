"""Replication throttles for a reassignment, as ``kafka-reassign-partitions.sh --throttle``
sets them and ``--verify`` removes them (IncrementalAlterConfigs over strom's own client).

For the partitions a plan moves: ``leader.replication.throttled.replicas`` names their current
replicas (any of them may be the leader the new replicas copy from) and
``follower.replication.throttled.replicas`` the replicas being added; every broker involved
gets ``leader.replication.throttled.rate`` and ``follower.replication.throttled.rate``. Only
replicas out of the ISR are slowed (:mod:`strom.server.replica.replication_quota`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kio.schema.errors import ErrorCode
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.static.primitive import i8

from strom.cli.client_common import CliError
from strom.cli.reassignments import Assignment
from strom.client.blocking import BrokerConnection

__all__ = ["THROTTLED_REPLICAS", "THROTTLE_RATES", "clear_throttles", "set_throttles"]

THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
THROTTLED_REPLICAS = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
_TOPIC, _BROKER = i8(2), i8(4)
_SET, _DELETE = i8(0), i8(1)


def throttled_replicas(current: Assignment, plan: Assignment) -> dict[str, tuple[str, str]]:
    """Per topic with a moving partition: its leader and follower throttled replica lists."""
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    for tp, target in sorted(plan.items()):
        now = current.get(tp, ())
        if tuple(target) == tuple(now):
            continue
        leaders.setdefault(tp.topic, []).extend(f"{tp.partition}:{b}" for b in now)
        added = [f"{tp.partition}:{b}" for b in target if b not in now]
        followers.setdefault(tp.topic, []).extend(added)
    return {
        topic: (",".join(leaders[topic]), ",".join(followers.get(topic, []))) for topic in leaders
    }


def set_throttles(
    connection: BrokerConnection, current: Assignment, plan: Assignment, rate: int
) -> list[str]:
    """Throttle the moves of ``plan`` at ``rate`` bytes/s; the lines to tell the user."""
    topics = throttled_replicas(current, plan)
    brokers = sorted({b for tp, target in plan.items() for b in (*current.get(tp, ()), *target)})
    resources = [
        _resource(_TOPIC, topic, dict(zip(THROTTLED_REPLICAS, lists, strict=True)))
        for topic, lists in topics.items()
    ]
    resources += [
        _resource(_BROKER, str(b), dict.fromkeys(THROTTLE_RATES, str(rate))) for b in brokers
    ]
    _alter(connection, resources)
    return [
        "Warning: You must run --verify periodically, until the reassignment completes, "
        "to ensure the throttle is removed.",
        f"The inter-broker throttle limit was set to {rate} B/s",
    ]


def clear_throttles(
    connection: BrokerConnection, topics: Iterable[str], brokers: Iterable[int]
) -> list[str]:
    """Remove the throttles of a finished move; the lines to tell the user."""
    topic_list, broker_list = sorted(set(topics)), sorted(set(brokers))
    resources = [_resource(_TOPIC, t, dict.fromkeys(THROTTLED_REPLICAS)) for t in topic_list]
    resources += [_resource(_BROKER, str(b), dict.fromkeys(THROTTLE_RATES)) for b in broker_list]
    _alter(connection, resources)
    return [
        f"Clearing broker-level throttles on brokers {','.join(map(str, broker_list))}",
        f"Clearing topic-level throttles on topics {','.join(topic_list)}",
    ]


def _resource(kind: i8, name: str, values: Mapping[str, str | None]) -> AlterConfigsResource:
    """SET each name to its value, or DELETE it where the value is None."""
    return AlterConfigsResource(
        resource_type=kind,
        resource_name=name,
        configs=tuple(
            AlterableConfig(
                name=key, config_operation=_DELETE if value is None else _SET, value=value
            )
            for key, value in values.items()
        ),
    )


def _alter(connection: BrokerConnection, resources: list[AlterConfigsResource]) -> None:
    if not resources:
        return
    response = connection.request(
        IncrementalAlterConfigsRequest(resources=tuple(resources), validate_only=False)
    )
    for answer in response.responses:
        if answer.error_code != ErrorCode.none:
            kind = "topic" if answer.resource_type == _TOPIC else "broker"
            reason = answer.error_message or answer.error_code.name
            raise CliError(f"cannot set throttles on {kind} {answer.resource_name}: {reason}")
