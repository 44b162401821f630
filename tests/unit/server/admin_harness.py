"""A node's admin path without clients: a real standalone ``Node`` driven request by request.

``AdminNode`` starts the node on a private event loop in this thread (its broker listener binds
a free port, but requests go straight to the broker's handlers) and sends each request through
the same encode/decode path the network layer uses. The broker advertises ``broker.test:9092``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

from strom.config import ServerConfig
from strom.metadata import MetadataImage
from strom.protocol.api import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    make_request_header,
)
from strom.server.api.handler_table import HandlerTable, RequestContext
from strom.server.controller.controller_server import ControllerServer
from strom.server.node import Node
from strom.storage.log_manager import LogManager

NODE_ID = 1
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
HOST, PORT = "broker.test", 9092

T = TypeVar("T")


class AdminNode:
    """One standalone node on ``data_dir``: its controller, logs and broker handlers."""

    def __init__(self, data_dir: Path, overrides: Mapping[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.config = ServerConfig(
            {
                "log.dirs": str(data_dir),
                "listeners": "PLAINTEXT://127.0.0.1:0",
                "advertised.listeners": f"PLAINTEXT://{HOST}:{PORT}",
                "cluster.id": CLUSTER_ID,
                **(overrides or {}),
            }
        )
        self.loop = asyncio.new_event_loop()
        self.node = Node(self.config)
        self.run(self.node.start())

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the node's loop (controller operations, handlers)."""
        return self.loop.run_until_complete(coroutine)

    @property
    def image(self) -> MetadataImage:
        return self.node.metadata.image

    @property
    def log_manager(self) -> LogManager:
        return self.node.log_manager

    @property
    def controller(self) -> ControllerServer:
        assert self.node.controller is not None
        return self.node.controller

    @property
    def registry(self) -> HandlerTable:
        assert self.node.broker is not None
        return self.node.broker.registry

    @property
    def broker_epoch(self) -> int:
        assert self.node.broker is not None
        return self.node.broker.broker_epoch

    @property
    def quorum_epoch(self) -> int:
        return self.node.raft.client.epoch

    def close(self) -> None:
        try:
            self.run(self.node.stop())
        finally:
            self.loop.close()

    def exchange(self, body: Any) -> tuple[Any, bytes]:
        """Send ``body`` through the whole codec: the decoded response and its frame bytes."""
        header = make_request_header(body, correlation_id=42, client_id="test")
        request = decode_request(
            encode_request(header=header, body=body), versions=self.registry.versions
        )
        handler = self.registry.get(request.api_key)
        assert handler is not None
        context = RequestContext(request=request, client_address="test:1", connection_id="t")
        result = self.run(handler.handle(context))
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
