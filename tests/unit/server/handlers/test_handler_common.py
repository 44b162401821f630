"""One response shape for every version: converting kio entities between versions."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.describe_cluster.v0 import request as cluster_request_v0
from kio.schema.describe_cluster.v0 import response as describe_cluster_v0
from kio.schema.describe_cluster.v2 import request as cluster_request_v2
from kio.schema.describe_cluster.v2 import response as describe_cluster_v2
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v8 import response as metadata_v8
from kio.schema.metadata.v13 import response as metadata_v13
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i32Timedelta

from strom.server.api.kio_entities import convert, for_version
from strom.server.handlers.common import ALL_CLUSTER_OPERATIONS, ALL_TOPIC_OPERATIONS, wire_uuid

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


def newest_cluster() -> describe_cluster_v2.DescribeClusterResponse:
    return describe_cluster_v2.DescribeClusterResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        endpoint_type=i8(1),
        cluster_id="c",
        controller_id=BrokerId(1),
        brokers=(
            describe_cluster_v2.DescribeClusterBroker(
                broker_id=BrokerId(1), host="h", port=i32(9092), is_fenced=False
            ),
        ),
    )


def test_older_versions_drop_newer_fields_nested_too() -> None:
    older = for_version(newest_cluster(), 0)
    assert isinstance(older, describe_cluster_v0.DescribeClusterResponse)
    (broker,) = older.brokers
    assert isinstance(broker, describe_cluster_v0.DescribeClusterBroker)
    assert not hasattr(broker, "is_fenced")
    assert for_version(newest_cluster(), 2) == newest_cluster()


def test_fields_only_older_versions_have_come_from_extra() -> None:
    newest = metadata_v13.MetadataResponse(
        throttle_time=NO_THROTTLE, brokers=(), topics=(), error_code=ErrorCode.none
    )
    older = convert(
        newest, metadata_v8.MetadataResponse, extra={"cluster_authorized_operations": i32(5)}
    )
    assert older.cluster_authorized_operations == 5
    assert for_version(newest, 13, extra={"cluster_authorized_operations": i32(5)}) == newest


def test_a_required_field_nobody_supplies_is_a_bug() -> None:
    with pytest.raises(TypeError, match="include_fenced_brokers has no default"):
        convert(
            cluster_request_v0.DescribeClusterRequest(include_cluster_authorized_operations=False),
            cluster_request_v2.DescribeClusterRequest,
        )


def test_wire_uuid_and_operations() -> None:
    assert wire_uuid(uuid.UUID(int=0)) is None
    assert wire_uuid(None) is None
    topic_id = uuid.uuid4()
    assert wire_uuid(topic_id) == topic_id
    # READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
    assert ALL_TOPIC_OPERATIONS == 0b1101_1111_1000
    # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
    assert ALL_CLUSTER_OPERATIONS == 0b1_1111_1010_0000
