"""The broker: the composition root that wires settings, storage, metadata, handlers and network.

A single node is broker and controller of a one-voter cluster. What ``start`` does, in order:

1. ``meta.properties``: check the data directory belongs to this node and cluster (or create it).
2. **Load logs**: ``self.log_manager`` opens every partition directory (recovering after a crash)
   with the static topic defaults; the metadata says which topic settings they really have.
3. **Load metadata**: ``self.metadata_log`` (partition ``__cluster_metadata-0``) is replayed into
   ``self.metadata`` (the ``MetadataLoader``; ``self.metadata.image`` is the current image);
   the log publisher then creates the logs the image has and the log manager lacks, applies
   topic settings, and deletes logs of topics that no longer exist; a new cluster gets its
   bootstrap records. ``self.controller`` (``ControllerServer``) commits every later change.
4. **Handlers** are registered (``self.registry``); ApiVersions advertises exactly them. The
   group coordinator loads ``__consumer_offsets``, then the transaction coordinator
   ``__transaction_state`` (finishing transactions a crash left half done).
5. **Listener**: start serving; then this node registers with the controller under its
   advertised address (a new broker epoch every start, as Kafka brokers do) and is unfenced.
6. Background tasks: retention every ``log.retention.check.interval.ms`` and the recovery-point
   checkpoint every ``log.flush.offset.checkpoint.interval.ms`` (and ``log.flush.scheduler.
   interval.ms`` when set), idle idempotent producers forgotten every ``producer.id.expiration.
   check.interval.ms``; the log cleaner (``self.log_cleaner``, compacted topics, every
   ``log.cleaner.backoff.ms``) when ``log.cleaner.enable``; then the ready line.

``stop`` reverses it: stop the listener (in-flight requests are answered), stop the background
tasks (waiting for a cleaning pass in flight), then close the logs, which flushes them, writes
the checkpoints and the clean-shutdown marker.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from strom.common import Clock, SystemClock, TopicPartition
from strom.config import ConfigError, ServerConfig
from strom.controller import (
    SUPPORTED_FEATURES,
    BrokerRegistrationRequest,
    ControllerSettings,
    QuorumController,
)
from strom.metadata import BrokerEndpoint, MetadataLoader
from strom.protocol.kafka_releases import release_versions
from strom.server.auto_topics import AutoTopicCreator
from strom.server.cleaner_service import CleanerService
from strom.server.config_entries import ConfigDescriber
from strom.server.controller_server import ControllerServer
from strom.server.fetch_session import DEFAULT_SESSION_CACHE_SLOTS, FetchSessionCache
from strom.server.group_coordinator_runtime import GroupCoordinatorRuntime
from strom.server.handlers.add_offsets_to_txn import AddOffsetsToTxnHandler
from strom.server.handlers.add_partitions_to_txn import AddPartitionsToTxnHandler
from strom.server.handlers.alter_configs import AlterConfigsHandler
from strom.server.handlers.api_versions import ApiVersionsHandler
from strom.server.handlers.common import LISTENER_NAME, BrokerAddress, broker_addresses
from strom.server.handlers.create_partitions import CreatePartitionsHandler
from strom.server.handlers.create_topics import CreateTopicsHandler
from strom.server.handlers.delete_groups import DeleteGroupsHandler
from strom.server.handlers.delete_records import DeleteRecordsHandler
from strom.server.handlers.delete_topics import DeleteTopicsHandler
from strom.server.handlers.describe_cluster import DescribeClusterHandler
from strom.server.handlers.describe_configs import DescribeConfigsHandler
from strom.server.handlers.describe_groups import DescribeGroupsHandler
from strom.server.handlers.describe_log_dirs import DescribeLogDirsHandler
from strom.server.handlers.describe_transactions import DescribeTransactionsHandler
from strom.server.handlers.end_txn import EndTxnHandler
from strom.server.handlers.fetch import FetchHandler
from strom.server.handlers.find_coordinator import FindCoordinatorHandler
from strom.server.handlers.heartbeat import HeartbeatHandler
from strom.server.handlers.incremental_alter_configs import IncrementalAlterConfigsHandler
from strom.server.handlers.init_producer_id import InitProducerIdHandler
from strom.server.handlers.join_group import JoinGroupHandler
from strom.server.handlers.leave_group import LeaveGroupHandler
from strom.server.handlers.list_groups import ListGroupsHandler
from strom.server.handlers.list_offsets import ListOffsetsHandler
from strom.server.handlers.list_transactions import ListTransactionsHandler
from strom.server.handlers.metadata import MetadataHandler
from strom.server.handlers.offset_commit import OffsetCommitHandler
from strom.server.handlers.offset_delete import OffsetDeleteHandler
from strom.server.handlers.offset_fetch import OffsetFetchHandler
from strom.server.handlers.offset_for_leader_epoch import OffsetForLeaderEpochHandler
from strom.server.handlers.produce import ProduceHandler
from strom.server.handlers.registry import HandlerRegistry
from strom.server.handlers.sync_group import SyncGroupHandler
from strom.server.handlers.txn_offset_commit import TxnOffsetCommitHandler
from strom.server.handlers.write_txn_markers import WriteTxnMarkersHandler
from strom.server.log_configs import TopicConfigResolver
from strom.server.log_publisher import LogPublisher
from strom.server.meta_properties import MetaProperties, ensure_meta_properties
from strom.server.metadata_log import METADATA_LOG_CONFIG, METADATA_PARTITION, PartitionMetadataLog
from strom.server.network.connection import ConnectionSettings
from strom.server.network.faults import Faults
from strom.server.network.listener import HostPort, Listener
from strom.server.producer_ids import ProducerIdManager
from strom.server.purgatory import DelayedFetch, DelayedProduce, Purgatory
from strom.server.replica_manager import ReplicaManager
from strom.server.txn_coordinator_runtime import TxnCoordinatorRuntime
from strom.storage.log_config import LogConfig
from strom.storage.log_manager import LogManager

__all__ = ["Broker", "BrokerStartError", "parse_listeners"]

log = logging.getLogger(__name__)

_MAX_TIMER_MS = 2**31 - 1
"""Periodic tasks with a longer interval (Kafka's Long.MAX_VALUE "never") are not scheduled."""


class BrokerStartError(RuntimeError):
    """The broker could not join its own cluster (registration refused)."""


def parse_listeners(text: str) -> HostPort:
    """The address of Kafka's ``listeners`` setting (``PLAINTEXT://host:port``); one for now."""
    entries = [entry.strip() for entry in text.split(",") if entry.strip()]
    if len(entries) != 1:
        raise ConfigError("listeners", f"strom serves exactly one listener, got {text!r}")
    scheme, sep, address = entries[0].rpartition("://")
    if sep and scheme.upper() != "PLAINTEXT":
        raise ConfigError("listeners", f"only PLAINTEXT listeners are supported, got {scheme}")
    try:
        return HostPort.parse(address)
    except ValueError as error:
        raise ConfigError("listeners", str(error)) from None


def data_dir_of(config: ServerConfig) -> Path:
    """The single data directory of Kafka's ``log.dirs`` setting."""
    text = config.get_str("log.dirs").strip()
    if not text or "," in text:
        raise ConfigError("log.dirs", f"strom uses exactly one data directory, got {text!r}")
    return Path(text)


def _advertised_listener(config: ServerConfig) -> HostPort | None:
    text = config["advertised.listeners"]
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return parse_listeners(text)
    except ConfigError as error:
        raise ConfigError("advertised.listeners", error.reason) from None


class Broker:
    """A single node: broker and controller of a one-voter cluster."""

    # Set by start() (see the module doc for the order); read them only once it has returned.
    log_manager: LogManager
    """Every partition log of the data directory (the metadata log among them)."""
    log_cleaner: CleanerService
    """Compacts ``cleanup.policy=compact`` logs; forgets deleted ones."""
    metadata_log: PartitionMetadataLog
    controller: ControllerServer
    """Runs controller operations one at a time and commits their records."""
    producer_ids: ProducerIdManager

    def __init__(
        self,
        config: ServerConfig,
        *,
        emulate_kafka_version: str | None = None,
        faults: Faults | None = None,
    ) -> None:
        """``emulate_kafka_version`` ("2.8", "3.6", ...): advertise and serve only the API
        versions that Apache Kafka release did (ValueError for an unknown release).
        ``faults``: what tests inject (``strom.testing``)."""
        self.config = config
        self.clock: Clock = SystemClock()
        self.data_dir = data_dir_of(config).absolute()
        self.listener_address = parse_listeners(config.get_str("listeners"))
        self._advertised_listener = _advertised_listener(config)
        self.node_id = config.get_int("node.id")
        self.topic_configs = TopicConfigResolver(config, node_id=self.node_id)
        """Effective topic settings and log configs as of a metadata image."""
        self.metadata = MetadataLoader()
        """The metadata image (``self.metadata.image``) and its publishers."""
        self.registry = HandlerRegistry(
            ceiling=None
            if emulate_kafka_version is None
            else release_versions(emulate_kafka_version)
        )
        self.faults = faults
        self.registry.register(ApiVersionsHandler(self.registry))
        self.broker_epoch = -1
        """This node's broker epoch, given by its registration at start."""
        self._listener: Listener | None = None
        self._meta: MetaProperties | None = None
        self._started = False
        self._closed = False
        self._ready = False
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def cluster_id(self) -> str:
        if self._meta is None:
            raise RuntimeError("the broker is not started")
        return self._meta.cluster_id

    @property
    def bound_address(self) -> HostPort:
        """Where the listener is bound (the real port when the configured one is 0)."""
        if self._listener is None:
            raise RuntimeError("the broker is not started")
        return self._listener.bound_address

    @property
    def advertised_address(self) -> HostPort:
        """The address clients are given: ``advertised.listeners`` if set, else the listener's
        (with the bound port when the configured one is 0)."""
        if self._listener is None:
            raise RuntimeError("the broker is not started")
        own = self._listener.advertised_address
        configured = self._advertised_listener
        if configured is None:
            return own
        return HostPort(configured.host or own.host, configured.port or own.port)

    # --- start -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Load logs and metadata, start serving, join the cluster, log the ready line.

        Raises ``MetaPropertiesError`` for a data directory of another node or cluster,
        ``OSError`` when the address cannot be bound, ``BrokerStartError`` when the controller
        refuses the registration.
        """
        if self._started:
            raise RuntimeError("the broker is already started")
        self._started = True
        started = time.monotonic()
        cluster_id = self.config["cluster.id"]
        self._meta = ensure_meta_properties(
            self.data_dir,
            node_id=self.node_id,
            cluster_id=cluster_id if isinstance(cluster_id, str) and cluster_id else None,
        )
        self._load_logs()
        try:
            self._load_metadata()
            self._register_handlers()
            self._register_data_handlers()
            self._register_group_handlers()
            self._register_txn_handlers()
            await self._start_listener()
            self._join_cluster()
        except BaseException:
            await self.stop()
            raise
        self._start_background_tasks()
        image = self.metadata.image
        log.info(
            "ready: listening on %s, data dir %s, cluster id %s, node id %d "
            "(%d topic(s), broker epoch %d, %.0f ms)",
            self.bound_address,
            self.data_dir,
            self._meta.cluster_id,
            self.node_id,
            len(image.topics),
            self.broker_epoch,
            (time.monotonic() - started) * 1000,
        )
        self._ready = True

    def _load_logs(self) -> None:
        default = self.topic_configs.default_log_config()

        def initial_config(tp: TopicPartition) -> LogConfig:
            return METADATA_LOG_CONFIG if tp == METADATA_PARTITION else default

        self.log_cleaner = CleanerService(clock=self.clock)
        self.log_manager = LogManager(
            self.data_dir,
            self.clock,
            config_for=initial_config,
            on_delete=self.log_cleaner.forget,
        )
        logs = self.log_manager.all()
        if logs and not self.log_manager.had_clean_shutdown:
            log.warning(
                "recovered %d log(s) after an unclean shutdown (from their recovery points)",
                len(logs),
            )
        log.debug("loaded %d log(s) from %s", len(logs), self.data_dir)

    def _load_metadata(self) -> None:
        partition = self.log_manager.get_or_create(METADATA_PARTITION, METADATA_LOG_CONFIG)
        self.metadata_log = PartitionMetadataLog(partition, clock=self.clock)
        image = self.metadata.catch_up(self.metadata_log)
        controller = QuorumController(
            ControllerSettings.from_config(self.config), random=random.Random()
        )
        self.controller = ControllerServer(controller, loader=self.metadata, log=self.metadata_log)
        publisher = LogPublisher(
            self.log_manager,
            self.topic_configs,
            node_id=self.node_id,
            internal_logs={METADATA_PARTITION},
        )
        if image.is_empty:
            unknown = [tp for tp in self.log_manager.all() if tp != METADATA_PARTITION]
            if unknown:
                log.warning(
                    "the metadata log is empty but %d partition directories exist; they are "
                    "left alone and belong to no topic",
                    len(unknown),
                )
        else:
            publisher.remove_strays(image)
        self.metadata.install_publisher(publisher)
        self.controller.bootstrap()
        log.debug(
            "metadata loaded: %d topic(s), %d broker(s), up to offset %d (quorum epoch %d)",
            len(self.metadata.image.topics),
            len(self.metadata.image.cluster.brokers),
            self.metadata.image.highest_offset,
            self.metadata_log.epoch,
        )

    def _register_handlers(self) -> None:
        cluster_id = self.cluster_id
        describer = ConfigDescriber(self.topic_configs)
        self.producer_ids = ProducerIdManager(
            self.controller, broker_id=self.node_id, broker_epoch=lambda: self.broker_epoch
        )
        for handler in (
            MetadataHandler(
                self.metadata,
                cluster_id=cluster_id,
                controller_id=self.node_id,
                auto_topics=AutoTopicCreator(self.controller, self.topic_configs),
            ),
            CreateTopicsHandler(self.controller, describer),
            DeleteTopicsHandler(self.controller),
            CreatePartitionsHandler(self.controller),
            DescribeConfigsHandler(self.metadata, describer),
            AlterConfigsHandler(self.controller),
            IncrementalAlterConfigsHandler(self.controller),
            DescribeClusterHandler(
                self.metadata, cluster_id=cluster_id, controller_id=self.node_id
            ),
            DescribeLogDirsHandler(
                self.log_manager, data_dir=self.data_dir, internal_logs={METADATA_PARTITION}
            ),
        ):
            self.registry.register(handler)

    # --- data path: Produce, Fetch, ListOffsets, DeleteRecords, OffsetForLeaderEpoch --------

    replica_manager: ReplicaManager
    produce_purgatory: Purgatory[DelayedProduce]
    fetch_purgatory: Purgatory[DelayedFetch]

    def _register_data_handlers(self) -> None:
        """The replica manager, the purgatories it wakes, fetch sessions, and their handlers."""
        self.replica_manager = ReplicaManager(
            node_id=self.node_id,
            log_manager=self.log_manager,
            metadata=self.metadata,
            config=self.config,
            clock=self.clock,
            topic_config=self.topic_configs.topic_config,
        )
        self.produce_purgatory = Purgatory("Produce")
        self.fetch_purgatory = Purgatory("Fetch")
        self.replica_manager.add_high_watermark_listener(self.produce_purgatory.check_and_complete)
        self.replica_manager.add_high_watermark_listener(self.fetch_purgatory.check_and_complete)
        sessions = FetchSessionCache(random=random.Random(), max_slots=DEFAULT_SESSION_CACHE_SLOTS)
        self.txn_coordinator = TxnCoordinatorRuntime(
            config=self.config,
            replica_manager=self.replica_manager,
            auto_topics=AutoTopicCreator(self.controller, self.topic_configs),
            clock=self.clock,
        )
        for handler in (
            ProduceHandler(
                replica_manager=self.replica_manager,
                purgatory=self.produce_purgatory,
                verify_txn=self.txn_coordinator.verify_produce,
            ),
            FetchHandler(
                replica_manager=self.replica_manager,
                purgatory=self.fetch_purgatory,
                sessions=sessions,
                clock=self.clock,
            ),
            ListOffsetsHandler(replica_manager=self.replica_manager),
            DeleteRecordsHandler(replica_manager=self.replica_manager),
            WriteTxnMarkersHandler(replica_manager=self.replica_manager),
            OffsetForLeaderEpochHandler(replica_manager=self.replica_manager),
        ):
            self.registry.register(handler)

    # --- consumer groups ----------------------------------------------------------------------

    group_coordinator: GroupCoordinatorRuntime
    """The group coordinator and its ``__consumer_offsets`` partitions."""

    def _register_group_handlers(self) -> None:
        """The group coordinator (loading ``__consumer_offsets``) and the group APIs."""
        self.group_coordinator = GroupCoordinatorRuntime(
            config=self.config,
            replica_manager=self.replica_manager,
            auto_topics=AutoTopicCreator(self.controller, self.topic_configs),
            clock=self.clock,
        )
        self.group_coordinator.start()
        runtime = self.group_coordinator
        for handler in (
            FindCoordinatorHandler(
                runtime, own_address=self._own_address, transactions=self.txn_coordinator
            ),
            JoinGroupHandler(runtime),
            SyncGroupHandler(runtime),
            HeartbeatHandler(runtime),
            LeaveGroupHandler(runtime),
            OffsetCommitHandler(runtime),
            OffsetFetchHandler(runtime),
            DescribeGroupsHandler(runtime),
            ListGroupsHandler(runtime),
            DeleteGroupsHandler(runtime),
            OffsetDeleteHandler(runtime),
            TxnOffsetCommitHandler(runtime, verify=self.txn_coordinator.verify_produce),
        ):
            self.registry.register(handler)

    # --- transactions -------------------------------------------------------------------------

    txn_coordinator: TxnCoordinatorRuntime
    """The transaction coordinator and its ``__transaction_state`` partitions."""

    def _register_txn_handlers(self) -> None:
        """The transaction coordinator (loading ``__transaction_state`` after the groups, so
        that markers it writes for unfinished transactions reach loaded groups) and its APIs."""
        runtime = self.txn_coordinator
        runtime.start()
        offsets_partitions = self.group_coordinator.coordinator.partition_count
        for handler in (
            InitProducerIdHandler(self.producer_ids, runtime),
            AddPartitionsToTxnHandler(runtime),
            AddOffsetsToTxnHandler(
                runtime,
                offsets_partitions=offsets_partitions
                or self.config.get_int("offsets.topic.num.partitions"),
            ),
            EndTxnHandler(runtime),
            DescribeTransactionsHandler(runtime),
            ListTransactionsHandler(runtime),
        ):
            self.registry.register(handler)

    def _own_address(self) -> BrokerAddress | None:
        for address in broker_addresses(self.metadata.image):
            if address.node_id == self.node_id:
                return address
        return None

    async def _start_listener(self) -> None:
        listener = Listener(
            address=self.listener_address,
            registry=self.registry,
            settings=ConnectionSettings(
                max_request_size=self.config.get_int("socket.request.max.bytes")
            ),
            faults=self.faults,
        )
        await listener.start()
        self._listener = listener

    def _join_cluster(self) -> None:
        """Register under the advertised address (a new broker epoch) and get unfenced."""
        address = self.advertised_address
        reply = self.controller.register_broker_now(
            BrokerRegistrationRequest(
                broker_id=self.node_id,
                incarnation_id=uuid.uuid4(),
                endpoints=[BrokerEndpoint(LISTENER_NAME, address.host, address.port)],
                features=SUPPORTED_FEATURES,
            )
        )
        if reply.error.is_failure:
            raise BrokerStartError(f"broker registration refused: {reply.error.message}")
        self.broker_epoch = reply.broker_epoch
        unfenced = self.controller.unfence_broker_now(
            broker_id=self.node_id, broker_epoch=self.broker_epoch
        )
        if unfenced.is_failure:
            raise BrokerStartError(f"the broker cannot be unfenced: {unfenced.message}")
        log.debug(
            "registered as broker %d at %s, epoch %d", self.node_id, address, reply.broker_epoch
        )

    # --- background work ---------------------------------------------------------------------

    def _start_background_tasks(self) -> None:
        periodic: list[tuple[str, str, Callable[[], None]]] = [
            ("retention", "log.retention.check.interval.ms", self._run_retention),
            ("checkpoint", "log.flush.offset.checkpoint.interval.ms", self.log_manager.checkpoint),
            ("flush", "log.flush.scheduler.interval.ms", self.log_manager.flush_dirty),
            (
                "producer-expiration",
                "producer.id.expiration.check.interval.ms",
                self._remove_expired_producers,
            ),
        ]
        for name, setting, work in periodic:
            interval_ms = self.config.get_int(setting)
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
    async def _every(interval_ms: int, name: str, work: Callable[[], None]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                work()
            except Exception:
                log.exception("periodic %s failed", name)

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
        """Stop accepting, finish in-flight requests within ``timeout`` seconds, then close the
        logs (flush, checkpoints, clean-shutdown marker)."""
        listener, self._listener = self._listener, None
        if hasattr(self, "fetch_purgatory"):
            # Long polls answer now rather than at their max wait; later ones at once.
            self.fetch_purgatory.shutdown()
            self.produce_purgatory.shutdown()
        if listener is not None:
            await listener.stop(timeout=timeout)
        if hasattr(self, "log_cleaner"):
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
        if self._started and not self._closed and hasattr(self, "log_manager"):
            self._closed = True
            self.log_manager.close(broker_epoch=self.broker_epoch)
            if self._ready:
                log.info("logs flushed and checkpointed; stopped")
