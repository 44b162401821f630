"""strom's own tagged fields on two APIs, redeclared over kio's classes (KIP-482 tagged fields).

The balancer's load (each replica's size and byte rates, ``strom.balancer.load``) travels in
fields only strom sends and reads, so that no Kafka client ever meets one:

* BrokerHeartbeat v1 request (controller-facing only): ``PartitionLoads`` (tag 10000), the
  broker's latest sample, sent to the active controller.
* DescribeLogDirs v4: the request's ``IncludePartitionLoads`` (tag 10000) asks for the same
  sample, and only then does the response carry ``PartitionLoads`` (tag 10000); ``strom balance``
  asks, Kafka's clients never do and get kio's answer, byte for byte.

strom's tags start at 10000, far above the ones Kafka numbers from 0 in its specs. Kafka skips
tags it does not know; kio refuses them, so the servers decode these two requests with the
classes here (``strom.protocol.api.request_type``), which read kio's fields and strom's.

kio builds its readers from the dataclasses' real type annotations, so this module must not use
``from __future__ import annotations``.
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.broker_heartbeat.v1 import request as heartbeat
from kio.schema.describe_log_dirs.v4 import request as log_dirs_request
from kio.schema.describe_log_dirs.v4 import response as log_dirs_response
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.static.constants import EntityType
from kio.static.primitive import f64, i16, i32, i32Timedelta, i64

__all__ = [
    "STROM_REQUEST_TYPES",
    "BrokerHeartbeatRequest",
    "DescribeLogDirsRequest",
    "DescribeLogDirsResponse",
    "PartitionLoad",
]

STROM_TAG = 10000


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionLoad:
    """One replica: its size in bytes, and the bytes per second appended to it as the leader
    and sent from it to consumers over the broker's last sampling interval. The same struct in
    both APIs (its ``__api_key__`` names the heartbeat's; kio reads and writes nested structs by
    their fields alone)."""

    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(63)
    topic: str = field(metadata={"kafka_type": "string"})
    partition: i32 = field(metadata={"kafka_type": "int32"})
    size: i64 = field(metadata={"kafka_type": "int64"})
    bytes_in_rate: f64 = field(metadata={"kafka_type": "float64"})
    bytes_out_rate: f64 = field(metadata={"kafka_type": "float64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerHeartbeatRequest:
    """kio's BrokerHeartbeat v1 request and strom's ``partition_loads``."""

    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(63)
    __header_schema__: ClassVar = heartbeat.BrokerHeartbeatRequest.__header_schema__
    broker_id: BrokerId = field(metadata={"kafka_type": "int32"})
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    current_metadata_offset: i64 = field(metadata={"kafka_type": "int64"})
    want_fence: bool = field(metadata={"kafka_type": "bool"})
    want_shut_down: bool = field(metadata={"kafka_type": "bool"})
    offline_log_dirs: tuple[uuid.UUID | None, ...] = field(
        metadata={"kafka_type": "uuid", "tag": 0}, default=()
    )
    partition_loads: tuple[PartitionLoad, ...] = field(metadata={"tag": STROM_TAG}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsRequest:
    """kio's DescribeLogDirs v4 request and strom's ``include_partition_loads``."""

    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(35)
    __header_schema__: ClassVar = log_dirs_request.DescribeLogDirsRequest.__header_schema__
    topics: tuple[log_dirs_request.DescribableLogDirTopic, ...] | None
    include_partition_loads: bool = field(
        metadata={"kafka_type": "bool", "tag": STROM_TAG}, default=False
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsResponse:
    """kio's DescribeLogDirs v4 response and strom's ``partition_loads`` (only when asked)."""

    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(35)
    __header_schema__: ClassVar = log_dirs_response.DescribeLogDirsResponse.__header_schema__
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    results: tuple[log_dirs_response.DescribeLogDirsResult, ...]
    partition_loads: tuple[PartitionLoad, ...] = field(metadata={"tag": STROM_TAG}, default=())


STROM_REQUEST_TYPES: dict[tuple[int, int], type] = {
    (63, 1): BrokerHeartbeatRequest,
    (35, 4): DescribeLogDirsRequest,
}
"""(API key, version) -> the class a strom server decodes that request with."""
