"""One strom process: the roles its ``process.roles`` name, around one quorum client (Kafka's
``KafkaRaftServer`` with its ``SharedServer``).

What ``start`` does, in order:

1. ``meta.properties``: a node of a quorum needs a data directory formatted for it
   (``strom storage format``); the standalone node (no ``process.roles``) formats its own on the
   first start, as ``strom server`` always did.
2. **Logs**: the log manager opens every partition directory (recovering after a crash), the
   metadata log ``__cluster_metadata-0`` among them.
3. **Quorum**: the Raft client starts on the metadata log (a voter, or an observer on a
   broker-only node). A controller node first opens its controller listener (the quorum's and the
   brokers' requests arrive there) and attaches its ``ControllerServer``, which becomes active
   whenever this node leads the quorum.
4. **Catch-up**: the node waits until its committed image holds everything the quorum had
   committed when it first heard of it.
5. **Broker** (broker nodes): ``Broker.start`` (handlers, registration with the active
   controller, catch-up past it, publishers, unfenced, then its listeners accept connections);
   then the ready line.

``stop`` stops the broker (controlled shutdown), the controller and its listener, the quorum
client (a leader resigns), then closes the logs: flushed, checkpointed, clean-shutdown marker.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Final

from kio.static.protocol import RequestPayload, ResponsePayload

from strom.client.async_client import NodeClients
from strom.client.security import PLAINTEXT, ClientSecurity
from strom.common import Clock, TopicPartition
from strom.common.clock import system_clock
from strom.common.dir_lock import DirectoryInUseError, DirectoryLock
from strom.config import ConfigError, ServerConfig
from strom.config.broker import parse_http_address
from strom.controller import ControllerSettings, QuorumController
from strom.metadata import MetadataLoader
from strom.protocol.api import (
    KAFKA_CONTROLLER_VERSIONS,
    ApiKey,
    Request,
    make_request_header,
)
from strom.raft import RaftClient, RaftConfig
from strom.raft.voters import VoterSet
from strom.security.acls import AclOperation
from strom.security.scram import ScramCredential, ScramMechanism
from strom.server.api.handler_table import Handler, HandlerTable, RequestContext
from strom.server.api.metadata_view import MetadataWaiter
from strom.server.auth.authorizer import Authorizer, authorizer_settings
from strom.server.auth.listener_security import client_security, listener_security
from strom.server.bootstrap_metadata import (
    read_bootstrap_metadata_version,
    read_bootstrap_scram,
)
from strom.server.broker.broker import Broker, BrokerParts, BrokerStartError
from strom.server.broker.cleaner_service import CleanerService
from strom.server.channel.controller_channel import ControllerChannel
from strom.server.configs.config_entries import ConfigDescriber
from strom.server.configs.log_configs import TopicConfigResolver
from strom.server.configs.node_config import HostPort, NodeConfig
from strom.server.controller.controller_server import ControllerServer
from strom.server.controller.handlers.controller_table import (
    ADMIN_APIS,
    BROKER_REQUEST_APIS,
    broker_request_handlers,
    registration_handlers,
)
from strom.server.handlers.api_versions import ApiVersionsHandler
from strom.server.handlers.cluster_authorization import ClusterAuthorized
from strom.server.handlers.common import BrokerAddress
from strom.server.meta_properties import MetaProperties, ensure_meta_properties, load_formatted
from strom.server.metrics import NodeMetrics
from strom.server.metrics_http import MetricsServer
from strom.server.network.connection import ConnectionSettings
from strom.server.network.connection_quotas import connection_limits
from strom.server.network.faults import Faults
from strom.server.network.faults_file import faults_from_environment
from strom.server.network.listener import Listener
from strom.server.network.request_time import CONTROLLER_EXEMPT
from strom.server.network.sasl_authenticate import SaslAuthenticateHandler
from strom.server.network.sasl_handshake import SaslHandshakeHandler
from strom.server.node_metrics import NodeCollector, NodeParts
from strom.server.quotas.client_quotas import ClientQuotas
from strom.server.raft.quorum_voters import QuorumAddresses, directory_uuid
from strom.server.raft.raft_disk import BackgroundQuorumStateStore, DiskWriter
from strom.server.raft.raft_log import METADATA_LOG_CONFIG, METADATA_PARTITION, FileRaftLog
from strom.server.raft.raft_manager import (
    RAFT_API_OPERATIONS,
    RAFT_APIS,
    RaftApiHandler,
    RaftManager,
    SnapshotPolicy,
)
from strom.storage.corrupt_segment import CorruptSegmentError
from strom.storage.log_config import LogConfig
from strom.storage.log_manager import LogManager

__all__ = ["Node", "NodeStartError"]

log = logging.getLogger(__name__)

CATCH_UP_TIMEOUT: Final = 300.0
"""How long a node waits for the quorum's committed metadata before it gives up."""


