"""What ``strom transactions`` asks the cluster, over strom's own blocking client (no client
library has ListTransactions, DescribeTransactions, DescribeProducers or the admin's use of
WriteTxnMarkers): one connection per request, to the broker that must answer it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kio.schema.describe_producers.v0.request import DescribeProducersRequest, TopicRequest
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.list_transactions.v1.request import ListTransactionsRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.schema.write_txn_markers.v1.request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from kio.static.primitive import i8, i16, i32
from kio.static.protocol import RequestPayload

from strom.cli.client_common import DEFAULT_BOOTSTRAP_SERVER, ClientConfig, CliError
from strom.cli.quorum_client import connect
from strom.client.security import ClientSecurity, librdkafka_security
from strom.protocol import lenient

__all__ = ["Cluster"]

_TRANSACTION_KEY = 1
"""FindCoordinator's key type of a transactional id."""
_OPEN = ("Ongoing", "PrepareCommit", "PrepareAbort")


@dataclass(frozen=True, slots=True)
class Cluster:
    """Where to reach the cluster, and how."""

    bootstrap: str
    security: ClientSecurity
    timeout: float

    @classmethod
    def build(cls, bootstrap_server: str | None, command_config: Path | None) -> Cluster:
        config = ClientConfig.build(
            bootstrap_server=bootstrap_server or DEFAULT_BOOTSTRAP_SERVER,
            command_config=command_config,
        )
        return cls(
            config.bootstrap_servers,
            librdkafka_security(config.settings),
            config.connect_timeout_s + 30,
        )

    def ask(
        self,
        body: RequestPayload,
        *,
        address: str | None = None,
        response_type: type[Any] | None = None,
    ) -> Any:
        """``body``'s response from ``address`` (default: a bootstrap server)."""
        with connect(
            address or self.bootstrap, timeout=self.timeout, security=self.security
        ) as connection:
            try:
                return connection.request(body, response_type=response_type)
            except OSError as error:
                raise CliError(f"{type(body).__name__[:-7]} failed: {error}") from None

    def metadata(self, topic: str | None = None) -> Any:
        topics = (
            None if topic is None else (MetadataRequestTopic(topic_id=None, name=TopicName(topic)),)
        )
        response = self.ask(
            MetadataRequest(
                topics=topics,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
        for found in response.topics:
            if found.error_code != ErrorCode.none:
                raise CliError(f"topic {found.name!r}: {_name(found.error_code)}")
        return response

    def _address(self, metadata: Any, broker_id: int) -> str:
        for broker in metadata.brokers:
            if broker.node_id == broker_id:
                return f"{broker.host}:{broker.port}"
        raise CliError(f"broker {broker_id} is not in the cluster")

    def _leader(self, topic: str, partition: int) -> str:
        metadata = self.metadata(topic)
        for found in metadata.topics:
            for p in found.partitions:
                if p.partition_index == partition:
                    if p.leader_id < 0:
                        raise CliError(f"{topic}-{partition} has no leader right now")
                    return self._address(metadata, int(p.leader_id))
        raise CliError(f"topic {topic!r} has no partition {partition}")

    def list_transactions(self, *, producer_ids: tuple[int, ...] = ()) -> list[tuple[int, Any]]:
        """``(broker id, its transactions)`` for every broker (each coordinates some)."""
        metadata = self.metadata()
        request = ListTransactionsRequest(
            state_filters=(), producer_id_filters=tuple(ProducerId(p) for p in producer_ids)
        )
        listings = []
        for broker in sorted(metadata.brokers, key=lambda b: b.node_id):
            response = self.ask(request, address=f"{broker.host}:{broker.port}")
            _check(response.error_code, f"Failed to list transactions of broker {broker.node_id}")
            listings.append((int(broker.node_id), response.transaction_states))
        return listings

    def describe_transaction(self, transactional_id: str) -> tuple[int, Any]:
        """``(coordinator id, state)`` of ``transactional_id``."""
        response = self.ask(
            FindCoordinatorRequest(
                key_type=i8(_TRANSACTION_KEY), coordinator_keys=(transactional_id,)
            )
        )
        [coordinator] = response.coordinators
        failed = f"Failed to describe transaction state of transactional-id `{transactional_id}`"
        _check(coordinator.error_code, failed)
        described = self.ask(
            DescribeTransactionsRequest(transactional_ids=(TransactionalId(transactional_id),)),
            address=f"{coordinator.host}:{coordinator.port}",
            response_type=lenient.DescribeTransactionsResponse,
        )
        [state] = described.transaction_states
        _check(state.error_code, failed)
        return int(coordinator.node_id), state

    def describe_producers(
        self, topic: str, partition: int, *, broker_id: int | None = None
    ) -> tuple[Any, ...]:
        """The active producers of ``topic``-``partition`` on its leader (or ``broker_id``)."""
        address = (
            self._leader(topic, partition)
            if broker_id is None
            else self._address(self.metadata(), broker_id)
        )
        response = self.ask(
            DescribeProducersRequest(
                topics=(TopicRequest(name=TopicName(topic), partition_indexes=(i32(partition),)),)
            ),
            address=address,
        )
        [result] = response.topics[0].partitions
        on = "leader" if broker_id is None else f"broker {broker_id}"
        _check(
            result.error_code,
            f"Failed to describe producers for partition {topic}-{partition} on {on}",
            result.error_message,
        )
        return tuple(result.active_producers)

    def abort(
        self,
        topic: str,
        partition: int,
        *,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
    ) -> None:
        """Write the ABORT marker of a producer's transaction into one partition (its leader)."""
        marker = WritableTxnMarker(
            producer_id=ProducerId(producer_id),
            producer_epoch=i16(producer_epoch),
            transaction_result=False,
            topics=(
                WritableTxnMarkerTopic(name=TopicName(topic), partition_indexes=(i32(partition),)),
            ),
            coordinator_epoch=i32(coordinator_epoch),
        )
        response = self.ask(
            WriteTxnMarkersRequest(markers=(marker,)), address=self._leader(topic, partition)
        )
        [result] = response.markers[0].topics[0].partitions
        _check(
            result.error_code,
            f"Failed to abort the transaction of producer {producer_id} in {topic}-{partition}",
        )

    def find_hanging(
        self,
        *,
        broker_id: int | None,
        topic: str | None,
        partition: int | None,
        older_than_ms: int,
    ) -> list[tuple[tuple[str, int], Any]]:
        """Open transactions last written before ``older_than_ms`` that their coordinator does
        not have open in that partition (Kafka's ``FindHangingTransactionsCommand``)."""
        metadata = self.metadata(topic)
        partitions = sorted(
            (str(t.name), int(p.partition_index))
            for t in metadata.topics
            for p in t.partitions
            if (partition is None or p.partition_index == partition)
            and (broker_id is None or broker_id in p.replica_nodes)
        )
        if topic is not None and partition is not None and not partitions:
            raise CliError(f"topic {topic!r} has no partition {partition}")
        candidates = [
            ((name, index), producer)
            for name, index in partitions
            for producer in self.describe_producers(name, index, broker_id=broker_id)
            if producer.current_txn_start_offset >= 0 and producer.last_timestamp < older_than_ms
        ]
        if not candidates:
            return []
        ids = tuple(sorted({int(p.producer_id) for _, p in candidates}))
        owners = {
            int(txn.producer_id): str(txn.transactional_id)
            for _, listing in self.list_transactions(producer_ids=ids)
            for txn in listing
        }
        hanging = []
        for tp, producer in candidates:
            transactional_id = owners.get(int(producer.producer_id))
            if transactional_id is None or not self._holds(transactional_id, producer, tp):
                hanging.append((tp, producer))
        return hanging

    def _holds(self, transactional_id: str, producer: Any, tp: tuple[str, int]) -> bool:
        """Whether the coordinator has this producer's transaction open in ``tp``."""
        _, state = self.describe_transaction(transactional_id)
        return (
            state.producer_id == producer.producer_id
            and state.producer_epoch == producer.producer_epoch
            and state.transaction_state in _OPEN
            and any(t.topic == tp[0] and tp[1] in t.partitions for t in state.topics)
        )


def _name(code: int) -> str:
    return ErrorCode(code).name.upper()


def _check(code: int, action: str, message: str | None = None) -> None:
    if code != ErrorCode.none:
        raise CliError(f"{action}: {_name(code)}" + (f": {message}" if message else ""))
