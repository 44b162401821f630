"""A worker's settings under Kafka Connect's distributed-mode names (``connect-distributed
.properties``), plus the Spark ones: ``spark.master`` and any ``spark.*`` conf of the session
the connectors run in."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from strom.client.service_settings import ServiceClients, int_setting
from strom.connect.client_overrides import CLIENTS, overrides_policy
from strom.security.jaas import LOGIN_CONFIG, login_config_from_jvm_options
from strom.web.server import Listener

__all__ = ["SettingsError", "WorkerSettings"]

DEFAULT_LISTENER = Listener("http", "localhost", 8083)
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
_CLIENT_PREFIXES = ("security.", "sasl.", "ssl.")
BASIC_AUTH_EXTENSION = (
    "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
)


class SettingsError(ValueError):
    """A worker setting that cannot be used; the message names it."""


def _int(values: Mapping[str, str], name: str, default: int) -> int:
    return int_setting(values, name, default, SettingsError)


@dataclass(frozen=True)
class WorkerSettings(ServiceClients):
    """One worker's settings; ``from_properties`` reads them by Kafka Connect's names."""

    error: ClassVar[type[ValueError]] = SettingsError

    bootstrap_servers: str = "localhost:9092"
    group_id: str = "connect-cluster"
    config_topic: str = "connect-configs"
    offset_topic: str = "connect-offsets"
    status_topic: str = "connect-status"
    config_replication_factor: int = 3
    offset_replication_factor: int = 3
    status_replication_factor: int = 3
    offset_partitions: int = 25
    status_partitions: int = 5
    key_converter: str = JSON_CONVERTER
    value_converter: str = JSON_CONVERTER
    converter_settings: Mapping[str, str] = field(default_factory=dict)
    """``key.converter.*`` and ``value.converter.*``, under their full names."""
    listener: Listener = DEFAULT_LISTENER
    listener_tls: Mapping[str, str] | None = None
    advertised_url: str | None = None
    rest_jaas_config: str | None = None
    """The JAAS file of ``BasicAuthSecurityRestExtension`` (``rest.extension.classes``)."""
    client_security: Mapping[str, str] = field(default_factory=dict)
    """The worker's ``security.*``, ``sasl.*`` and ``ssl.*`` settings by Java's names."""
    client_overrides: Mapping[str, str] = field(default_factory=dict)
    """The worker's ``producer.*``, ``consumer.*`` and ``admin.*`` settings for the
    connectors' clients, under their full names."""
    override_policy: str = "All"
    """``connector.client.config.override.policy``: All, None or Principal."""
    exactly_once_source: bool = False
    """``exactly.once.source.support=enabled`` (KIP-618; ``disabled`` and ``preparing`` are
    not): sources that can write their records and offsets in one transaction do."""
    spark_master: str = "local[*]"
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    checkpoint_root: Path = Path(tempfile.gettempdir()) / "strom-connect"
    timeout: float = 30.0
    sync_timeout_ms: int = 30_000
    """``worker.sync.timeout.ms``: how long a read of the internal topics to their ends waits
    before a REST request answers 500 or the group round is tried again (Kafka's default is
    3000; strom's allows a loaded machine); at start-up the worker keeps reading, warning
    each time it passes."""
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 60_000
    """The group's: ``session.timeout.ms``, ``heartbeat.interval.ms``, ``rebalance.timeout.ms``."""

    @classmethod
    def from_properties(cls, values: Mapping[str, str]) -> WorkerSettings:
        listener = Listener.parse(values.get("listeners", "http://localhost:8083"))
        https = {
            k.removeprefix("listeners.https."): v
            for k, v in values.items()
            if k.startswith("listeners.https.ssl.")
        } or {k: v for k, v in values.items() if k.startswith("ssl.")}
        advertised = None
        if any(k.startswith("rest.advertised.") for k in values):
            advertised = (
                f"{values.get('rest.advertised.listener', listener.scheme)}://"
                f"{values.get('rest.advertised.host.name', listener.host or 'localhost')}:"
                f"{values.get('rest.advertised.port', listener.port)}"
            )
        extensions = [c.strip() for c in values.get("rest.extension.classes", "").split(",")]
        for extension in filter(None, extensions):
            if extension != BASIC_AUTH_EXTENSION:
                raise SettingsError(
                    f"rest.extension.classes: {extension} is not supported (only"
                    f" {BASIC_AUTH_EXTENSION})"
                )
        jaas = None
        if any(extensions):
            jaas = values.get(LOGIN_CONFIG) or login_config_from_jvm_options(
                os.environ.get("KAFKA_OPTS", "")
            )
            if not jaas:
                raise SettingsError(
                    f"rest.extension.classes: BasicAuthSecurityRestExtension needs {LOGIN_CONFIG}"
                    f" (a setting, or -D{LOGIN_CONFIG}=FILE in KAFKA_OPTS)"
                )
        try:
            policy = overrides_policy(values.get("connector.client.config.override.policy", "All"))
        except ValueError as error:
            raise SettingsError(str(error)) from None
        support = values.get("exactly.once.source.support", "disabled").strip().lower()
        if support not in ("disabled", "preparing", "enabled"):
            raise SettingsError(
                f"exactly.once.source.support: expected disabled, preparing or enabled, got"
                f" {support}"
            )
        spark = {k: v for k, v in values.items() if k.startswith("spark.") and k != "spark.master"}
        checkpoints = spark.pop("spark.sql.streaming.checkpointLocation", None)
        return cls(
            bootstrap_servers=values.get("bootstrap.servers", cls.bootstrap_servers),
            group_id=values.get("group.id", cls.group_id),
            config_topic=values.get("config.storage.topic", cls.config_topic),
            offset_topic=values.get("offset.storage.topic", cls.offset_topic),
            status_topic=values.get("status.storage.topic", cls.status_topic),
            config_replication_factor=_int(values, "config.storage.replication.factor", 3),
            offset_replication_factor=_int(values, "offset.storage.replication.factor", 3),
            status_replication_factor=_int(values, "status.storage.replication.factor", 3),
            offset_partitions=_int(values, "offset.storage.partitions", 25),
            status_partitions=_int(values, "status.storage.partitions", 5),
            key_converter=values.get("key.converter", JSON_CONVERTER),
            value_converter=values.get("value.converter", JSON_CONVERTER),
            converter_settings={
                k: v
                for k, v in values.items()
                if k.startswith(("key.converter.", "value.converter."))
            },
            listener=listener,
            listener_tls=https if listener.scheme == "https" else None,
            advertised_url=advertised,
            rest_jaas_config=jaas,
            client_security={
                k: v
                for k, v in values.items()
                if k.startswith(_CLIENT_PREFIXES) and not k.startswith("ssl.client.auth")
            },
            client_overrides={
                k: v for k, v in values.items() if k.startswith(tuple(f"{c}." for c in CLIENTS))
            },
            override_policy=policy,
            exactly_once_source=support == "enabled",
            spark_master=values.get("spark.master", cls.spark_master),
            spark_conf=spark,
            checkpoint_root=Path(checkpoints) if checkpoints else cls.checkpoint_root,
            sync_timeout_ms=_int(values, "worker.sync.timeout.ms", cls.sync_timeout_ms),
            session_timeout_ms=_int(values, "session.timeout.ms", cls.session_timeout_ms),
            heartbeat_interval_ms=_int(values, "heartbeat.interval.ms", cls.heartbeat_interval_ms),
            rebalance_timeout_ms=_int(values, "rebalance.timeout.ms", cls.rebalance_timeout_ms),
        )

    def checkpoint(self, cluster_id: str, connector: str) -> Path:
        """Where the Spark query of ``connector`` keeps its checkpoint: under the cluster's id,
        so that a worker of another cluster with the same group never resumes it."""
        return self.checkpoint_root / cluster_id / self.group_id / connector
