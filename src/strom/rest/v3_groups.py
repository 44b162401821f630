"""v3's consumer groups: list, describe, their consumers and assignments, and their lag per
partition and in summary (committed offsets against the partitions' log end offsets)."""

from __future__ import annotations

from typing import Any

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.rest.context import ProxyContext
from strom.rest.errors import from_kafka, not_found
from strom.rest.gateway import result
from strom.rest.resources import Lag, Links, Member
from strom.web.http import json_response

__all__ = ["group_routes"]

_LATEST = OffsetSpec.latest()  # type: ignore[no-untyped-call]
_STATES = {
    ConsumerGroupState.PREPARING_REBALANCING: "PREPARING_REBALANCE",
    ConsumerGroupState.COMPLETING_REBALANCING: "COMPLETING_REBALANCE",
}


def _state(state: ConsumerGroupState) -> str:
    return _STATES.get(state, state.name)


def _members(described: Any) -> list[tuple[Member, list[tuple[str, int]]]]:
    return [
        (
            Member(m.member_id, m.group_instance_id, m.client_id),
            [(tp.topic, tp.partition) for tp in m.assignment.topic_partitions],
        )
        for m in described.members
    ]


def group_routes(context: ProxyContext) -> list[Route]:
    async def _describe(request: Request, group: str) -> Any:
        futures = context.admin(request).describe_consumer_groups([group])
        try:
            described = await result(futures[group])
        except KafkaException as error:
            raise from_kafka(error) from error
        if described.state == ConsumerGroupState.DEAD:
            raise not_found(f"Consumer group {group} could not be found.")
        return described

    def _group(links: Links, described: Any) -> dict[str, object]:
        coordinator = described.coordinator
        return links.group(
            described.group_id,
            simple=described.is_simple_consumer_group,
            assignor=described.partition_assignor,
            state=_state(described.state),
            coordinator=None if coordinator is None else coordinator.id,
        )

    async def groups(request: Request) -> Response:
        links = await context.links(request)
        try:
            listed = await result(context.admin(request).list_consumer_groups())
        except KafkaException as error:
            raise from_kafka(error) from error
        names = sorted(g.group_id for g in listed.valid)
        data = [_group(links, await _describe(request, name)) for name in names]
        return json_response(links.collection("KafkaConsumerGroupList", "consumer-groups", data))

    async def group(request: Request) -> Response:
        links = await context.links(request)
        described = await _describe(request, request.path_params["consumer_group_id"])
        return json_response(_group(links, described))

    async def consumers(request: Request) -> Response:
        links = await context.links(request)
        name = request.path_params["consumer_group_id"]
        described = await _describe(request, name)
        data = (links.consumer(name, member) for member, _ in _members(described))
        path = f"consumer-groups/{name}/consumers"
        return json_response(links.collection("KafkaConsumerList", path, data))

    async def consumer(request: Request) -> Response:
        links = await context.links(request)
        name = request.path_params["consumer_group_id"]
        wanted = request.path_params["consumer_id"]
        for member, _ in _members(await _describe(request, name)):
            if member.consumer_id == wanted:
                return json_response(links.consumer(name, member))
        raise not_found(f"Consumer {wanted} cannot be found.")

    async def _lags(request: Request) -> tuple[Links, str, list[Lag]]:
        links = await context.links(request)
        name = request.path_params["consumer_group_id"]
        described = await _describe(request, name)
        owners = {tp: member for member, tps in _members(described) for tp in tps}
        admin = context.admin(request)
        try:
            committed = await result(
                admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(name)])[name]
            )
            offsets = {
                (tp.topic, tp.partition): tp.offset
                for tp in committed.topic_partitions
                if tp.offset >= 0
            }
            ends = (
                admin.list_offsets({KafkaTopicPartition(t, p): _LATEST for t, p in offsets})
                if offsets
                else {}
            )
            lags = []
            for tp, future in ends.items():
                key = (tp.topic, tp.partition)
                end = (await result(future)).offset
                lags.append(
                    Lag(tp.topic, tp.partition, offsets[key], end, owners.get(key, Member()))
                )
        except KafkaException as error:
            raise from_kafka(error) from error
        lags.sort(key=lambda lag: (lag.topic, lag.partition))
        return links, name, lags

    async def lags(request: Request) -> Response:
        links, name, found = await _lags(request)
        data = (links.lag(name, lag) for lag in found)
        path = f"consumer-groups/{name}/lags"
        return json_response(links.collection("KafkaConsumerLagList", path, data))

    async def lag(request: Request) -> Response:
        links, name, found = await _lags(request)
        topic = request.path_params["topic_name"]
        partition = request.path_params["partition_id"]
        for one in found:
            if (one.topic, str(one.partition)) == (topic, partition):
                return json_response(links.lag(name, one))
        raise not_found(f"Consumer lag for {topic}-{partition} cannot be found.")

    async def lag_summary(request: Request) -> Response:
        links, name, found = await _lags(request)
        return json_response(links.lag_summary(name, found))

    g = "/v3/clusters/{cluster_id}/consumer-groups"
    return [
        Route(g, groups),
        Route(f"{g}/{{consumer_group_id}}", group),
        Route(f"{g}/{{consumer_group_id}}/consumers", consumers),
        Route(f"{g}/{{consumer_group_id}}/consumers/{{consumer_id}}", consumer),
        Route(f"{g}/{{consumer_group_id}}/lags", lags),
        Route(f"{g}/{{consumer_group_id}}/lags/{{topic_name}}/partitions/{{partition_id}}", lag),
        Route(f"{g}/{{consumer_group_id}}/lag-summary", lag_summary),
    ]
