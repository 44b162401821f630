"""Admin and metadata requests of any version, built once at the newest version and converted."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kio.schema.alter_configs.v2 import request as alter_configs
from kio.schema.create_partitions.v3 import request as create_partitions
from kio.schema.create_topics.v7 import request as create_topics
from kio.schema.delete_topics.v6 import request as delete_topics
from kio.schema.describe_cluster.v2 import request as describe_cluster
from kio.schema.describe_configs.v4 import request as describe_configs
from kio.schema.describe_log_dirs.v4 import request as describe_log_dirs
from kio.schema.incremental_alter_configs.v1 import request as incremental
from kio.schema.init_producer_id.v5 import request as init_producer_id
from kio.schema.metadata.v13 import request as metadata
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.static.primitive import i8, i16, i32, i32Timedelta

from strom.protocol.api import ApiKey, request_type
from strom.server.api.kio_entities import convert

TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=30))
ZERO = uuid.UUID(int=0)


def at_version(newest: Any, version: int, **extra: object) -> Any:
    return convert(newest, request_type(int(newest.__api_key__), version), extra=extra)


def metadata_request(
    version: int,
    names: Sequence[str] | None = (),
    *,
    ids: Sequence[uuid.UUID] = (),
    allow_auto_topic_creation: bool = True,
    authorized_operations: bool = False,
) -> Any:
    topics: tuple[metadata.MetadataRequestTopic, ...] | None = None
    if names is not None:
        topics = tuple(
            metadata.MetadataRequestTopic(topic_id=ZERO, name=TopicName(n)) for n in names
        ) + tuple(metadata.MetadataRequestTopic(topic_id=i, name=None) for i in ids)
    newest = metadata.MetadataRequest(
        topics=topics,
        allow_auto_topic_creation=allow_auto_topic_creation,
        include_topic_authorized_operations=authorized_operations,
    )
    return at_version(newest, version, include_cluster_authorized_operations=authorized_operations)


def create_topics_request(
    version: int,
    topics: Iterable[tuple[str, int, int, Mapping[str, str]]],
    *,
    validate_only: bool = False,
) -> Any:
    newest = create_topics.CreateTopicsRequest(
        topics=tuple(
            create_topics.CreatableTopic(
                name=TopicName(name),
                num_partitions=i32(partitions),
                replication_factor=i16(replication),
                assignments=(),
                configs=tuple(
                    create_topics.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()
                ),
            )
            for name, partitions, replication, configs in topics
        ),
        timeout=TIMEOUT,
        validate_only=validate_only,
    )
    return at_version(newest, version)


def delete_topics_request(
    version: int, names: Sequence[str] = (), ids: Sequence[uuid.UUID] = ()
) -> Any:
    newest = delete_topics.DeleteTopicsRequest(
        topics=tuple(
            delete_topics.DeleteTopicState(name=TopicName(n), topic_id=ZERO) for n in names
        )
        + tuple(delete_topics.DeleteTopicState(name=None, topic_id=i) for i in ids),
        timeout=TIMEOUT,
    )
    if version >= 6:
        return at_version(newest, version)
    older: Any = request_type(ApiKey.DELETE_TOPICS, version)
    return older(topic_names=tuple(TopicName(n) for n in names), timeout=TIMEOUT)


def create_partitions_request(version: int, name: str, count: int) -> Any:
    newest = create_partitions.CreatePartitionsRequest(
        topics=(
            create_partitions.CreatePartitionsTopic(
                name=TopicName(name), count=i32(count), assignments=None
            ),
        ),
        timeout=TIMEOUT,
        validate_only=False,
    )
    return at_version(newest, version)


def describe_configs_request(
    version: int,
    resources: Iterable[tuple[int, str, Sequence[str] | None]],
    *,
    synonyms: bool = False,
    documentation: bool = False,
) -> Any:
    newest = describe_configs.DescribeConfigsRequest(
        resources=tuple(
            describe_configs.DescribeConfigsResource(
                resource_type=i8(resource_type),
                resource_name=name,
                configuration_keys=None if keys is None else tuple(keys),
            )
            for resource_type, name, keys in resources
        ),
        include_synonyms=synonyms,
        include_documentation=documentation,
    )
    return at_version(newest, version)


def alter_configs_request(
    version: int, resource_type: int, name: str, configs: Mapping[str, str | None]
) -> Any:
    newest = alter_configs.AlterConfigsRequest(
        resources=(
            alter_configs.AlterConfigsResource(
                resource_type=i8(resource_type),
                resource_name=name,
                configs=tuple(
                    alter_configs.AlterableConfig(name=k, value=v) for k, v in configs.items()
                ),
            ),
        ),
        validate_only=False,
    )
    return at_version(newest, version)


def incremental_alter_configs_request(
    version: int, resource_type: int, name: str, ops: Iterable[tuple[str, int, str | None]]
) -> Any:
    newest = incremental.IncrementalAlterConfigsRequest(
        resources=(
            incremental.AlterConfigsResource(
                resource_type=i8(resource_type),
                resource_name=name,
                configs=tuple(
                    incremental.AlterableConfig(name=k, config_operation=i8(op), value=v)
                    for k, op, v in ops
                ),
            ),
        ),
        validate_only=False,
    )
    return at_version(newest, version)


def describe_cluster_request(
    version: int, *, endpoint_type: int = 1, include_fenced: bool = False
) -> Any:
    newest = describe_cluster.DescribeClusterRequest(
        include_cluster_authorized_operations=True,
        endpoint_type=i8(endpoint_type),
        include_fenced_brokers=include_fenced,
    )
    return at_version(newest, version)


def describe_log_dirs_request(
    version: int, topics: Mapping[str, Sequence[int]] | None = None
) -> Any:
    newest = describe_log_dirs.DescribeLogDirsRequest(
        topics=None
        if topics is None
        else tuple(
            describe_log_dirs.DescribableLogDirTopic(
                topic=TopicName(name), partitions=tuple(i32(p) for p in partitions)
            )
            for name, partitions in topics.items()
        )
    )
    return at_version(newest, version)


def init_producer_id_request(version: int, transactional_id: str | None = None) -> Any:
    newest = init_producer_id.InitProducerIdRequest(
        transactional_id=None if transactional_id is None else TransactionalId(transactional_id),
        transaction_timeout=TIMEOUT,
        producer_id=ProducerId(-1),
        producer_epoch=i16(-1),
    )
    return at_version(newest, version)
