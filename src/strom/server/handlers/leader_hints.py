"""KIP-951's leader hints: where a partition's leader is now, for a client that asked the wrong
broker.

Produce v10+ and Fetch v16+ answers carry, for each partition answered NOT_LEADER_OR_FOLLOWER
(Fetch also FENCED_LEADER_EPOCH), the partition's current leader and leader epoch as this
broker's metadata image has them (``CurrentLeader``), and the endpoints of those leaders on the
listener the request came in on (``NodeEndpoints``). librdkafka 2.4+ and the Java client move
the partition to that leader at once, without a metadata request and its backoff. A leader the
image does not know, or that has no endpoint on the listener, or is fenced, is answered as
known (id and epoch) without an endpoint, as Kafka's ``getCurrentLeader``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from kio.static.primitive import i32

from strom.common import ErrorCode, TopicPartition
from strom.metadata import MetadataImage
from strom.server.api.kio_entities import build
from strom.server.handlers.common import BrokerAddress

__all__ = ["LeaderHints"]

_NO_LEADER = (-1, -1)


class LeaderHints:
    """The hints of one answer: ``current_leader`` per partition, ``node_endpoints`` after."""

    def __init__(
        self, image: MetadataImage, listener_name: str, errors: Collection[ErrorCode]
    ) -> None:
        """``errors``: the partition errors that get a hint."""
        self._image = image
        self._listener_name = listener_name
        self._errors = errors
        self._endpoints: dict[int, BrokerAddress] = {}

    def wanted(self, error: ErrorCode) -> bool:
        """Whether a partition answered ``error`` gets a hint."""
        return error in self._errors

    def current_leader(self, schema: Any, tp: TopicPartition, error: ErrorCode) -> Any:
        """The partition's ``LeaderIdAndEpoch`` of ``schema`` (kio's response module), the
        default (-1, -1) for a partition that gets no hint; notes the leader's endpoint."""
        leader_id, leader_epoch = self._leader(tp) if self.wanted(error) else _NO_LEADER
        return build(
            schema.LeaderIdAndEpoch, leader_id=i32(leader_id), leader_epoch=i32(leader_epoch)
        )

    def node_endpoints(self, schema: Any) -> tuple[Any, ...]:
        """The ``NodeEndpoint`` of each leader hinted so far, by node id."""
        return tuple(
            build(
                schema.NodeEndpoint,
                node_id=i32(address.node_id),
                host=address.host,
                port=i32(address.port),
                rack=address.rack,
            )
            for _, address in sorted(self._endpoints.items())
        )

    def _leader(self, tp: TopicPartition) -> tuple[int, int]:
        registration = self._image.topics.get_partition(tp)
        if registration is None:
            return _NO_LEADER
        leader = registration.leader
        broker = self._image.cluster.broker(leader) if leader >= 0 else None
        endpoint = None if broker is None else broker.endpoint(self._listener_name)
        if broker is not None and endpoint is not None and not broker.fenced:
            self._endpoints[leader] = BrokerAddress(
                leader, endpoint.host, endpoint.port, broker.rack, broker.fenced
            )
        return leader, registration.leader_epoch
