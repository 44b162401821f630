"""The mirror connectors' clients of both clusters (confluent-kafka, on the Spark driver): each
cluster's settings from a connector's ``source.cluster.*``/``target.cluster.*``, MM2's internal
topics, end offsets, and ``TopicSync``, which creates remote topics with the source's partition
count (and configs, ``sync.topic.configs.enabled``) and grows or reconfigures them after."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
)

from strom.client.java_tls import tls_settings
from strom.connect.connectors.mirror.policy import Flow
from strom.connect.errors import ConnectError

__all__ = ["Cluster", "TopicSync", "cluster_of", "retry_reason", "unreachable"]

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0
RETRY_S = 0.2
_LATEST = OffsetSpec.latest()  # type: ignore[no-untyped-call]
_TOPIC_ACLS = AclBindingFilter(  # every literal topic ACL (None: any name, principal, host)
    ResourceType.TOPIC,
    None,  # type: ignore[arg-type]
    ResourcePatternType.LITERAL,
    None,  # type: ignore[arg-type]
    None,  # type: ignore[arg-type]
    AclOperation.ANY,
    AclPermissionType.ANY,
)
CONFIGS_EXCLUDE_DEFAULT = (
    r"follower\.replication\.throttled\.replicas, leader\.replication\.throttled\.replicas,"
    r" message\.timestamp\.difference\.max\.ms, message\.timestamp\.type,"
    r" unclean\.leader\.election\.enable, min\.insync\.replicas,"
    r" message\.timestamp\.after\.max\.ms, message\.timestamp\.before\.max\.ms"
)
_CLIENT_PREFIXES = ("security.", "sasl.", "ssl.")
_UNREACHABLE = (
    "cannot reach the cluster",  # the strom Spark source's driver
    "listing offsets took more than",
    "Local: Broker transport failure",
    "Local: All broker connections are down",
    "Local: Timed out",
)


class Cluster:
    """One cluster as a connector reaches it: Java-named settings (for the ``strom`` Spark
    source and sink) and their librdkafka form (for this driver's own clients)."""

    def __init__(self, alias: str, java: Mapping[str, str]) -> None:
        self.alias = alias
        self.java = dict(java)
        tls, problem = tls_settings(self.java)
        if problem is not None:
            raise ConnectError.bad_request(f"cluster {alias}: {problem}")
        plain = {
            k: v
            for k, v in self.java.items()
            if k.startswith(("security.", "sasl.")) or k == "ssl.key.password"
        }
        self.client: dict[str, str | int | float | bool] = {
            "bootstrap.servers": self.java["bootstrap.servers"],
            **plain,
            **tls,
        }
        self.timeout = float(self.java.get("default.api.timeout.ms", TIMEOUT_S * 1000)) / 1000
        """How long one request may take (``default.api.timeout.ms``)."""
        self._admin: AdminClient | None = None

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(self.client)
        return self._admin

    def unreachable(self, error: KafkaException | str) -> ConnectionError:
        """``error`` of a request to this cluster, naming it (``unreachable`` finds it)."""
        detail = error if isinstance(error, str) else error.args[0].str()
        return ConnectionError(
            f"cannot reach the cluster at {self.java['bootstrap.servers']!r} ({self.alias}):"
            f" {detail}"
        )

    def spark_options(self) -> dict[str, str]:
        """The ``strom`` source's and sink's options that reach this cluster."""
        return {f"kafka.{k}": v for k, v in self.java.items()}

    def partition_counts(self) -> dict[str, int]:
        """Every topic's partition count."""
        try:
            metadata = self.admin.list_topics(timeout=self.timeout)
        except KafkaException as error:
            raise self.unreachable(error) from None
        return {name: len(t.partitions) for name, t in metadata.topics.items() if not t.error}

    def ensure_topic(self, name: str, *, partitions: int, replication: int, compact: bool) -> None:
        """Create an internal topic unless it exists."""
        if name in self.partition_counts():
            return
        config = {"cleanup.policy": "compact"} if compact else {}
        topic = NewTopic(name, partitions, replication, config=config)
        _wait(self.admin.create_topics([topic]), exists_ok=True, what=f"create {name}")

    def end_offsets(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The log end offset of each partition."""
        wanted = {KafkaTopicPartition(t, p): _LATEST for t, p in partitions}
        if not wanted:
            return {}
        deadline = time.monotonic() + self.timeout
        while True:
            futures = self.admin.list_offsets(wanted, request_timeout=self.timeout)
            try:
                return {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}
            except KafkaException as error:
                # a partition just added has no leader in the client's metadata yet
                if time.monotonic() > deadline:
                    raise self.unreachable(error) from None
                time.sleep(RETRY_S)

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        """Each topic's settings that are not defaults."""
        resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
        if not resources:
            return {}
        found: dict[str, dict[str, str]] = {}
        for resource, future in self.admin.describe_configs(
            resources, request_timeout=self.timeout
        ).items():
            entries: dict[str, ConfigEntry] = future.result()
            found[resource.name] = {
                name: entry.value
                for name, entry in entries.items()
                if not entry.is_default and entry.value is not None
            }
        return found


def cluster_of(config: Mapping[str, str], side: str, default: Mapping[str, str]) -> Cluster:
    """The ``side`` ("source" or "target") cluster of a connector config; ``default`` (the
    worker's own cluster, Java names) when the config gives no bootstrap servers for it."""
    prefix = f"{side}.cluster."
    java = {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix)}
    java.pop("alias", None)
    if not java.get("bootstrap.servers", "").strip():
        java = {**default, **java, "bootstrap.servers": default["bootstrap.servers"]}
    return Cluster(config.get(f"{side}.cluster.alias", side), java)


def unreachable(error: BaseException, *clusters: Cluster) -> str | None:
    """Which of ``clusters`` ``error`` (a client's, or a Spark query's naming one) says is
    unreachable, one line; None when it is another failure."""
    text = str(error)
    if not any(sign in text for sign in _UNREACHABLE):
        return None
    named = [c for c in clusters if c.java["bootstrap.servers"] in text]
    if not named:
        line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        return f"a cluster is unreachable ({line[:200]})"
    return " and ".join(
        f"cluster {c.alias} ({c.java['bootstrap.servers']}) is unreachable" for c in named
    )


_WORKER_LATE = "Python worker failed to connect back"
"""Spark's words when a Python worker it started did not connect back in time."""


def retry_reason(config: Mapping[str, str], error: BaseException) -> str | None:
    """Why a mirror connector whose query failed with ``error`` is started again, or None:
    one of its clusters is unreachable, or Spark's Python worker (the source's reader among
    them) started too slowly to connect back, as on a machine short of CPU."""
    if _WORKER_LATE in str(error):
        return "Spark's Python worker did not start in time (the machine is busy)"
    return _unreachable_in(config, error)


def _unreachable_in(config: Mapping[str, str], error: BaseException) -> str | None:
    """``unreachable`` for a mirror connector's clusters (those its config names)."""
    sides = (cluster_of(config, side, {"bootstrap.servers": ""}) for side in ("source", "target"))
    return unreachable(error, *(c for c in sides if c.java["bootstrap.servers"]))


def _wait(futures: Mapping[Any, Any], *, exists_ok: bool, what: str) -> None:
    for future in futures.values():
        try:
            future.result()
        except KafkaException as error:
            if exists_ok and error.args[0].name() == "TOPIC_ALREADY_EXISTS":
                continue
            raise ConnectError.bad_request(f"cannot {what}: {error.args[0].str()}") from None


class TopicSync:
    """Keeps the flow's remote topics as their source topics: created with the same partition
    count (and with ``sync.topic.configs.enabled`` the same non-default configs), given more
    partitions when the source has more, reconfigured when the source's configs change."""

    def __init__(
        self, flow: Flow, source: Cluster, target: Cluster, config: Mapping[str, str]
    ) -> None:
        self.flow, self.source, self.target = flow, source, target
        self.sync_configs = config.get("sync.topic.configs.enabled", "true").lower() == "true"
        self.replication = int(config.get("replication.factor", "-1"))
        excluded = config.get("config.properties.exclude", CONFIGS_EXCLUDE_DEFAULT)
        parts = [p.strip() for p in excluded.split(",") if p.strip()]
        self.excluded = re.compile("|".join(f"(?:{p})" for p in parts) or "(?!)")
        self._lock = threading.Lock()
        self._known: dict[str, int] = {}
        """Remote topics known to exist, with their partition counts."""

    def ensure(self, partitions: Mapping[str, int]) -> None:
        """Make sure each source topic's remote topic has at least the source partitions
        given (``{topic: highest partition + 1}``); cheap when it is known to."""
        missing = {t for t, n in partitions.items() if self._known.get(t, 0) < n}
        if missing:
            self.sync(missing)

    def sync(self, topics: Iterable[str] | None = None, *, configs: bool = False) -> list[str]:
        """Sync the remote topics of ``topics`` (None: every source topic the flow mirrors);
        with ``configs``, their configs too. Returns the remote topics created."""
        with self._lock:
            counts = self.source.partition_counts()
            names = counts if topics is None else {t: counts[t] for t in topics if t in counts}
            mirrored = {t: n for t, n in names.items() if self.flow.should_replicate(t)}
            existing = self.target.partition_counts()
            settings = self._configs(mirrored) if self.sync_configs else {}
            created = self._create(mirrored, existing, settings)
            self._grow(mirrored, existing)
            if configs and self.sync_configs:
                self._reconfigure(mirrored, existing, settings)
            for topic, count in mirrored.items():
                self._known[topic] = count
            return created

    def sync_acls(self) -> int:
        """Give the remote topics their source topics' ACLs as MM2 does (``sync.topic.acls
        .enabled``): literal topic ACLs of mirrored topics, but ALLOW WRITE (only the mirror
        writes a remote topic), with ALLOW ALL downgraded to READ. The ACLs created (existing
        ones are created again: a no-op); -1 when the source has no authorizer."""
        future = self.source.admin.describe_acls(_TOPIC_ACLS, request_timeout=self.source.timeout)
        try:
            found: list[AclBinding] = future.result()
        except KafkaException as error:
            if error.args[0].name() == "SECURITY_DISABLED":
                return -1
            raise
        wanted = [
            AclBinding(
                ResourceType.TOPIC,
                self.flow.remote_topic(acl.name),
                ResourcePatternType.LITERAL,
                acl.principal,
                acl.host,
                AclOperation.READ if allow and acl.operation == AclOperation.ALL else acl.operation,
                acl.permission_type,
            )
            for acl in found
            if self.flow.should_replicate(acl.name)
            for allow in [acl.permission_type == AclPermissionType.ALLOW]
            if not (allow and acl.operation == AclOperation.WRITE)
        ]
        if wanted:
            _wait(self.target.admin.create_acls(wanted), exists_ok=False, what="create ACLs")
        return len(wanted)

    def _configs(self, topics: Mapping[str, int]) -> dict[str, dict[str, str]]:
        return {
            topic: {k: v for k, v in values.items() if not self.excluded.fullmatch(k)}
            for topic, values in self.source.topic_configs(topics).items()
        }

    def _create(
        self,
        topics: Mapping[str, int],
        existing: Mapping[str, int],
        settings: Mapping[str, Mapping[str, str]],
    ) -> list[str]:
        new = [
            NewTopic(
                self.flow.remote_topic(t),
                n,
                self.replication,
                config=dict(settings.get(t, {})),
            )
            for t, n in topics.items()
            if self.flow.remote_topic(t) not in existing
        ]
        if new:
            log.info("creating remote topics %s", ", ".join(t.topic for t in new))
            _wait(self.target.admin.create_topics(new), exists_ok=True, what="create topics")
        return [t.topic for t in new]

    def _grow(self, topics: Mapping[str, int], existing: Mapping[str, int]) -> None:
        more = [
            NewPartitions(self.flow.remote_topic(t), n)
            for t, n in topics.items()
            if 0 < existing.get(self.flow.remote_topic(t), n) < n
        ]
        if more:
            log.info("adding partitions to %s", ", ".join(p.topic for p in more))
            _wait(self.target.admin.create_partitions(more), exists_ok=False, what="add partitions")

    def _reconfigure(
        self,
        topics: Mapping[str, int],
        existing: Mapping[str, int],
        settings: Mapping[str, Mapping[str, str]],
    ) -> None:
        remote = {self.flow.remote_topic(t): t for t in topics}
        current = self.target.topic_configs(r for r in remote if r in existing)
        changes = []
        for name, values in current.items():
            wanted = settings.get(remote[name], {})
            entries = [
                ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                for k, v in wanted.items()
                if values.get(k) != v
            ]
            if entries:
                changes.append(
                    ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=entries)
                )
        if changes:
            log.info("syncing the configs of %s", ", ".join(c.name for c in changes))
            _wait(
                self.target.admin.incremental_alter_configs(changes),
                exists_ok=False,
                what="alter topic configs",
            )
