"""What every controller operation returns, and the randomness it takes as an argument."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from strom.common import ErrorCode, KafkaError
from strom.common.randomness import RandomSource
from strom.metadata import MetadataRecord

__all__ = [
    "NO_ERROR",
    "ZERO_UUID",
    "ApiError",
    "ControllerResult",
    "RandomSource",
    "new_topic_id",
]

T = TypeVar("T")

ZERO_UUID: Final = uuid.UUID(int=0)
METADATA_TOPIC_ID: Final = uuid.UUID(int=1)
"""Kafka reserves this id for ``__cluster_metadata``; no topic gets it."""


@dataclass(frozen=True, slots=True)
class ApiError:
    """One of Kafka's error codes and a one-line message (None when there is nothing to add)."""

    code: ErrorCode = ErrorCode.none
    message: str | None = None

    @property
    def is_success(self) -> bool:
        return self.code is ErrorCode.none

    @property
    def is_failure(self) -> bool:
        return self.code is not ErrorCode.none

    @classmethod
    def of(cls, error: KafkaError) -> ApiError:
        return cls(error.error_code, error.message)


NO_ERROR: Final = ApiError()


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[T]):
    """Records to append to the metadata log (all of them, atomically) and the reply.

    The controller never applies its records: the caller appends them, the loader replays them,
    and only then is the next operation validated against the new image.
    """

    records: Sequence[MetadataRecord]
    response: T


def new_topic_id(random: RandomSource, taken: Collection[uuid.UUID]) -> uuid.UUID:
    """A random version-4 UUID that is not taken, not reserved, and whose base64 form (Kafka's
    way of printing ids) does not start with '-', which command lines would take for a flag."""
    while True:
        candidate = uuid.UUID(int=random.getrandbits(128), version=4)
        if candidate.bytes[0] >> 2 == 62:  # base64url '-' is 62
            continue
        if candidate in (ZERO_UUID, METADATA_TOPIC_ID) or candidate in taken:
            continue
        return candidate
