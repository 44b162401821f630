"""DescribeLogDirs (API key 35), v1 to v4: the data directory and the size of each partition.

One result for the one data directory: every hosted partition (or the requested ones: a null
topic list means all, a topic's partition list names exactly which), its size in bytes, and an
offset lag of 0 (a lag is only non-zero for a "future" replica being moved between
directories, which a single-directory broker never has). v4 adds the file system's total and
usable bytes, and strom's tagged field asks for the balancer's load (``strom balance``). The
metadata log is not a topic partition and is never listed, as in Kafka.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Final

from kio.schema.describe_log_dirs.v4 import request as newest
from kio.schema.describe_log_dirs.v4 import response as latest
from kio.schema.types import TopicName
from kio.static.primitive import i32, i64
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, TopicPartition
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.protocol.strom_fields import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    PartitionLoad,
)
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version
from strom.server.api.throttle import NO_THROTTLE
from strom.storage.log_manager import LogManager

__all__ = ["DescribeLogDirsHandler"]


class DescribeLogDirsHandler:
    api_key: Final = ApiKey.DESCRIBE_LOG_DIRS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DESCRIBE_LOG_DIRS]

    def __init__(
        self,
        log_manager: LogManager,
        *,
        data_dir: Path,
        internal_logs: Collection[TopicPartition] = (),
        loads: Callable[[], tuple[PartitionLoad, ...]] = tuple,
    ) -> None:
        """``loads``: the balancer's latest sample, answered when a v4 request asks for it
        (strom's tagged field, ``strom.protocol.strom_fields``)."""
        self._log_manager = log_manager
        self._loads = loads
        self._data_dir = data_dir
        self._internal_logs = frozenset(internal_logs)

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.DescribeLogDirsRequest)
        wanted: set[TopicPartition] | None = None
        if request.topics is not None:
            wanted = {
                TopicPartition(topic.topic, int(partition))
                for topic in request.topics
                for partition in topic.partitions
            }
        sizes: dict[str, dict[int, int]] = defaultdict(dict)
        for tp, partition_log in self._log_manager.all().items():
            if tp in self._internal_logs or (wanted is not None and tp not in wanted):
                continue
            sizes[tp.topic][tp.partition] = partition_log.size
        try:
            usage = shutil.disk_usage(self._data_dir)
            total, usable = usage.total, usage.free
        except OSError:
            total = usable = -1
        result = latest.DescribeLogDirsResult(
            error_code=ErrorCode.none,
            log_dir=str(self._data_dir),
            topics=tuple(
                latest.DescribeLogDirsTopic(
                    name=TopicName(topic),
                    partitions=tuple(
                        latest.DescribeLogDirsPartition(
                            partition_index=i32(partition),
                            partition_size=i64(sizes[topic][partition]),
                            offset_lag=i64(0),
                            is_future_key=False,
                        )
                        for partition in sorted(sizes[topic])
                    ),
                )
                for topic in sorted(sizes)
            ),
            total_bytes=i64(total),
            usable_bytes=i64(usable),
        )
        if (
            isinstance(context.body, DescribeLogDirsRequest)
            and context.body.include_partition_loads
        ):
            return DescribeLogDirsResponse(
                throttle_time=NO_THROTTLE,
                error_code=ErrorCode.none,
                results=(result,),
                partition_loads=self._loads(),
            )
        response = latest.DescribeLogDirsResponse(
            throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results=(result,)
        )
        return for_version(response, context.api_version)
