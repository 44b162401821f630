"""DescribeCluster (API key 60), v0 to v2: cluster id, controller and nodes (admin clients).

As Kafka answers it: a broker listener describes brokers (``endpoint_type`` BROKERS, 1), a
controller listener the controllers (CONTROLLERS, 2, what ``bootstrap.controllers`` clients and
brokers that know only ``controller.quorum.bootstrap.servers`` ask); the other type is
MISMATCHED_ENDPOINT_TYPE, anything else UNSUPPORTED_ENDPOINT_TYPE. Fenced brokers are listed
only when ``include_fenced_brokers`` (v2); authorized operations as in Metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kio.schema.describe_cluster.v2 import request as newest
from kio.schema.describe_cluster.v2 import response as latest
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version, request_field
from strom.server.api.throttle import NO_THROTTLE
from strom.server.handlers.common import (
    AUTHORIZED_OPERATIONS_OMITTED,
    BrokerAddress,
    authorized_operations,
)

__all__ = ["DescribeClusterHandler"]

BROKERS_ENDPOINT: Final = 1
CONTROLLERS_ENDPOINT: Final = 2
_NAMES: Final = {BROKERS_ENDPOINT: "BROKER", CONTROLLERS_ENDPOINT: "CONTROLLER"}


class DescribeClusterHandler:
    api_key: Final = ApiKey.DESCRIBE_CLUSTER
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DESCRIBE_CLUSTER]

    def __init__(
        self,
        *,
        cluster_id: str,
        controller_id: Callable[[], int],
        nodes: Callable[[str, bool], list[BrokerAddress]],
        endpoint_type: int = BROKERS_ENDPOINT,
    ) -> None:
        """``nodes(listener_name, include_fenced)``: the nodes this listener describes."""
        self._cluster_id = cluster_id
        self._controller_id = controller_id
        self._nodes = nodes
        self._endpoint_type = endpoint_type

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.DescribeClusterRequest)
        endpoint_type = int(request_field(request, "endpoint_type", BROKERS_ENDPOINT))
        error, message = ErrorCode.none, None
        if endpoint_type in (BROKERS_ENDPOINT, CONTROLLERS_ENDPOINT):
            if endpoint_type != self._endpoint_type:
                error = ErrorCode.mismatched_endpoint_type
                message = (
                    f"The request was sent to an endpoint of type {_NAMES[self._endpoint_type]}, "
                    f"but we wanted an endpoint of type {_NAMES[endpoint_type]}"
                )
        else:
            error = ErrorCode.unsupported_endpoint_type
            message = f"Unsupported endpoint type {endpoint_type}"
        include_fenced = request_field(request, "include_fenced_brokers", False)
        brokers = (
            ()
            if error is not ErrorCode.none
            else tuple(
                latest.DescribeClusterBroker(
                    broker_id=BrokerId(address.node_id),
                    host=address.host,
                    port=i32(address.port),
                    rack=address.rack,
                    is_fenced=address.fenced,
                )
                for address in self._nodes(context.listener_name, include_fenced)
            )
        )
        response = latest.DescribeClusterResponse(
            throttle_time=NO_THROTTLE,
            error_code=error,
            error_message=message,
            endpoint_type=i8(self._endpoint_type),
            cluster_id=self._cluster_id,
            controller_id=BrokerId(self._controller_id()),
            brokers=brokers,
            cluster_authorized_operations=(
                authorized_operations(context, ResourceType.CLUSTER)
                if request.include_cluster_authorized_operations
                else AUTHORIZED_OPERATIONS_OMITTED
            ),
        )
        return for_version(response, context.api_version)
