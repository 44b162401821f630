"""Response bodies kio cannot read as Kafka sends them, redeclared for ``decode_response``.

* DescribeTransactions v0: kio reads ``TransactionStartTimeMs`` as a datetime and refuses -1,
  which Kafka sends for "none" (an unknown transactional id, or one with no transaction yet).
  Here it is a plain int64.

kio builds its readers from the dataclasses' real type annotations, so this module must not use
``from __future__ import annotations``.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.describe_transactions.v0 import response as kio_describe_transactions
from kio.schema.errors import ErrorCode
from kio.schema.types import ProducerId, TransactionalId
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32Timedelta, i64

__all__ = ["DescribeTransactionsResponse", "TransactionState"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionState:
    """kio's ``TransactionState`` with ``transaction_start_time`` in milliseconds (-1: none)."""

    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(65)
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    transactional_id: TransactionalId = field(metadata={"kafka_type": "string"})
    transaction_state: str = field(metadata={"kafka_type": "string"})
    transaction_timeout: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    transaction_start_time: i64 = field(metadata={"kafka_type": "int64"})
    producer_id: ProducerId = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    topics: tuple[kio_describe_transactions.TopicData, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeTransactionsResponse:
    """DescribeTransactions v0 response whose states are ``TransactionState`` above."""

    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(65)
    __header_schema__: ClassVar = (
        kio_describe_transactions.DescribeTransactionsResponse.__header_schema__
    )
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    transaction_states: tuple[TransactionState, ...]
