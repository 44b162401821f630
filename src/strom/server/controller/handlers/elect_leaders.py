"""ElectLeaders (API key 43), v0 to v2: preferred or unclean leader elections
(``kafka-leader-election.sh``, the admin clients' ``elect_leaders``).

The controller decides each partition (``strom.controller.leadership``) and writes the changes;
the answer comes once they are committed. v0 has no election type: it is a preferred election.
Asked for every partition (a null list), the answer leaves out those that needed no election,
as Kafka's does.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Final, Protocol

from kio.schema.elect_leaders.v2 import request as newest
from kio.schema.elect_leaders.v2 import response as latest
from kio.schema.types import TopicName
from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, TopicPartition
from strom.controller import ApiError, ElectionResult, ElectionType, ElectLeadersRequest
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version, request_field
from strom.server.api.throttle import NO_THROTTLE

__all__ = ["ElectLeadersHandler", "error_response", "parse_elect_leaders"]

log = logging.getLogger(__name__)


def parse_elect_leaders(body: object) -> ElectLeadersRequest:
    request = as_newest(body, newest.ElectLeadersRequest)
    election_type = ElectionType(int(request_field(body, "election_type", 0)))
    if request.topic_partitions is None:
        return ElectLeadersRequest(election_type, None)
    return ElectLeadersRequest(
        election_type,
        [
            TopicPartition(str(topic.topic), int(partition))
            for topic in request.topic_partitions
            for partition in topic.partitions
        ],
    )


class LeaderElector(Protocol):
    """What ElectLeaders needs of the controller."""

    async def elect_leaders(self, request: ElectLeadersRequest) -> list[ElectionResult]:
        """ElectLeaders over the quorum; raises NotControllerError."""
        ...


class ElectLeadersHandler:
    api_key: Final = ApiKey.ELECT_LEADERS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.ELECT_LEADERS]

    def __init__(self, controller: LeaderElector) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = parse_elect_leaders(context.body)
        results = await self._controller.elect_leaders(request)
        elected = [r.partition for r in results if r.error.is_success]
        if elected:
            log.info(
                "%s election from %s: new leaders for %s",
                request.election_type.name.lower(),
                context.client_address,
                ", ".join(f"{tp.topic}-{tp.partition}" for tp in elected),
            )
        return _response(context, results)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """Every partition of the request refused with ``code`` (the controller was not reached)."""
    request = parse_elect_leaders(context.body)
    return _response(
        context, [ElectionResult(tp, ApiError(code)) for tp in request.partitions or ()]
    )


def _response(context: RequestContext, results: list[ElectionResult]) -> ResponsePayload:
    by_topic: defaultdict[str, list[ElectionResult]] = defaultdict(list)
    for result in results:
        by_topic[result.partition.topic].append(result)
    response = latest.ElectLeadersResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        replica_election_results=tuple(
            latest.ReplicaElectionResult(
                topic=TopicName(topic),
                partition_result=tuple(
                    latest.PartitionResult(
                        partition_id=i32(result.partition.partition),
                        error_code=result.error.code,
                        error_message=result.error.message if result.error.is_failure else None,
                    )
                    for result in topic_results
                ),
            )
            for topic, topic_results in by_topic.items()
        ),
    )
    return for_version(response, context.api_version)
