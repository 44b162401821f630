"""The broker role of a node: the data plane, the coordinators and the client listeners.

The node (``strom.server.node``) hands it what every role shares (settings, the logs, the
committed metadata image, the channel to the active controller) once the metadata has caught up
with the quorum, and after its listeners have taken their addresses (``bind``: a port in use
stops the start at once). What ``start`` does, in Kafka's order (``BrokerServer.startup``):

1. **Handlers** are registered (``self.registry``); ApiVersions advertises exactly them. Each
   group of APIs gets its handlers built, and their modules imported, on its first request.
   Admin requests (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
   IncrementalAlterConfigs, DescribeQuorum) are forwarded to the active controller. Nothing
   reads the metadata yet.
2. **Registration**: the broker registers with the active controller under its advertised
   listeners (a new broker epoch every start) and heartbeats, asking to stay fenced.
3. **Catch-up**: it waits until its metadata image holds that registration (Kafka's
   ``initialCatchUpFuture``), so what it acts on next is the cluster's metadata as of now, not
   what it had before a crash.
4. **Publishers**, handed that image: the log publisher (logs of partitions the image does not
   have are deleted: strays of a topic deleted while this node was down; from now on every
   committed metadata change creates, deletes or reconfigures this broker's logs), the client
   quotas, leadership (leader or follower of its partitions), then the group coordinator on
   ``__consumer_offsets`` and the transaction coordinator on ``__transaction_state`` (their
   partitions load in the background: COORDINATOR_LOAD_IN_PROGRESS meanwhile).
5. **Unfenced**: the broker asks to be unfenced and waits until the controller has done so and
   its own image shows it unfenced.
6. **Listeners** accept connections: a client's first Metadata answer lists this broker.
7. Background tasks: retention every ``log.retention.check.interval.ms``, the recovery-point
   checkpoint every ``log.flush.offset.checkpoint.interval.ms`` (and ``log.flush.scheduler.
   interval.ms`` when set), idle idempotent producers forgotten every ``producer.id.expiration.
   check.interval.ms``; the log cleaner (compacted topics, every ``log.cleaner.backoff.ms``)
   when ``log.cleaner.enable``.

``stop`` reverses it: a controlled shutdown (the controller fences this broker first), stop the
listeners (in-flight requests are answered), stop the background tasks and the coordinators. The
node closes the logs afterwards.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from strom.client.async_client import NodeClients
from strom.client.security import PLAINTEXT, ClientSecurity
from strom.common import Clock, TopicPartition
from strom.config import ServerConfig
from strom.controller import SUPPORTED_FEATURES
from strom.metadata import (
    BrokerEndpoint,
    BrokerRegistration,
    MetadataDelta,
    MetadataImage,
    MetadataLoader,
    SecurityProtocol,
)
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.protocol.kafka_releases import release_versions
from strom.security.acls import AclOperation
from strom.server.api.handler_table import Handler, HandlerTable
from strom.server.api.metadata_view import MetadataWaiter
from strom.server.auth.listener_security import ListenerSecurity
from strom.server.broker.broker_lifecycle import (
    BrokerLifecycleManager,
    LifecycleSettings,
    RegistrationFailed,
)
from strom.server.broker.cleaner_service import CleanerService
from strom.server.broker.load_reporter import LoadReporter
from strom.server.broker.log_publisher import LogPublisher
from strom.server.channel.auto_topics import AutoTopicCreator
from strom.server.channel.controller_channel import ControllerChannel
from strom.server.channel.producer_ids import ProducerIdManager
from strom.server.configs.config_entries import ConfigDescriber
from strom.server.configs.log_configs import TopicConfigResolver
from strom.server.configs.node_config import HostPort, NodeConfig
from strom.server.coordinator.group_coordinator_runtime import GroupCoordinatorRuntime
from strom.server.coordinator.txn_coordinator_runtime import TxnCoordinatorRuntime
from strom.server.handlers.api_versions import ApiVersionsHandler, Features
from strom.server.handlers.broker_apis import (
    DATA_APIS,
    DESCRIBE_APIS,
    FORWARDED,
    GROUP_APIS,
    TXN_APIS,
)
from strom.server.handlers.cluster_authorization import ClusterAuthorized
from strom.server.handlers.common import BrokerAddress, broker_addresses
from strom.server.handlers.fenced_brokers import RecentlyFenced
from strom.server.metrics import NodeMetrics
from strom.server.network.connection import ConnectionSettings
from strom.server.network.connection_quotas import ConnectionLimits, ConnectionQuotas
from strom.server.network.faults import Faults
from strom.server.network.listener import Listener
from strom.server.network.sasl_authenticate import SaslAuthenticateHandler
from strom.server.network.sasl_handshake import SaslHandshakeHandler
from strom.server.quotas.client_quotas import ClientQuotas
from strom.server.replica.alter_partition_manager import AlterPartitionManager
from strom.server.replica.fetch_session import DEFAULT_SESSION_CACHE_SLOTS, FetchSessionCache
from strom.server.replica.replica_fetcher import FetcherSettings, ReplicaFetcherManager
from strom.server.replica.replica_manager import ReplicaManager
from strom.server.replica.replication_quota import ReplicationQuota, quota_settings
from strom.storage.log_manager import LogManager

__all__ = ["Broker", "BrokerParts", "BrokerStartError"]

log = logging.getLogger(__name__)

_MAX_TIMER_MS = 2**31 - 1
"""Periodic tasks with a longer interval (Kafka's Long.MAX_VALUE "never") are not scheduled."""


class BrokerStartError(RuntimeError):
    """The broker could not join its cluster (registration refused, never unfenced)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerParts:
    """What the node shares with its broker role (Kafka's ``SharedServer``)."""

    config: ServerConfig
    node: NodeConfig
    cluster_id: str
    directory_id: str | None
    clock: Clock
    log_manager: LogManager
    log_cleaner: CleanerService
    metadata: MetadataLoader
    """The committed metadata image (``metadata.image``) and its publishers."""
    waiter: MetadataWaiter
    channel: ControllerChannel
    """To the active controller."""
    metadata_offset: Callable[[], int]
    """The offset of the last committed metadata record applied."""
    internal_logs: frozenset[TopicPartition]
    """Logs that are no topic's partitions (the metadata log)."""
    emulate_kafka_version: str | None = None
    faults: Faults | None = None
    security: Mapping[str, ListenerSecurity] = field(default_factory=dict)
    """Listener name -> its TLS and SASL (PLAINTEXT when missing)."""
    inter_broker_security: ClientSecurity = PLAINTEXT
    """How this broker logs in to the others (replica fetchers, transaction markers)."""
    connection_limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    """``max.connections`` and the rest, for the broker's listeners."""
    metrics: NodeMetrics | None = None
    """The node's counters (None: ``metrics.listener`` is unset)."""


class Broker:
    """The broker role of a node (see the module doc)."""

    def __init__(self, parts: BrokerParts) -> None:
        self.parts = parts
        self.config = parts.config
        self.clock = parts.clock
        self.node_id = parts.node.node_id
        self.log_manager = parts.log_manager
        self.log_cleaner = parts.log_cleaner
        self.metadata = parts.metadata
        self.recently_fenced = RecentlyFenced(
            parts.clock, lambda: (self.node_id, self.broker_epoch)
        )
        """Fenced brokers Metadata still lists (see ``handlers.fenced_brokers``)."""
        self.topic_configs = TopicConfigResolver(parts.config, node_id=self.node_id)
        """Effective topic settings and log configs as of a metadata image."""
        version = parts.emulate_kafka_version
        self.registry = HandlerTable(ceiling=None if version is None else release_versions(version))
        self.registry.register(ApiVersionsHandler(self.registry, features=self._features))
        self.registry.register(SaslHandshakeHandler())
        self.registry.register(SaslAuthenticateHandler())
        self.loads = LoadReporter(
            clock=self.clock,
            interval_ms=self.config.get_int("strom.balancer.metrics.reporter.interval.ms"),
            traffic=lambda: self.replica_manager.traffic,
            sizes=self._replica_sizes,
        )
        """The balancer's load: sampled, sent with the heartbeats, answered in DescribeLogDirs."""
        self.lifecycle = BrokerLifecycleManager(
            LifecycleSettings(
                node_id=self.node_id,
                cluster_id=parts.cluster_id,
                features=SUPPORTED_FEATURES,
                rack=parts.node.rack,
                directory_id=None,
                heartbeat_interval=self.config.get_int("broker.heartbeat.interval.ms") / 1000,
                registration_timeout=self.config.get_int("initial.broker.registration.timeout.ms")
                / 1000,
                previous_broker_epoch=parts.log_manager.clean_shutdown_broker_epoch,
            ),
            channel=parts.channel,
            metadata_offset=parts.metadata_offset,
            loads=self.loads,
        )
        self._listeners: list[Listener] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.client_quotas = ClientQuotas.from_config(self.config, self.clock)
        """Producers' and consumers' byte rates and the request quota (the metadata image's
        client quotas)."""

    def _replica_sizes(self) -> dict[TopicPartition, int]:
        internal = self.parts.internal_logs
        return {tp: log.size for tp, log in self.log_manager.all().items() if tp not in internal}

    @property
    def broker_epoch(self) -> int:
        """This broker's epoch, given by its registration at start."""
        return self.lifecycle.broker_epoch

    @property
    def listeners(self) -> tuple[Listener, ...]:
        return tuple(self._listeners)

    @property
    def bound_addresses(self) -> Mapping[str, HostPort]:
        """Listener name -> where it is bound (the real port when the configured one is 0)."""
        return {listener.name: listener.bound_address for listener in self._listeners}

    @property
    def bound_address(self) -> HostPort:
        """The first broker listener's bound address."""
        if not self._listeners:
            raise RuntimeError("the broker is not started")
        return self._listeners[0].bound_address

    def advertised_address(self, name: str) -> HostPort:
        """What clients of listener ``name`` are told: ``advertised.listeners`` if set, else the
        listener's own address (the bound port when the configured one is 0)."""
        listener = next(listener for listener in self._listeners if listener.name == name)
        own = listener.advertised_address
        configured = self.parts.node.advertised.get(name)
        if configured is None:
            return own
        return HostPort(configured.host or own.host, configured.port or own.port)

    # --- start -----------------------------------------------------------------------------

    async def start(self, *, unfence_timeout: float) -> None:
        """Handlers; register and catch up with the metadata log past the registration; the
        publishers; unfenced; then the listeners accept connections (see the module doc).

        Raises ``BrokerStartError`` when the controller refuses the registration, or when the
        broker is not caught up and unfenced within ``unfence_timeout`` seconds.
        """
        deadline = asyncio.get_running_loop().time() + unfence_timeout
        had_metadata = not self.metadata.image.is_empty
        self.metadata.install_publisher(self.parts.waiter)
        self.metadata.install_publisher(self.recently_fenced)
        self._register_handlers()
        self._register_data_handlers()
        self._start_replication()
        self._register_group_handlers()
        self._register_txn_handlers()
        await self._register()
        await self._wait_for_image(
            deadline,
            lambda broker: broker.epoch == self.broker_epoch,
            f"broker {self.node_id} did not read its own registration (broker epoch "
            f"{self.broker_epoch}) from the metadata log within {unfence_timeout:g} s",
        )
        self._install_publishers(remove_strays=had_metadata)
        self.lifecycle.ready_to_unfence()
        await self._wait_unfenced(deadline, unfence_timeout)
        await self._start_listeners()
        self._start_background_tasks()

    def _install_publishers(self, *, remove_strays: bool) -> None:
        """From the image that holds this broker's registration on: the logs (strays of topics
        deleted while it was down go, unless the metadata log was empty at start), the client
        quotas, leadership (after the logs: they exist before it leads or follows them), then
        the group and transaction coordinators. A marker the transaction coordinator writes to
        a ``__consumer_offsets`` partition still loading is replayed by that load (it reads to
        the log's end)."""
        publisher = LogPublisher(
            self.log_manager,
            self.topic_configs,
            node_id=self.node_id,
            internal_logs=self.parts.internal_logs,
        )
        if remove_strays:
            publisher.remove_strays(self.metadata.image)
        else:
            unknown = [tp for tp in self.log_manager.all() if tp not in self.parts.internal_logs]
            if unknown:
                log.warning(
                    "the metadata log was empty but %d partition directories exist; they are "
                    "left alone and belong to no topic",
                    len(unknown),
                )
        for installed in (
            publisher,
            lambda _delta, image: self.client_quotas.on_image(image.client_quotas),
            self._apply_leadership,
            self.group_coordinator.on_metadata,
            self.txn_coordinator.on_metadata,
        ):
            self.metadata.install_publisher(installed)

    def _controller_id(self) -> int:
        """What Metadata and DescribeCluster name as the controller: clients cannot reach the
        quorum, so Kafka names a live broker (the lowest id here), this one while it is alone."""
        alive = [
            broker_id
            for broker_id, broker in self.metadata.image.cluster.brokers.items()
            if not broker.fenced
        ]
        return min(alive, default=self.node_id)

    def _register_handlers(self) -> None:
        channel = self.parts.channel
        self.auto_topics = AutoTopicCreator(
            channel, self.metadata, self.parts.waiter, self.topic_configs
        )
        self.producer_ids = ProducerIdManager(
            channel, broker_id=self.node_id, broker_epoch=lambda: self.broker_epoch
        )
        self.registry.register_lazy(DESCRIBE_APIS, self._describe_handlers)
        self.registry.register_lazy(FORWARDED, self._forwarding_handlers)

    def _describe_handlers(self) -> list[Handler]:
        from strom.server.controller.handlers import acls  # noqa: PLC0415 - on first use
        from strom.server.handlers import (  # noqa: PLC0415 - on first use
            describe_client_quotas,
            describe_cluster,
            describe_configs,
            describe_log_dirs,
            describe_topic_partitions,
            describe_user_scram_credentials,
            metadata,
        )

        return [
            metadata.MetadataHandler(
                self.metadata,
                cluster_id=self.parts.cluster_id,
                controller_id=self._controller_id,
                auto_topics=self.auto_topics,
                recently_fenced=self.recently_fenced,
            ),
            describe_topic_partitions.DescribeTopicPartitionsHandler(
                self.metadata,
                partition_limit=lambda: self.topic_configs.server_config(
                    self.metadata.image
                ).get_int("max.request.partition.size.limit"),
            ),
            describe_configs.DescribeConfigsHandler(
                self.metadata, ConfigDescriber(self.topic_configs)
            ),
            describe_cluster.DescribeClusterHandler(
                cluster_id=self.parts.cluster_id,
                controller_id=self._controller_id,
                nodes=lambda listener, fenced: broker_addresses(
                    self.metadata.image, listener, include_fenced=fenced
                ),
            ),
            ClusterAuthorized(
                describe_user_scram_credentials.DescribeUserScramCredentialsHandler(
                    lambda: self.metadata.image
                ),
                AclOperation.DESCRIBE,
            ),
            acls.DescribeAclsHandler(lambda: self.metadata.image),
            ClusterAuthorized(
                describe_client_quotas.DescribeClientQuotasHandler(lambda: self.metadata.image),
                AclOperation.DESCRIBE_CONFIGS,
            ),
            ClusterAuthorized(
                describe_log_dirs.DescribeLogDirsHandler(
                    self.log_manager,
                    data_dir=self.log_manager.data_dir,
                    internal_logs=self.parts.internal_logs,
                    loads=lambda: self.loads.latest,
                ),
                AclOperation.DESCRIBE,
            ),
        ]

    def _forwarding_handlers(self) -> list[Handler]:
        """The forwarded APIs, each with its answer when the controller cannot be reached."""
        from strom.server.controller.handlers import (  # noqa: PLC0415 - on first use
            acls,
            alter_client_quotas,
            alter_configs,
            alter_user_scram_credentials,
            create_partitions,
            create_topics,
            delete_topics,
            elect_leaders,
            incremental_alter_configs,
            partition_reassignments,
            unregister_broker,
            update_features,
        )
        from strom.server.handlers import describe_quorum, forwarding, raft_voters  # noqa: PLC0415 - on first use

        error_responses: dict[ApiKey, forwarding.ErrorResponse] = {
            ApiKey.CREATE_TOPICS: create_topics.error_response,
            ApiKey.DELETE_TOPICS: delete_topics.error_response,
            ApiKey.CREATE_PARTITIONS: create_partitions.error_response,
            ApiKey.ELECT_LEADERS: elect_leaders.error_response,
            ApiKey.UPDATE_FEATURES: update_features.error_response,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: partition_reassignments.alter_error_response,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: partition_reassignments.list_error_response,
            ApiKey.ALTER_CONFIGS: alter_configs.error_response,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs.error_response,
            ApiKey.DESCRIBE_QUORUM: describe_quorum.error_response,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: alter_user_scram_credentials.error_response,
            ApiKey.CREATE_ACLS: acls.create_error_response,
            ApiKey.DELETE_ACLS: acls.delete_error_response,
            ApiKey.ALTER_CLIENT_QUOTAS: alter_client_quotas.error_response,
            ApiKey.ADD_RAFT_VOTER: raft_voters.add_error_response,
            ApiKey.REMOVE_RAFT_VOTER: raft_voters.remove_error_response,
            ApiKey.UNREGISTER_BROKER: unregister_broker.error_response,
        }
        return [
            forwarding.ForwardingHandler(
                api_key,
                KAFKA_BROKER_VERSIONS[api_key],
                self.parts.channel,
                error_response=error_response,
            )
            for api_key, error_response in error_responses.items()
        ]

    # --- data path: Produce, Fetch, ListOffsets, DeleteRecords, OffsetForLeaderEpoch --------

    replica_manager: ReplicaManager

    def _register_data_handlers(self) -> None:
        """The replica manager (and the purgatories it owns), fetch sessions, and their
        handlers."""
        self.replica_manager = ReplicaManager(
            node_id=self.node_id,
            log_manager=self.log_manager,
            metadata=self.metadata,
            config=self.config,
            clock=self.clock,
            topic_config=self.topic_configs.topic_config,
            metrics=self.parts.metrics,
        )
        self._fetch_sessions = FetchSessionCache(
            random=random.Random(), max_slots=DEFAULT_SESSION_CACHE_SLOTS
        )
        self.txn_coordinator = TxnCoordinatorRuntime(
            config=self.config,
            replica_manager=self.replica_manager,
            auto_topics=self.auto_topics,
            clock=self.clock,
            marker_clients=NodeClients(
                self._inter_broker_address,
                client_id=f"strom-txn-markers-{self.node_id}",
                security=self.parts.inter_broker_security,
            ),
        )
        self.registry.register_lazy(DATA_APIS, self._data_handlers)

    def _data_handlers(self) -> list[Handler]:
        from strom.server.handlers import (  # noqa: PLC0415 - on first use
            delete_records,
            describe_producers,
            fetch,
            list_offsets,
            offset_for_leader_epoch,
            produce,
            write_txn_markers,
        )

        replicas = self.replica_manager
        return [
            produce.ProduceHandler(
                replica_manager=replicas, verify_txn=self.txn_coordinator.verify_produce
            ),
            fetch.FetchHandler(
                replica_manager=replicas,
                sessions=self._fetch_sessions,
                clock=self.clock,
                quota=self.client_quotas.fetch,
            ),
            list_offsets.ListOffsetsHandler(replica_manager=replicas),
            delete_records.DeleteRecordsHandler(replica_manager=replicas),
            describe_producers.DescribeProducersHandler(replica_manager=replicas),
            ClusterAuthorized(
                write_txn_markers.WriteTxnMarkersHandler(
                    replica_manager=replicas,
                    timeout_ms=self.config.get_int("request.timeout.ms"),
                ),
                AclOperation.CLUSTER_ACTION,
            ),
            offset_for_leader_epoch.OffsetForLeaderEpochHandler(replica_manager=replicas),
        ]

    def _features(self) -> Features:
        """ApiVersions' features: the ranges this broker registers with, the finalized levels."""
        image = self.metadata.image
        finalized = image.features.finalized_levels
        return Features(
            supported={
                f.name: (f.min_supported_version, f.max_supported_version)
                for f in SUPPORTED_FEATURES
            },
            finalized=finalized,
            epoch=image.highest_offset if finalized else -1,
        )

    # --- replication ------------------------------------------------------------------------

    fetchers: ReplicaFetcherManager
    isr_changes: AlterPartitionManager

    def _start_replication(self) -> None:
        """Follower fetchers and the ISR changes' sender, then the metadata publisher that
        makes this broker leader or follower of its partitions (after the log publisher, so
        that the logs exist)."""
        self.isr_changes = AlterPartitionManager(
            node_id=self.node_id,
            broker_epoch=lambda: self.broker_epoch,
            channel=self.parts.channel,
            replica_manager=self.replica_manager,
            timeout=self.config.get_int("replica.lag.time.max.ms") / 1000,
        )
        self.replica_manager.isr_change_sender = self.isr_changes.send
        windows = {
            "windows": self.config.get_int("replication.quota.window.num"),
            "window_ms": self.config.get_int("replication.quota.window.size.seconds") * 1000,
        }
        self.quotas = {
            direction: ReplicationQuota(self.clock, **windows)
            for direction in ("leader", "follower")
        }
        self._quota_configs: object = None
        self.replica_manager.leader_quota = self.quotas["leader"]
        self.fetchers = ReplicaFetcherManager(
            node_id=self.node_id,
            broker_epoch=lambda: self.broker_epoch,
            replica_manager=self.replica_manager,
            clients=NodeClients(
                self._inter_broker_address,
                client_id=f"strom-replica-fetcher-{self.node_id}",
                security=self.parts.inter_broker_security,
            ),
            settings=FetcherSettings.from_config(self.config),
            clock=self.clock,
            quota=self.quotas["follower"],
        )

    def _apply_leadership(self, delta: MetadataDelta, image: MetadataImage) -> None:
        if image.configs is not self._quota_configs:  # settings changed: the throttles too
            self._quota_configs = image.configs
            server = self.topic_configs.server_config(image)
            for direction, quota in self.quotas.items():
                quota.configure(*quota_settings(server, image, self.node_id, direction))
        self.fetchers.apply(self.replica_manager.apply_metadata(delta, image))

    def _inter_broker_address(self, broker_id: int) -> tuple[str, int] | None:
        broker = self.metadata.image.cluster.brokers.get(broker_id)
        name = self.parts.node.inter_broker_listener_name
        endpoint = None if broker is None or name is None else broker.endpoint(name)
        return None if endpoint is None else (endpoint.host, endpoint.port)

    # --- consumer groups ----------------------------------------------------------------------

    group_coordinator: GroupCoordinatorRuntime
    """The group coordinator and its ``__consumer_offsets`` partitions."""

    def _register_group_handlers(self) -> None:
        """The group coordinator (on ``__consumer_offsets``; its timer task starts now, its
        loads once its publisher is installed) and the group APIs."""
        self.group_coordinator = GroupCoordinatorRuntime(
            config=self.config,
            replica_manager=self.replica_manager,
            auto_topics=self.auto_topics,
            clock=self.clock,
        )
        self.group_coordinator.start()
        self.registry.register_lazy(GROUP_APIS, self._group_handlers)

    def _group_handlers(self) -> list[Handler]:
        from strom.server.handlers import (  # noqa: PLC0415 - on first use
            delete_groups,
            describe_groups,
            find_coordinator,
            heartbeat,
            join_group,
            leave_group,
            list_groups,
            offset_commit,
            offset_delete,
            offset_fetch,
            sync_group,
            txn_offset_commit,
        )

        runtime = self.group_coordinator
        return [
            find_coordinator.FindCoordinatorHandler(
                runtime, leader_address=self._leader_address, transactions=self.txn_coordinator
            ),
            join_group.JoinGroupHandler(runtime),
            sync_group.SyncGroupHandler(runtime),
            heartbeat.HeartbeatHandler(runtime),
            leave_group.LeaveGroupHandler(runtime),
            offset_commit.OffsetCommitHandler(runtime),
            offset_fetch.OffsetFetchHandler(runtime),
            describe_groups.DescribeGroupsHandler(runtime),
            list_groups.ListGroupsHandler(runtime),
            delete_groups.DeleteGroupsHandler(runtime),
            offset_delete.OffsetDeleteHandler(runtime),
            txn_offset_commit.TxnOffsetCommitHandler(
                runtime, verify=self.txn_coordinator.verify_produce
            ),
        ]

    # --- transactions -------------------------------------------------------------------------

    txn_coordinator: TxnCoordinatorRuntime
    """The transaction coordinator and its ``__transaction_state`` partitions."""

    def _register_txn_handlers(self) -> None:
        """The transaction coordinator (on ``__transaction_state``; its timer task starts now,
        its loads once its publisher is installed) and its APIs."""
        self.txn_coordinator.start()
        self.registry.register_lazy(TXN_APIS, self._txn_handlers)

    def _txn_handlers(self) -> list[Handler]:
        from strom.server.handlers import (  # noqa: PLC0415 - on first use
            add_offsets_to_txn,
            add_partitions_to_txn,
            describe_transactions,
            end_txn,
            init_producer_id,
            list_transactions,
        )

        runtime = self.txn_coordinator
        offsets_partitions = self.group_coordinator.coordinator.partition_count
        return [
            init_producer_id.InitProducerIdHandler(self.producer_ids, runtime),
            add_partitions_to_txn.AddPartitionsToTxnHandler(runtime),
            add_offsets_to_txn.AddOffsetsToTxnHandler(
                runtime,
                offsets_partitions=offsets_partitions
                or self.config.get_int("offsets.topic.num.partitions"),
            ),
            end_txn.EndTxnHandler(runtime),
            describe_transactions.DescribeTransactionsHandler(runtime),
            list_transactions.ListTransactionsHandler(runtime),
        ]

    def _leader_address(self, tp: TopicPartition, listener_name: str) -> BrokerAddress | None:
        image = self.metadata.image
        registration = image.topics.get_partition(tp)
        if registration is None or not registration.has_leader:
            return None
        for address in broker_addresses(image, listener_name):
            if address.node_id == registration.leader:
                return address
        return None

    async def bind(self) -> None:
        """Take every broker listener's address (OSError when one is in use) before anything
        else starts; connections are accepted once :meth:`start` has the handlers ready."""
        settings = ConnectionSettings(
            max_request_size=self.config.get_int("socket.request.max.bytes"),
            failed_authentication_delay_ms=self.config.get_int(
                "connection.failed.authentication.delay.ms"
            ),
            metrics=self.parts.metrics,
        )
        listeners = self.parts.node.broker_listeners
        connection_quotas = ConnectionQuotas(self.parts.connection_limits)
        for config in listeners:
            listener = Listener(
                name=config.name,
                address=config.address,
                registry=self.registry,
                settings=settings,
                faults=self.parts.faults,
                security=self.parts.security.get(config.name, ListenerSecurity()),
                client_quotas=self.client_quotas,
                connection_quotas=connection_quotas,
            )
            await listener.bind()
            self._listeners.append(listener)

    async def _start_listeners(self) -> None:
        for listener in self._listeners:
            await listener.start()

    async def _register(self) -> None:
        """Register under the advertised listeners (a new broker epoch), and heartbeat from now
        on (asking to stay fenced until :meth:`start` is ready)."""
        self.lifecycle.endpoints = tuple(
            BrokerEndpoint(
                listener.name,
                (address := self.advertised_address(listener.name)).host,
                address.port,
                SecurityProtocol[config.security_protocol],
            )
            for listener, config in zip(
                self._listeners, self.parts.node.broker_listeners, strict=True
            )
        )
        try:
            await self.lifecycle.register()
        except RegistrationFailed as error:
            raise BrokerStartError(str(error)) from None
        self.lifecycle.start()

    async def _wait_unfenced(self, deadline: float, timeout: float) -> None:
        """Until the controller has unfenced this broker and the image says so (what Metadata
        answers from: its first answer lists this broker)."""
        message = f"the controller did not unfence broker {self.node_id} within {timeout:g} s"
        try:
            async with asyncio.timeout_at(deadline):
                await self.lifecycle.wait_unfenced(timeout)
        except TimeoutError:
            raise BrokerStartError(message) from None
        await self._wait_for_image(
            deadline,
            lambda broker: broker.epoch == self.broker_epoch and not broker.fenced,
            message,
        )

    async def _wait_for_image(
        self, deadline: float, condition: Callable[[BrokerRegistration], bool], message: str
    ) -> None:
        """Until the image's registration of this broker satisfies ``condition``
        (``BrokerStartError(message)`` at ``deadline``)."""

        def holds(image: MetadataImage) -> bool:
            broker = image.cluster.brokers.get(self.node_id)
            return broker is not None and condition(broker)

        remaining = deadline - asyncio.get_running_loop().time()
        if not await self.parts.waiter.wait_for(holds, max(remaining, 0.0)):
            raise BrokerStartError(message)

    # --- background work ---------------------------------------------------------------------

    def _start_background_tasks(self) -> None:
        periodic: list[tuple[str, str, Callable[[], object]]] = [
            ("retention", "log.retention.check.interval.ms", self._run_retention),
            ("checkpoint", "log.flush.offset.checkpoint.interval.ms", self.log_manager.checkpoint),
            (
                "high-watermark-checkpoint",
                "replica.high.watermark.checkpoint.interval.ms",
                self._checkpoint_high_watermarks,
            ),
            ("isr-check", "replica.lag.time.max.ms", self.replica_manager.check_isr),
            ("flush", "log.flush.scheduler.interval.ms", self.log_manager.flush_dirty),
            (
                "producer-expiration",
                "producer.id.expiration.check.interval.ms",
                self._remove_expired_producers,
            ),
        ]
        for name, setting, work in periodic:
            interval_ms = self.config.get_int(setting)
            if name == "isr-check":
                interval_ms //= 2  # as Kafka's isr-expiration task
            if 0 < interval_ms <= _MAX_TIMER_MS:
                self._tasks.append(
                    asyncio.get_running_loop().create_task(
                        self._every(interval_ms, name, work), name=f"strom-{name}"
                    )
                )
        if self.config.get_bool("log.cleaner.enable"):
            self.log_cleaner.start(
                backoff_ms=self.config.get_int("log.cleaner.backoff.ms"),
                logs=self.log_manager.all,
                high_watermarks=self.high_watermarks,
            )

    @staticmethod
    async def _every(interval_ms: int, name: str, work: Callable[[], object]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                done = work()
                if inspect.isawaitable(done):
                    await done
            except Exception:
                log.exception("periodic %s failed", name)

    async def _checkpoint_high_watermarks(self) -> None:
        """The high watermarks read here, their file written (and fsynced) off the loop."""
        await asyncio.to_thread(self.replica_manager.high_watermark_checkpoint())

    def high_watermarks(self) -> Mapping[TopicPartition, int]:
        """Partition -> high watermark, of the partitions this broker leads (the replica
        manager's; the metadata log is not among them)."""
        return self.replica_manager.high_watermarks()

    def _run_retention(self) -> None:
        deleted = self.log_manager.run_retention(self.clock.now_ms(), self.high_watermarks())
        for tp, count in sorted(deleted.items()):
            log.info("retention deleted %d segment(s) of %s", count, tp)

    def _remove_expired_producers(self) -> None:
        self.log_manager.remove_expired_producers(
            self.clock.now_ms(), expiration_ms=self.config.get_int("producer.id.expiration.ms")
        )

    # --- stop ------------------------------------------------------------------------------

    async def stop(self, *, timeout: float = 10.0) -> None:
        """Controlled shutdown, then stop accepting, finish in-flight requests within
        ``timeout`` seconds, and stop the background work (the node closes the logs)."""
        await self.lifecycle.controlled_shutdown(timeout=min(timeout, 5.0))
        listeners, self._listeners = self._listeners, []
        if hasattr(self, "replica_manager"):
            # Long polls answer now rather than at their max wait; later ones at once.
            self.replica_manager.shutdown_purgatories()
        for listener in listeners:
            await listener.stop(timeout=timeout)
        await self.lifecycle.stop()
        if hasattr(self, "fetchers"):
            await self.fetchers.stop()
            await self.isr_changes.stop()
            self.replica_manager.checkpoint_high_watermarks()
        await self.log_cleaner.stop()
        if hasattr(self, "group_coordinator"):
            await self.group_coordinator.stop()
        if hasattr(self, "txn_coordinator"):
            await self.txn_coordinator.stop()
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
