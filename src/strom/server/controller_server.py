"""The controller side of the node: runs controller operations one at a time and commits them.

Every operation follows the rule of ``strom.controller``'s NOTES.md: validate against the current
image (``QuorumController`` is pure), append the result's records to the metadata log as one
batch, apply that batch through the ``MetadataLoader`` (which tells the publishers: the log
manager creates and deletes partition directories there), and only then reply and let the next
operation validate. An ``asyncio.Lock`` keeps operations in that order even when committing
comes to await something (a Raft quorum later; the single voter commits synchronously).

A metadata log write that fails leaves the log's state unknown, as in Kafka, where the controller
then exits: the server refuses every later operation (``MetadataLogFailedError``) and says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from strom.controller import (
    AlterConfigsRequest,
    AlterConfigsResult,
    ApiError,
    BrokerRegistrationReply,
    BrokerRegistrationRequest,
    ControllerResult,
    CreatePartitionsRequest,
    CreatePartitionsResult,
    CreateTopicResult,
    CreateTopicsRequest,
    DeleteTopicResult,
    DeleteTopicsRequest,
    IncrementalAlterConfigsRequest,
    ProducerIdsBlock,
    QuorumController,
)
from strom.metadata import (
    MetadataBatch,
    MetadataImage,
    MetadataLoader,
    MetadataLogWriter,
    MetadataRecord,
    append_records,
)

__all__ = ["ControllerServer", "MetadataLogFailedError"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class MetadataLogFailedError(Exception):
    """An earlier metadata log write failed; no operation can be committed any more."""


class ControllerServer:
    """Serializes the controller's operations and commits their records."""

    def __init__(
        self, controller: QuorumController, *, loader: MetadataLoader, log: MetadataLogWriter
    ) -> None:
        self.controller = controller
        self._loader = loader
        self._log = log
        self._lock = asyncio.Lock()
        self._failure: str | None = None

    @property
    def image(self) -> MetadataImage:
        return self._loader.image

    async def run(self, name: str, operation: Callable[[MetadataImage], ControllerResult[T]]) -> T:
        """Validate ``operation`` against the current image, commit its records, apply them,
        and return its response."""
        async with self._lock:
            return self.run_now(name, operation)

    def run_now(self, name: str, operation: Callable[[MetadataImage], ControllerResult[T]]) -> T:
        """:meth:`run` for start-up, before anything else can submit operations."""
        if self._failure is not None:
            raise MetadataLogFailedError(self._failure)
        result = operation(self._loader.image)
        if result.records:
            batch = self._commit(name, result.records)
            self._apply(name, batch)
        return result.response

    def _commit(self, name: str, records: Sequence[MetadataRecord]) -> MetadataBatch:
        try:
            batch = append_records(self._log, records)
        except Exception as error:
            self._failure = f"the metadata log failed during {name}: {error}"
            log.critical("%s; refusing further metadata changes", self._failure)
            raise MetadataLogFailedError(self._failure) from error
        log.debug(
            "%s: committed %d metadata record(s) at offsets %d-%d",
            name,
            len(records),
            batch.base_offset,
            batch.last_offset,
        )
        return batch

    def _apply(self, name: str, batch: MetadataBatch) -> None:
        try:
            self._loader.apply_batch(batch)
        except ExceptionGroup as group:
            # The image has advanced; only side effects (log directories) failed.
            for error in group.exceptions:
                log.error(
                    "%s: applying metadata at offset %d failed: %s",
                    name,
                    batch.last_offset,
                    error,
                    exc_info=error,
                )

    # The operations, by name -------------------------------------------------------------------

    def bootstrap(self) -> None:
        """Write a new cluster's first records (nothing when the log already has them)."""
        self.run_now("bootstrap", self.controller.bootstrap)

    def register_broker_now(self, request: BrokerRegistrationRequest) -> BrokerRegistrationReply:
        return self.run_now(
            "register broker", lambda image: self.controller.register_broker(image, request)
        )

    def unfence_broker_now(self, *, broker_id: int, broker_epoch: int) -> ApiError:
        return self.run_now(
            "unfence broker",
            lambda image: self.controller.unfence_broker(
                image, broker_id=broker_id, broker_epoch=broker_epoch
            ),
        )

    async def create_topics(self, request: CreateTopicsRequest) -> list[CreateTopicResult]:
        return await self.run(
            "create topics", lambda image: self.controller.create_topics(image, request)
        )

    async def delete_topics(self, request: DeleteTopicsRequest) -> list[DeleteTopicResult]:
        return await self.run(
            "delete topics", lambda image: self.controller.delete_topics(image, request)
        )

    async def create_partitions(
        self, request: CreatePartitionsRequest
    ) -> list[CreatePartitionsResult]:
        return await self.run(
            "create partitions", lambda image: self.controller.create_partitions(image, request)
        )

    async def alter_configs(self, request: AlterConfigsRequest) -> list[AlterConfigsResult]:
        return await self.run(
            "alter configs", lambda image: self.controller.alter_configs(image, request)
        )

    async def incremental_alter_configs(
        self, request: IncrementalAlterConfigsRequest
    ) -> list[AlterConfigsResult]:
        return await self.run(
            "incremental alter configs",
            lambda image: self.controller.incremental_alter_configs(image, request),
        )

    async def allocate_producer_ids(self, *, broker_id: int, broker_epoch: int) -> ProducerIdsBlock:
        return await self.run(
            "allocate producer ids",
            lambda image: self.controller.allocate_producer_ids(
                image, broker_id=broker_id, broker_epoch=broker_epoch
            ),
        )
