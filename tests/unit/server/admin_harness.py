"""A node's metadata path without sockets: logs, metadata log, controller, publisher, handlers.

``AdminNode`` wires the pieces as ``Broker.start`` does (data directory in a temporary path, a
manual clock, a seeded controller) so handlers can be driven request by request, through the
same encode/decode path the network layer uses.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from strom.common.clock import ManualClock
from strom.config import ServerConfig
from strom.controller import (
    SUPPORTED_FEATURES,
    BrokerRegistrationRequest,
    ControllerSettings,
    QuorumController,
)
from strom.metadata import BrokerEndpoint, MetadataImage, MetadataLoader
from strom.protocol.api import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    make_request_header,
)
from strom.server.auto_topics import AutoTopicCreator
from strom.server.config_entries import ConfigDescriber
from strom.server.controller_server import ControllerServer
from strom.server.handlers.alter_configs import AlterConfigsHandler
from strom.server.handlers.create_partitions import CreatePartitionsHandler
from strom.server.handlers.create_topics import CreateTopicsHandler
from strom.server.handlers.delete_topics import DeleteTopicsHandler
from strom.server.handlers.describe_cluster import DescribeClusterHandler
from strom.server.handlers.describe_configs import DescribeConfigsHandler
from strom.server.handlers.describe_log_dirs import DescribeLogDirsHandler
from strom.server.handlers.incremental_alter_configs import IncrementalAlterConfigsHandler
from strom.server.handlers.init_producer_id import InitProducerIdHandler
from strom.server.handlers.metadata import MetadataHandler
from strom.server.handlers.registry import Handler, HandlerRegistry, RequestContext
from strom.server.log_configs import TopicConfigResolver
from strom.server.log_publisher import LogPublisher
from strom.server.metadata_log import METADATA_LOG_CONFIG, METADATA_PARTITION, PartitionMetadataLog
from strom.server.producer_ids import ProducerIdManager
from strom.server.replica_manager import ReplicaManager
from strom.server.txn_coordinator_runtime import TxnCoordinatorRuntime
from strom.storage.log_manager import LogManager

NODE_ID = 1
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
HOST, PORT = "broker.test", 9092


class AdminNode:
    """One node's storage, metadata and admin handlers, on ``data_dir``."""

    def __init__(self, data_dir: Path, overrides: Mapping[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.config = ServerConfig({"log.dirs": str(data_dir), **(overrides or {})})
        self.clock = ManualClock()
        self.resolver = TopicConfigResolver(self.config, node_id=NODE_ID)
        default = self.resolver.default_log_config()
        self.log_manager = LogManager(
            data_dir,
            self.clock,
            config_for=lambda tp: METADATA_LOG_CONFIG if tp == METADATA_PARTITION else default,
        )
        partition = self.log_manager.get_or_create(METADATA_PARTITION, METADATA_LOG_CONFIG)
        self.metadata_log = PartitionMetadataLog(partition, clock=self.clock)
        self.loader = MetadataLoader()
        self.loader.catch_up(self.metadata_log)
        self.controller = ControllerServer(
            QuorumController(ControllerSettings.from_config(self.config), random=random.Random(7)),
            loader=self.loader,
            log=self.metadata_log,
        )
        self.publisher = LogPublisher(
            self.log_manager, self.resolver, node_id=NODE_ID, internal_logs={METADATA_PARTITION}
        )
        if not self.loader.image.is_empty:
            self.publisher.remove_strays(self.loader.image)
        self.loader.install_publisher(self.publisher)
        self.controller.bootstrap()
        reply = self.controller.register_broker_now(
            BrokerRegistrationRequest(
                broker_id=NODE_ID,
                incarnation_id=uuid.uuid4(),
                endpoints=[BrokerEndpoint("PLAINTEXT", HOST, PORT)],
                features=SUPPORTED_FEATURES,
            )
        )
        self.broker_epoch = reply.broker_epoch
        assert self.controller.unfence_broker_now(
            broker_id=NODE_ID, broker_epoch=reply.broker_epoch
        ).is_success
        describer = ConfigDescriber(self.resolver)
        self.registry = HandlerRegistry()
        handlers: list[Handler] = [
            MetadataHandler(
                self.loader,
                cluster_id=CLUSTER_ID,
                controller_id=NODE_ID,
                auto_topics=AutoTopicCreator(self.controller, self.resolver),
            ),
            CreateTopicsHandler(self.controller, describer),
            DeleteTopicsHandler(self.controller),
            CreatePartitionsHandler(self.controller),
            DescribeConfigsHandler(self.loader, describer),
            AlterConfigsHandler(self.controller),
            IncrementalAlterConfigsHandler(self.controller),
            DescribeClusterHandler(self.loader, cluster_id=CLUSTER_ID, controller_id=NODE_ID),
            DescribeLogDirsHandler(
                self.log_manager, data_dir=data_dir, internal_logs={METADATA_PARTITION}
            ),
            InitProducerIdHandler(
                ProducerIdManager(
                    self.controller, broker_id=NODE_ID, broker_epoch=lambda: self.broker_epoch
                ),
                TxnCoordinatorRuntime(  # never started: no __transaction_state here
                    config=self.config,
                    replica_manager=ReplicaManager(
                        node_id=NODE_ID,
                        log_manager=self.log_manager,
                        metadata=self.loader,
                        config=self.config,
                        clock=self.clock,
                        topic_config=self.resolver.topic_config,
                    ),
                    auto_topics=AutoTopicCreator(self.controller, self.resolver),
                    clock=self.clock,
                ),
            ),
        ]
        for handler in handlers:
            self.registry.register(handler)

    @property
    def image(self) -> MetadataImage:
        return self.loader.image

    def close(self) -> None:
        self.log_manager.close(broker_epoch=self.broker_epoch)

    def exchange(self, body: Any) -> tuple[Any, bytes]:
        """Send ``body`` through the whole codec: the decoded response and its frame bytes."""
        header = make_request_header(body, correlation_id=42, client_id="test")
        request = decode_request(
            encode_request(header=header, body=body), versions=self.registry.versions
        )
        handler = self.registry.get(request.api_key)
        assert handler is not None
        context = RequestContext(request=request, client_address="test:1", connection_id="t")
        result = asyncio.run(handler.handle(context))
        frame = encode_response(correlation_id=42, body=result)  # type: ignore[arg-type]
        correlation_id, decoded = decode_response(
            frame, api_key=request.api_key, api_version=request.api_version
        )
        assert correlation_id == 42
        assert decoded == result, "the response does not survive encoding"
        assert encode_response(correlation_id=42, body=decoded) == frame
        return decoded, frame

    def request(self, body: Any) -> Any:
        return self.exchange(body)[0]