class NodeStartError(RuntimeError):
    """The node could not start: its one-line reason is the message."""


def data_dir_of(config: ServerConfig) -> Path:
    """The single data directory of Kafka's ``log.dirs`` setting."""
    text = config.get_str("log.dirs").strip()
    if not text or "," in text:
        raise ConfigError("log.dirs", f"strom uses exactly one data directory, got {text!r}")
    return Path(text)


class Node:
    """A strom server process (see the module doc)."""

    log_manager: LogManager
    raft: RaftManager
    controller: ControllerServer | None = None
    _dir_lock: DirectoryLock | None = None
    broker: Broker | None = None

    def __init__(
        self,
        config: ServerConfig,
        *,
        emulate_kafka_version: str | None = None,
        faults: Faults | None = None,
    ) -> None:
        """Raises ConfigError for inconsistent settings; ``emulate_kafka_version``: advertise
        only that Apache Kafka release's API versions; ``faults``: injected by tests (else read
        from the file ``STROM_FAULTS_FILE`` names, if set)."""
        self.config = config
        self.node = NodeConfig.from_config(config)
        self.node_id = self.node.node_id
        self.clock: Clock = system_clock(dict(os.environ))
        self.data_dir = data_dir_of(config).absolute()
        self.metadata = MetadataLoader()
        self.security = {
            listener.name: listener_security(
                config, listener, scram_credentials=self._scram_credential
            )
            for listener in self.node.listeners
        }
        """Each listener's TLS and SASL, checked before anything starts."""
        self.connection_limits = connection_limits(
            config,
            [listener.name for listener in self.node.broker_listeners],
            self.node.inter_broker_listener_name,
        )
        acl_settings = authorizer_settings(config)
        self.authorizer = (
            None
            if acl_settings is None
            else Authorizer(acl_settings, lambda: self.metadata.image.acls.index)
        )
        """``authorizer.class.name``'s authorizer, shared by every listener."""
        self._controller_client, self._inter_broker_client = self._client_securities()
        self.controller_quotas = ClientQuotas.from_config(config, self.clock)
        """The controller role's client quotas: the request quota of the requests it serves and
        the mutation rate (the broker role has its own, as Kafka's roles do)."""
        self._emulate = emulate_kafka_version
        self._faults = faults if faults is not None else faults_from_environment(os.environ)
        self._meta: MetaProperties | None = None
        self._quorum_addresses = QuorumAddresses(
            voters=self.node.voters,
            bootstrap=self.node.bootstrap_servers,
            listener_name=(self.node.controller_listener_names or ("CONTROLLER",))[0],
            voter_set=self._latest_voters,
        )
        self._controller_listener: Listener | None = None
        metrics_listener = config["metrics.listener"]
        self.metrics = NodeMetrics() if metrics_listener else None
        """The node's counters; None when ``metrics.listener`` is unset (nothing counted)."""
        self._metrics_address = (
            parse_http_address(str(metrics_listener)) if metrics_listener else None
        )
        self._metrics_server: MetricsServer | None = None
        self._started = False
        self._ready = False
        self._closed = False

    def _client_securities(self) -> tuple[ClientSecurity, ClientSecurity]:
        """How this node logs in to the controllers, and to other brokers."""
        securities = []
        for listener, setting in (
            (next(iter(self.node.controller_listener_names), None), "controller"),
            (self.node.inter_broker_listener_name, "inter.broker"),
        ):
            securities.append(
                PLAINTEXT
                if listener is None
                else client_security(
                    self.config,
                    listener=listener,
                    protocol=self.node.security_protocol(listener),
                    mechanism_setting=f"sasl.mechanism.{setting}.protocol",
                )
            )
        return securities[0], securities[1]

    def _scram_credential(self, mechanism: ScramMechanism, user: str) -> ScramCredential | None:
        return self.metadata.image.scram.credential(mechanism, user)

    @property
    def cluster_id(self) -> str:
        if self._meta is None:
            raise RuntimeError("the node is not started")
        return self._meta.cluster_id

    @property
    def bound_address(self) -> HostPort:
        """The first listener: the broker's first, else the controller's."""
        if self.broker is not None:
            return self.broker.bound_address
        if self._controller_listener is not None:
            return self._controller_listener.bound_address
        raise RuntimeError("the node is not started")

    @property
    def bound_addresses(self) -> Mapping[str, HostPort]:
        addresses = dict(self.broker.bound_addresses) if self.broker is not None else {}
        if self._controller_listener is not None:
            addresses[self._controller_listener.name] = self._controller_listener.bound_address
        return addresses

    # --- start ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start every role; raises ``MetaPropertiesError``, ``OSError`` (an address cannot be
        bound) or ``NodeStartError``."""
        if self._started:
            raise RuntimeError("the node is already started")
        self._started = True
        started = time.monotonic()
        self._lock_data_dir()
        try:
            self._meta = self._check_data_dir()
            self._load_logs()
        except BaseException:
            if self._dir_lock is not None:
                self._dir_lock.release()
            raise
        try:
            await self._bind()
            self._build_quorum()
            if self.node.is_controller:
                await self._start_controller()
            self.raft.start()
            await self.raft.wait_caught_up(CATCH_UP_TIMEOUT)
            if self.broker is not None:
                await self.broker.start(
                    unfence_timeout=self.config.get_int("initial.broker.registration.timeout.ms")
                    / 1000
                )
        except TimeoutError:
            await self.stop()
            raise NodeStartError(
                f"the quorum's metadata did not arrive within {CATCH_UP_TIMEOUT:g} s: "
                "are the controllers of controller.quorum.voters running?"
            ) from None
        except BrokerStartError as error:
            await self.stop()
            raise NodeStartError(str(error)) from None
        except BaseException:
            await self.stop()
            raise
        image = self.metadata.image
        log.info(
            "ready: listening on %s, data dir %s, cluster id %s, node id %d "
            "(%s, %d topic(s), %.0f ms)",
            self.bound_address,
            self.data_dir,
            self.cluster_id,
            self.node_id,
            "+".join(sorted(self.node.roles)) if not self.node.standalone else "standalone",
            len(image.topics),
            (time.monotonic() - started) * 1000,
        )
        if self.metrics_url is not None:
            log.info("metrics: %s", self.metrics_url)
        self._ready = True

    def _lock_data_dir(self) -> None:
        """Own the data directory (the metadata log's too) for the process's life, or stop the
        start: a second process writing beside this one corrupts both (Kafka's ``.lock``).
        A missing directory of a quorum node is left alone: ``_check_data_dir`` says it is not
        formatted, and nothing is written."""
        if not self.node.standalone and not self.data_dir.is_dir():
            return
        try:
            self._dir_lock = DirectoryLock.acquire(self.data_dir, what="data directory")
        except DirectoryInUseError as error:
            raise NodeStartError(str(error)) from None

    def _check_data_dir(self) -> MetaProperties:
        if self.node.standalone:
            cluster_id = self.config["cluster.id"]
            return ensure_meta_properties(
                self.data_dir,
                node_id=self.node_id,
                cluster_id=cluster_id if isinstance(cluster_id, str) and cluster_id else None,
            )
        return load_formatted(self.data_dir, node_id=self.node_id)

    def _load_logs(self) -> None:
        resolver = TopicConfigResolver(self.config, node_id=self.node_id)
        default = resolver.default_log_config()
        metadata_config = METADATA_LOG_CONFIG

        def initial_config(tp: TopicPartition) -> LogConfig:
            return metadata_config if tp == METADATA_PARTITION else default

        self.log_cleaner = CleanerService(clock=self.clock)
        try:
            self.log_manager = LogManager(
                self.data_dir,
                self.clock,
                config_for=initial_config,
                on_delete=self.log_cleaner.forget,
            )
        except CorruptSegmentError as error:
            raise NodeStartError(error.message) from None
        logs = self.log_manager.all()
        if logs and not self.log_manager.had_clean_shutdown:
            log.warning(
                "recovered %d log(s) after an unclean shutdown (from their recovery points)",
                len(logs),
            )

    async def _bind(self) -> None:
        """Every listener takes its address first: a port in use stops the start at once."""
        if self.node.is_controller:
            self.controller_registry = HandlerTable(reference=KAFKA_CONTROLLER_VERSIONS)
            self.controller_registry.authorizer = self.authorizer
            self.metadata.install_publisher(
                lambda _delta, image: self.controller_quotas.on_image(image.client_quotas)
            )
            listener_config = self.node.controller_listener
            if listener_config is not None:  # the standalone node has none
                listener = Listener(
                    name=listener_config.name,
                    address=listener_config.address,
                    registry=self.controller_registry,
                    settings=ConnectionSettings(
                        max_request_size=self.config.get_int("socket.request.max.bytes"),
                        metrics=self.metrics,
                    ),
                    faults=self._faults,
                    security=self.security[listener_config.name],
                    client_quotas=self.controller_quotas,
                    request_exempt=CONTROLLER_EXEMPT,
                )
                await listener.bind()
                self._controller_listener = listener
        if self.node.is_broker:
            self.broker = self._make_broker()
            self.broker.registry.authorizer = self.authorizer
            await self.broker.bind()
        if self._metrics_address is not None and self.metrics is not None:
            await self._bind_metrics(*self._metrics_address, self.metrics)

    async def _bind_metrics(self, host: str, port: int, metrics: NodeMetrics) -> None:
        """The metrics listener: its families read this node's parts at each scrape."""
        collector = NodeCollector(
            NodeParts(
                metrics=metrics,
                image=lambda: self.metadata.image,
                raft=lambda: getattr(self, "raft", None),
                broker=lambda: self.broker,
                controller=lambda: self.controller,
                listeners=self._kafka_listeners,
            )
        )
        server = MetricsServer(host, port, collector.render)
        try:
            await server.bind()
        except OSError as error:
            raise NodeStartError(
                f"cannot listen on metrics.listener http://{host}:{port}: "
                f"{os.strerror(error.errno) if error.errno else error}"
            ) from None
        self._metrics_server = server

    def _kafka_listeners(self) -> list[Listener]:
        listeners = list(self.broker.listeners) if self.broker is not None else []
        if self._controller_listener is not None:
            listeners.append(self._controller_listener)
        return listeners

    @property
    def metrics_url(self) -> str | None:
        """Where the node's metrics are scraped (None: ``metrics.listener`` is unset)."""
        return None if self._metrics_server is None else self._metrics_server.url

    def _latest_voters(self) -> VoterSet:
        raft: RaftManager | None = getattr(self, "raft", None)
        return raft.client.voter_history.latest() if raft is not None else VoterSet(())

    def _build_quorum(self) -> None:
        partition = self.log_manager.get_or_create(METADATA_PARTITION, METADATA_LOG_CONFIG)
        state_writer = DiskWriter("strom-quorum-state")
        snapshot_writer = DiskWriter("strom-raft-snapshots")
        raft_log = FileRaftLog(partition, clock=self.clock, snapshot_writer=snapshot_writer)
        addresses = self._quorum_addresses
        clients = NodeClients(
            addresses.address_of,
            client_id=f"strom-node-{self.node_id}",
            request_timeout=self.config.get_int("controller.quorum.request.timeout.ms") / 1000,
            security=self._controller_client,
        )
        config = RaftConfig(
            election_timeout_ms=self.config.get_int("controller.quorum.election.timeout.ms"),
            fetch_timeout_ms=self.config.get_int("controller.quorum.fetch.timeout.ms"),
            election_backoff_max_ms=self.config.get_int(
                "controller.quorum.election.backoff.max.ms"
            ),
            request_timeout_ms=self.config.get_int("controller.quorum.request.timeout.ms"),
            retry_backoff_ms=self.config.get_int("controller.quorum.retry.backoff.ms"),
        )
        cluster_id = self.cluster_id

        def make_client(channel: RaftManager) -> RaftClient:
            return RaftClient(
                node_id=self.node_id,
                voters=self.node.voter_ids,
                cluster_id=cluster_id,
                log=raft_log,
                state_store=BackgroundQuorumStateStore(
                    partition.directory / "quorum-state", state_writer
                ),
                channel=channel,
                clock=self.clock,
                random=random.Random(),
                config=config,
                directory_id=directory_uuid(self._meta.directory_id if self._meta else None),
                bootstrap=addresses.bootstrap_ids,
            )

        self.raft = RaftManager(
            node_id=self.node_id,
            make_client=make_client,
            clients=clients,
            on_response=addresses.learn,
            state_writer=state_writer,
            writers=(state_writer, snapshot_writer),
            loader=self.metadata,
            clock=self.clock,
            snapshots=SnapshotPolicy(
                max_bytes_between=self.config.get_int(
                    "metadata.log.max.record.bytes.between.snapshots"
                ),
                max_interval_ms=self.config.get_int("metadata.log.max.snapshot.interval.ms"),
            ),
        )

    # --- the controller role -------------------------------------------------------------------

    async def _start_controller(self) -> None:
        controller = ControllerServer(
            QuorumController(ControllerSettings.from_config(self.config), random=random.Random()),
            node_id=self.node_id,
            quorum=self.raft,
            committed=self.metadata,
            clock=self.clock,
            session_timeout_ms=self.config.get_int("broker.session.timeout.ms"),
            close_grace_ms=self.config.get_int("broker.heartbeat.connection.close.grace.ms"),
            bootstrap_metadata_version=read_bootstrap_metadata_version(self.data_dir),
            bootstrap_scram=read_bootstrap_scram(self.data_dir),
            leader_balance_interval_ms=(
                self.config.get_int("leader.imbalance.check.interval.seconds") * 1000
                if self.config.get_bool("auto.leader.rebalance.enable")
                else None
            ),
        )
        self.controller = controller
        if self.config.get_bool("strom.balancer.enable"):
            from strom.server.controller.self_balancing import SelfBalancing  # noqa: PLC0415

            throttle = self.config.get_int("strom.balancer.throttle.bytes.per.second")
            heal = self.config.get_int("strom.balancer.heal.broker.failure.threshold.ms")
            balancing = SelfBalancing(
                controller,
                clock=self.clock,
                check_interval_ms=self.config.get_int("strom.balancer.check.interval.ms"),
                max_concurrent_moves=self.config.get_int("strom.balancer.max.concurrent.moves"),
                throttle=None if throttle < 0 else throttle,
                heal_after_ms=None if heal < 0 else heal,
            )
            controller.run_while_active("strom-self-balancing", balancing.run)
        registry = self.controller_registry
        registry.register(ApiVersionsHandler(registry))
        registry.register(SaslHandshakeHandler())
        registry.register(SaslAuthenticateHandler())
        handlers: list[Handler] = [
            *registration_handlers(controller, cluster_id=self.cluster_id),
            *(
                ClusterAuthorized(
                    RaftApiHandler(api_key, self.raft),
                    RAFT_API_OPERATIONS.get(api_key, AclOperation.CLUSTER_ACTION),
                )
                for api_key in RAFT_APIS
            ),
        ]
        registry.register_lazy(
            BROKER_REQUEST_APIS,
            partial(
                broker_request_handlers,
                controller,
                registry=registry,
                request_quota=self.controller_quotas.request,
                request_exempt=CONTROLLER_EXEMPT,
            ),
        )
        registry.register_lazy(
            (*ADMIN_APIS, ApiKey.DESCRIBE_CLUSTER), partial(self._admin_handlers, controller)
        )
        for handler in handlers:
            registry.register(handler)
        self.raft.attach_controller(controller)
        if self._controller_listener is not None:
            await self._controller_listener.start()

    def _admin_handlers(self, controller: ControllerServer) -> list[Handler]:
        """The controller's admin APIs and DescribeCluster (built on the first request to one
        of them, so their modules and kio schemas load then, not at start)."""
        from strom.server.controller.handlers.admin_table import (  # noqa: PLC0415 - first use
            admin_handlers,
        )
        from strom.server.handlers import describe_cluster  # noqa: PLC0415 - first use

        return [
            *admin_handlers(
                controller,
                describer=ConfigDescriber(TopicConfigResolver(self.config, node_id=self.node_id)),
                mutations=self.controller_quotas.controller_mutation,
                image=lambda: self.metadata.image,
            ),
            describe_cluster.DescribeClusterHandler(
                cluster_id=self.cluster_id,
                controller_id=lambda: self.raft.client.leader_and_epoch.leader_id or -1,
                nodes=lambda _listener, _fenced: self._controller_addresses(),
                endpoint_type=describe_cluster.CONTROLLERS_ENDPOINT,
            ),
        ]

    def _controller_addresses(self) -> list[BrokerAddress]:
        """The voters as other nodes reach them (``controller.quorum.voters``, or the latest
        voter set of a dynamic quorum)."""
        found = []
        for node_id in sorted(self.raft.client.voters):
            address = self._quorum_addresses.address_of(node_id)
            if address is not None:
                found.append(BrokerAddress(node_id, *address, None, False))
        return found

    async def _local_controller(self, body: RequestPayload) -> ResponsePayload:
        """A request to this process's controller, handled without a connection."""
        handler = self.controller_registry.get(ApiKey(body.__api_key__))
        assert handler is not None, body
        header = make_request_header(body, correlation_id=0, client_id=f"strom-node-{self.node_id}")
        context = RequestContext(
            request=Request(header=header, body=body),
            client_address="local",
            connection_id=f"local-{self.node_id}",
        )
        result = await handler.handle(context)
        assert not isinstance(result, bytes), result
        return result  # type: ignore[return-value]  # controller handlers answer bodies

    # --- the broker role -----------------------------------------------------------------------

    def _make_broker(self) -> Broker:
        channel = ControllerChannel(
            node_id=self.node_id,
            leader=lambda: self.raft.client.leader_and_epoch.leader_id,
            clients=NodeClients(
                self._quorum_addresses.address_of,
                client_id=f"strom-broker-{self.node_id}",
                security=self._controller_client,
            ),
            local=self._local_controller if self.node.is_controller else None,
            retry_backoff=self.config.get_int("controller.quorum.retry.backoff.ms") / 1000,
        )
        return Broker(
            BrokerParts(
                config=self.config,
                node=self.node,
                cluster_id=self.cluster_id,
                directory_id=self._meta.directory_id if self._meta else None,
                clock=self.clock,
                log_manager=self.log_manager,
                log_cleaner=self.log_cleaner,
                metadata=self.metadata,
                waiter=MetadataWaiter(self.metadata),
                channel=channel,
                metadata_offset=lambda: self.raft.committed_offset,
                internal_logs=frozenset({METADATA_PARTITION}),
                emulate_kafka_version=self._emulate,
                faults=self._faults,
                security=self.security,
                inter_broker_security=self._inter_broker_client,
                connection_limits=self.connection_limits,
                metrics=self.metrics,
            )
        )

    # --- stop ----------------------------------------------------------------------------------

    async def stop(self, *, timeout: float = 10.0) -> None:
        """Stop every role, then close the logs (flush, checkpoints, clean-shutdown marker)."""
        metrics_server, self._metrics_server = self._metrics_server, None
        if metrics_server is not None:
            await metrics_server.stop()
        if self.broker is not None:
            await self.broker.stop(timeout=timeout)
        listener, self._controller_listener = self._controller_listener, None
        if listener is not None:
            await listener.stop(timeout=timeout)
        if hasattr(self, "raft"):
            await self.raft.stop()
        if self.controller is not None:
            await self.controller.stop()
        if self._started and not self._closed and hasattr(self, "log_manager"):
            self._closed = True
            broker_epoch = self.broker.broker_epoch if self.broker is not None else -1
            self.log_manager.close(broker_epoch=broker_epoch)
            if self._ready:
                log.info("logs flushed and checkpointed; stopped")
        if self._dir_lock is not None:
            self._dir_lock.release()
