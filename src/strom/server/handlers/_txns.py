"""What the transaction handlers share: the coordinator runtime, and Kafka's answer to an old
client that does not know PRODUCER_FENCED."""

from __future__ import annotations

import datetime
import typing

from kio.static.primitive import TZAware, i32Timedelta

from strom.common import ErrorCode
from strom.server.coordinator.txn_coordinator_runtime import TxnCoordinatorRuntime

__all__ = ["TxnHandler", "for_client", "timeout", "timestamp"]


def for_client(code: ErrorCode, version: int, *, fenced_from: int) -> ErrorCode:
    """PRODUCER_FENCED as INVALID_PRODUCER_EPOCH for versions before ``fenced_from`` (as
    Kafka's ``KafkaApis`` answers clients older than KIP-588)."""
    if code is ErrorCode.producer_fenced and version < fenced_from:
        return ErrorCode.invalid_producer_epoch
    return code


def timestamp(ms: int) -> TZAware:
    """A millisecond timestamp as kio's ``datetime_i64`` (-1, Kafka's "none", included)."""
    moment = datetime.datetime.fromtimestamp(0, tz=datetime.UTC) + datetime.timedelta(
        milliseconds=ms
    )
    return typing.cast(TZAware, moment)


def timeout(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


class TxnHandler:
    """Base of the transaction APIs' handlers: they all talk to the coordinator runtime."""

    def __init__(self, runtime: TxnCoordinatorRuntime) -> None:
        self._runtime = runtime
        self._coordinator = runtime.coordinator
