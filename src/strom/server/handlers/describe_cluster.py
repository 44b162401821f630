"""DescribeCluster (API key 60), v0 to v2: cluster id, controller and brokers (admin clients).

As Kafka's broker answers it: ``endpoint_type`` (v1+) must be BROKERS (1), CONTROLLERS (2) is
MISMATCHED_ENDPOINT_TYPE (controllers are not reachable on a client listener) and anything else
UNSUPPORTED_ENDPOINT_TYPE; fenced brokers are listed only when ``include_fenced_brokers`` (v2);
the controller id is this node; authorized operations as in Metadata.
"""

from __future__ import annotations

from typing import Final

from kio.schema.describe_cluster.v2 import request as newest
from kio.schema.describe_cluster.v2 import response as latest
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.handlers._schema import for_version
from strom.server.handlers.common import (
    ALL_CLUSTER_OPERATIONS,
    AUTHORIZED_OPERATIONS_OMITTED,
    NO_THROTTLE,
    as_newest,
    broker_addresses,
    request_field,
)
from strom.server.handlers.registry import RequestContext
from strom.server.metadata_view import MetadataView

__all__ = ["DescribeClusterHandler"]

BROKERS_ENDPOINT: Final = 1
CONTROLLERS_ENDPOINT: Final = 2


class DescribeClusterHandler:
    api_key: Final = ApiKey.DESCRIBE_CLUSTER
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DESCRIBE_CLUSTER]

    def __init__(self, metadata: MetadataView, *, cluster_id: str, controller_id: int) -> None:
        self._metadata = metadata
        self._cluster_id = cluster_id
        self._controller_id = controller_id

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.DescribeClusterRequest)
        endpoint_type = int(request_field(request, "endpoint_type", BROKERS_ENDPOINT))
        error, message = ErrorCode.none, None
        if endpoint_type == CONTROLLERS_ENDPOINT:
            error = ErrorCode.mismatched_endpoint_type
            message = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"  # noqa: E501 - Kafka's message
        elif endpoint_type != BROKERS_ENDPOINT:
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
                for address in broker_addresses(self._metadata.image, include_fenced=include_fenced)
            )
        )
        response = latest.DescribeClusterResponse(
            throttle_time=NO_THROTTLE,
            error_code=error,
            error_message=message,
            endpoint_type=i8(BROKERS_ENDPOINT),
            cluster_id=self._cluster_id,
            controller_id=BrokerId(self._controller_id),
            brokers=brokers,
            cluster_authorized_operations=(
                ALL_CLUSTER_OPERATIONS
                if request.include_cluster_authorized_operations
                else AUTHORIZED_OPERATIONS_OMITTED
            ),
        )
        return for_version(response, context.api_version)
