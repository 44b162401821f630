"""The broker's own settings: its id, data directory, listeners and cluster id, auto-created and
deleted topics, and the limits and threads of its requests."""

from __future__ import annotations

from typing import Final
from urllib.parse import urlsplit

from strom.config.setting import Setting, Value, at_least
from strom.config.shorthands import BOOLEAN, INT, STRING

__all__ = ["BROKER_SETTINGS", "parse_http_address"]


def parse_http_address(text: str) -> tuple[str, int]:
    """``http://HOST:PORT`` -> (host, port); ValueError saying what is wrong."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        port = None
        parts = None
    if (
        parts is None
        or parts.scheme != "http"
        or not parts.hostname
        or port is None
        or parts.path not in ("", "/")
    ):
        raise ValueError(f"expected http://HOST:PORT (e.g. http://127.0.0.1:9404), got {text!r}")
    return parts.hostname, port


def _http_address(value: Value) -> str | None:
    if not value:
        return None
    try:
        parse_http_address(str(value))
    except ValueError as error:
        return str(error)
    return None


BROKER_SETTINGS: Final = (
    Setting("node.id", INT, 1, "This node's id in the cluster.", at_least(0), read_only=True),
    Setting("log.dirs", STRING, "./data", "Directory holding the partition logs.", read_only=True),
    Setting("listeners", STRING, "PLAINTEXT://localhost:9092", "Listener address.", read_only=True),
    Setting(
        "advertised.listeners",
        STRING,
        None,
        "Address given to clients, when it differs from the listener.",
        read_only=True,
    ),
    Setting("cluster.id", STRING, None, "Cluster id; generated on first start.", read_only=True),
    Setting("num.partitions", INT, 1, "Partitions of an auto-created topic.", at_least(1)),
    Setting(
        "default.replication.factor",
        INT,
        1,
        "Replication factor of auto-created topics.",
        at_least(1),
    ),
    Setting("auto.create.topics.enable", BOOLEAN, True, "Create unknown topics on metadata."),
    Setting("delete.topic.enable", BOOLEAN, True, "Allow DeleteTopics."),
    Setting(
        "message.max.bytes",
        INT,
        1048588,
        "Largest record batch the broker accepts.",
        at_least(0),
    ),
    Setting(
        "socket.request.max.bytes",
        INT,
        104857600,
        "Largest request frame accepted.",
        at_least(1),
    ),
    Setting(
        "num.io.threads",
        INT,
        8,
        "Accepted for compatibility; strom is single-threaded.",
        at_least(1),
    ),
    Setting(
        "num.network.threads",
        INT,
        3,
        "Accepted for compatibility; asyncio serves all.",
        at_least(1),
    ),
    Setting(
        "metrics.listener",
        STRING,
        None,
        "strom: where GET /metrics serves the node's metrics in Prometheus's text format "
        "(http://HOST:PORT; port 0 takes a free one); unset: no metrics are kept.",
        _http_address,
        read_only=True,
    ),
)
