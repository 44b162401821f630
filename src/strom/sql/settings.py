"""A SQL server's settings under ksqlDB's names (`ksql-server.properties`), plus the Spark ones:
`spark.master` and any `spark.*` conf of the session its queries run in."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from strom.client.service_settings import ServiceClients, int_setting
from strom.sql.retries import Backoff
from strom.web.security import ListenerSecurity
from strom.web.server import Listener

__all__ = ["SqlSettings", "SqlSettingsError"]

_CLIENT_PREFIXES = ("security.", "sasl.", "ssl.")
OFFSET_RESETS = ("earliest", "latest")
DEFAULT_LISTENER = Listener("http", "localhost", 8088)
DEFAULT_REALM = "KsqlServer-Props"
"""`authentication.realm` when not given: the JAAS section ksqlDB's documentation names."""


class SqlSettingsError(ValueError):
    """A setting that cannot be used; the message names it."""


@dataclass(frozen=True)
class SqlSettings(ServiceClients):
    """One server's settings; `from_properties` reads them by ksqlDB's names."""

    error: ClassVar[type[ValueError]] = SqlSettingsError

    bootstrap_servers: str = "localhost:9092"
    service_id: str = "default_"
    listener: Listener = DEFAULT_LISTENER
    listener_security: ListenerSecurity = field(default_factory=ListenerSecurity)
    """The listener's TLS (`ssl.*` for an https listener) and basic authentication
    (`authentication.method=BASIC`, `authentication.realm`, `authentication.roles`)."""
    state_dir: Path = Path(tempfile.gettempdir()) / "strom-sql"
    """ksqlDB's `ksql.streams.state.dir`: the persistent queries' Spark checkpoints."""
    offset_reset: str = "latest"
    """Where a new query starts reading (`ksql.streams.auto.offset.reset`)."""
    sink_replicas: int = -1
    """Replicas of the topics queries create (`ksql.sink.replicas`; -1: the broker default)."""
    command_topic_replicas: int = -1
    client_security: Mapping[str, str] = field(default_factory=dict)
    spark_master: str = "local[*]"
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    retry_backoff: Backoff = field(default_factory=Backoff)
    session_timeout_ms: int = 45_000
    """How long a server of the service may be silent before its persistent queries move to
    the others (`ksql.streams.session.timeout.ms`: the query owners group's, `owners`)."""
    """How long a failed persistent query waits to start again (`ksql.query.retry.backoff.*`)."""
    values: Mapping[str, str] = field(default_factory=dict)
    """Every setting given, for SHOW PROPERTIES."""
    timeout: float = 30.0

    @classmethod
    def from_properties(
        cls, values: Mapping[str, str], environ: Mapping[str, str] = os.environ
    ) -> SqlSettings:
        """The settings by ksqlDB's names; the JAAS file of basic authentication's users may
        also come as `-Djava.security.auth.login.config=` in `$KSQL_OPTS`, as ksqlDB's."""
        listener = Listener.parse(values.get("listeners", "http://localhost:8088"))
        reset = values.get(
            "ksql.streams.auto.offset.reset", values.get("auto.offset.reset", cls.offset_reset)
        ).lower()
        if reset not in OFFSET_RESETS:
            raise SqlSettingsError(
                f"ksql.streams.auto.offset.reset: earliest or latest, not {reset!r}"
            )
        state = values.get("ksql.streams.state.dir")
        spark = {k: v for k, v in values.items() if k.startswith("spark.") and k != "spark.master"}
        # an https listener's ssl.* are its own, unless the cluster is reached over TLS too
        protocol = values.get("security.protocol", "PLAINTEXT").upper()
        listener_tls = listener.scheme == "https" and not protocol.endswith("SSL")
        return cls(
            bootstrap_servers=values.get(
                "bootstrap.servers",
                values.get("ksql.streams.bootstrap.servers", cls.bootstrap_servers),
            ),
            service_id=values.get("ksql.service.id", cls.service_id),
            listener=listener,
            listener_security=ListenerSecurity.from_properties(
                values,
                listener.scheme,
                realm=DEFAULT_REALM,
                jvm_options=environ.get("KSQL_OPTS", ""),
            ),
            state_dir=Path(state) if state else cls.state_dir,
            offset_reset=reset,
            sink_replicas=_int(values, "ksql.sink.replicas", -1),
            retry_backoff=Backoff(
                _int(values, "ksql.query.retry.backoff.initial.ms", Backoff.initial_ms),
                _int(values, "ksql.query.retry.backoff.max.ms", Backoff.max_ms),
            ),
            session_timeout_ms=_int(values, "ksql.streams.session.timeout.ms", 45_000),
            command_topic_replicas=_int(values, "ksql.internal.topic.replicas", -1),
            client_security={
                k: v
                for k, v in values.items()
                if k.startswith(_CLIENT_PREFIXES) and not (k.startswith("ssl.") and listener_tls)
            },
            spark_master=values.get("spark.master", cls.spark_master),
            spark_conf=spark,
            values=dict(values),
        )

    @property
    def command_topic(self) -> str:
        return f"_confluent-ksql-{self.service_id}_command_topic"

    @property
    def owners_topic(self) -> str:
        """The leases topic and group of the service's servers (`owners`)."""
        return f"_confluent-ksql-{self.service_id}_query_owners"

    @property
    def schema_registry_url(self) -> str | None:
        """`ksql.schema.registry.url`: the registry of the JSON_SR format."""
        return self.values.get("ksql.schema.registry.url") or None

    @property
    def processing_log_topic(self) -> str | None:
        """The processing log's topic, where `ksql.logging.processing.topic.auto.create` asks
        for one (`ksql.logging.processing.topic.name`, default
        `<service.id>ksql_processing_log`)."""
        if self.values.get("ksql.logging.processing.topic.auto.create", "").lower() != "true":
            return None
        name = self.values.get("ksql.logging.processing.topic.name")
        return name or f"{self.service_id}ksql_processing_log"

    @property
    def processing_log_stream(self) -> bool:
        """Whether the stream KSQL_PROCESSING_LOG is declared over that topic."""
        wanted = self.values.get("ksql.logging.processing.stream.auto.create", "").lower()
        return self.processing_log_topic is not None and wanted == "true"

    def checkpoint(self, query_id: str) -> Path:
        return self.state_dir / self.service_id / query_id


def _int(values: Mapping[str, str], name: str, default: int) -> int:
    return int_setting(values, name, default, SqlSettingsError)
