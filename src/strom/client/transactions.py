"""Transactions by transactional id, from outside the producer that runs them.

A producer that opened a transaction can hand it over: whoever knows its transactional id,
producer id and epoch can end it with EndTxn, as Flink's Kafka sink commits on recovery.
``TransactionClient`` finds the transaction coordinator (FindCoordinator, key type 1), asks it
for a transaction's producer id and epoch (DescribeTransactions; librdkafka does not expose
them) and commits or aborts (EndTxn). Retriable errors (coordinator moving or loading, a
concurrent transaction still completing, a lost connection) are retried until the timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.types import ProducerId, TransactionalId
from kio.static.primitive import i8, i16

from strom.client.blocking import BrokerConnection, parse_servers
from strom.client.security import PLAINTEXT, ClientSecurity
from strom.common import ErrorCode, KafkaError
from strom.protocol.lenient import DescribeTransactionsResponse

__all__ = ["TransactionClient", "TransactionState"]

_TRANSACTION_KEY = i8(1)
_BACKOFF_S = 0.05
_RECONNECT = (ErrorCode.not_coordinator, ErrorCode.coordinator_not_available)
T = TypeVar("T")


@dataclass(frozen=True)
class TransactionState:
    """What DescribeTransactions says about one transactional id."""

    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int


class _Retry(Exception):
    """A retriable failure; ``reconnect`` when the coordinator must be looked up again."""

    def __init__(self, reason: str, *, reconnect: bool) -> None:
        super().__init__(reason)
        self.reconnect = reconnect


class TransactionClient:
    """Blocking DescribeTransactions and EndTxn against a cluster; ``close()`` when done."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        timeout_ms: int,
        client_id: str = "strom",
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self._security = security
        self._servers = parse_servers(bootstrap_servers)
        self._timeout = timeout_ms / 1000
        self._client_id = client_id
        self._coordinators: dict[str, BrokerConnection] = {}

    def close(self) -> None:
        for connection in self._coordinators.values():
            connection.close()
        self._coordinators.clear()

    def describe(self, transactional_id: str) -> TransactionState:
        """The transaction's state, producer id and epoch (TRANSACTIONAL_ID_NOT_FOUND raises)."""

        def ask(connection: BrokerConnection) -> TransactionState:
            request = DescribeTransactionsRequest(
                transactional_ids=(TransactionalId(transactional_id),)
            )
            response = connection.request(request, response_type=DescribeTransactionsResponse)
            (state,) = response.transaction_states
            _check(state.error_code, f"describe transaction {transactional_id!r}")
            return TransactionState(
                transactional_id,
                state.transaction_state,
                int(state.producer_id),
                int(state.producer_epoch),
            )

        return self._with_coordinator(transactional_id, ask)

    def end(
        self, transactional_id: str, *, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        """Commit or abort the open transaction of that producer id and epoch.

        Ending a transaction that already ended the same way succeeds (Kafka's rule, which makes
        a retried commit safe); a newer epoch (the transaction was aborted and the id reused)
        raises PRODUCER_FENCED or INVALID_PRODUCER_EPOCH.
        """

        def ask(connection: BrokerConnection) -> None:
            request = EndTxnRequest(
                transactional_id=TransactionalId(transactional_id),
                producer_id=ProducerId(producer_id),
                producer_epoch=i16(producer_epoch),
                committed=commit,
            )
            action = "commit" if commit else "abort"
            _check(connection.request(request).error_code, f"{action} {transactional_id!r}")

        self._with_coordinator(transactional_id, ask)

    def _with_coordinator(self, transactional_id: str, ask: Callable[[BrokerConnection], T]) -> T:
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                return ask(self._coordinator(transactional_id))
            except (_Retry, OSError) as exc:
                if isinstance(exc, OSError) or exc.reconnect:
                    self._forget(transactional_id)
                if time.monotonic() + _BACKOFF_S > deadline:
                    raise TimeoutError(
                        f"no answer about transaction {transactional_id!r} within "
                        f"{self._timeout:g}s: {exc}"
                    ) from None
                time.sleep(_BACKOFF_S)

    def _forget(self, transactional_id: str) -> None:
        connection = self._coordinators.pop(transactional_id, None)
        if connection is not None:
            connection.close()

    def _coordinator(self, transactional_id: str) -> BrokerConnection:
        connection = self._coordinators.get(transactional_id)
        if connection is None:
            host, port = self._find_coordinator(transactional_id)
            connection = self._connect(host, port)
            self._coordinators[transactional_id] = connection
        return connection

    def _find_coordinator(self, transactional_id: str) -> tuple[str, int]:
        last: OSError | None = None
        for host, port in self._servers:
            try:
                with self._connect(host, port) as connection:
                    response = connection.request(
                        FindCoordinatorRequest(key=transactional_id, key_type=_TRANSACTION_KEY)
                    )
            except OSError as exc:
                last = exc
                continue
            _check(response.error_code, f"find the coordinator of {transactional_id!r}")
            return str(response.host), int(response.port)
        raise last or OSError("no broker to ask")

    def _connect(self, host: str, port: int) -> BrokerConnection:
        return BrokerConnection(
            host, port, timeout=self._timeout, client_id=self._client_id, security=self._security
        )


def _check(code: ErrorCode, what: str) -> None:
    if code == ErrorCode.none:
        return
    reason = f"cannot {what}: {code.name.upper()}"
    if code.retriable or code == ErrorCode.concurrent_transactions:
        raise _Retry(reason, reconnect=code in _RECONNECT)
    raise KafkaError(code, reason)
