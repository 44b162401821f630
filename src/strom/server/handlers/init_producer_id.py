"""InitProducerId (API key 22), v0 to v5: a producer id and epoch for a producer.

Without a transactional id, Kafka's ``TransactionCoordinator.handleInitProducerId`` always hands
out a new producer id at epoch 0, whatever producer id and epoch the request carries (v3+ may
carry the current ones to bump the epoch; that matters only for transactional producers).

With one, the transaction coordinator answers (``coordinator/txn``), once
``__transaction_state`` exists (created here when this is the first transactional request, as
FindCoordinator would; COORDINATOR_LOAD_IN_PROGRESS while its partition loads): a new producer
id for a new transactional id, else the same id with a bumped epoch (fencing older instances),
after aborting an open transaction (CONCURRENT_TRANSACTIONS until that is done; the client
retries).
A new producer id is taken from the controller's blocks first when the core needs one (a new
transactional id, an exhausted epoch); without one, nothing is awaited between that check and
the core's call, so the answer cannot change in between. An empty
transactional id is INVALID_REQUEST; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v4, as in
Kafka.
"""

from __future__ import annotations

import logging
from typing import Final, Protocol

from kio.schema.init_producer_id.v5 import request as newest
from kio.schema.init_producer_id.v5 import response as latest
from kio.schema.types import ProducerId
from kio.static.primitive import i16
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller import ApiError
from strom.coordinator.txn import InitProducerIdResult
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version, request_field
from strom.server.api.throttle import NO_THROTTLE
from strom.server.coordinator.txn_coordinator_runtime import TxnCoordinatorRuntime
from strom.server.handlers._txns import for_client

__all__ = ["InitProducerIdHandler"]

log = logging.getLogger(__name__)


class ProducerIdSource(Protocol):
    """Where InitProducerId gets a new producer id (the broker's ``ProducerIdManager``)."""

    async def generate(self) -> int | ApiError:
        """A producer id never handed out before, or the controller's error."""
        ...


class InitProducerIdHandler:
    api_key: Final = ApiKey.INIT_PRODUCER_ID
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.INIT_PRODUCER_ID]

    def __init__(self, producer_ids: ProducerIdSource, transactions: TxnCoordinatorRuntime) -> None:
        self._producer_ids = producer_ids
        self._transactions = transactions

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.InitProducerIdRequest)
        transactional_id = request.transactional_id
        if transactional_id is not None:
            if transactional_id == "":
                return self._error(ErrorCode.invalid_request, context.api_version)
            if not context.authorize(
                AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
            ):
                code = ErrorCode.transactional_id_authorization_failed
                return self._error(code, context.api_version)
            return await self._transactional(context, request, transactional_id)
        if not (
            context.authorize(AclOperation.IDEMPOTENT_WRITE, audit=False)
            or context.authorize_any(AclOperation.WRITE, ResourceType.TOPIC)
        ):  # Kafka 4: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic (KIP-679)
            return self._error(ErrorCode.cluster_authorization_failed, context.api_version)
        outcome = await self._producer_ids.generate()
        if not isinstance(outcome, int):
            return self._error(outcome.code, context.api_version)
        log.debug("producer id %d (epoch 0) for %s", outcome, context.client_address)
        response = latest.InitProducerIdResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            producer_id=ProducerId(outcome),
            producer_epoch=i16(0),
        )
        return for_version(response, context.api_version)

    async def _transactional(
        self,
        context: RequestContext,
        request: newest.InitProducerIdRequest,
        transactional_id: str,
    ) -> ResponsePayload:
        version = context.api_version
        coordinator = self._transactions.coordinator
        error = await self._transactions.ensure_topic()
        if error is ErrorCode.none:
            error = coordinator.txn_error(transactional_id)
        if error is not ErrorCode.none:
            return self._error(error, version)
        candidate: int | None = None
        if coordinator.needs_producer_id(transactional_id):
            generated = await self._producer_ids.generate()
            if not isinstance(generated, int):
                return self._error(generated.code, version)
            candidate = generated
        timeout_ms = int(request.transaction_timeout.total_seconds() * 1000)
        result: InitProducerIdResult = await self._transactions.call(
            lambda reply: coordinator.init_producer_id(
                transactional_id,
                timeout_ms=timeout_ms,
                producer_id=int(request_field(request, "producer_id", -1)),
                producer_epoch=int(request_field(request, "producer_epoch", -1)),
                new_producer_id=candidate,
                now_ms=self._transactions.now_ms(),
                reply=reply,
            )
        )
        if result.error is not ErrorCode.none:
            log.info(
                "InitProducerId of transactional id %r from %s: %s",
                transactional_id,
                context.client_address,
                result.error.name.upper(),
            )
            return self._error(for_client(result.error, version, fenced_from=4), version)
        response = latest.InitProducerIdResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            producer_id=ProducerId(result.producer_id),
            producer_epoch=i16(result.producer_epoch),
        )
        return for_version(response, version)

    @staticmethod
    def _error(code: ErrorCode, version: int) -> ResponsePayload:
        response = latest.InitProducerIdResponse(
            throttle_time=NO_THROTTLE,
            error_code=code,
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
        )
        return for_version(response, version)
