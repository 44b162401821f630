"""MirrorMaker 2's dedicated mode (``connect-mirror-maker.sh mm2.properties``): one Connect
herder per flow, on its target cluster, with MM2's internal topics (``mm2-configs.<source>
.internal``...), running the flow's connectors as ``mm2.properties`` configures them; every
flow's queries share one SparkSession. Restarted, it continues where it stopped (the offsets
and queries' checkpoints are the herders')."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AclOperation  # type: ignore[attr-defined]

from strom.connect.connectors.mirror.clients import Cluster
from strom.connect.connectors.mirror.mm2config import ConfigError, FlowPlan, MirrorMakerConfig
from strom.connect.errors import ConnectError
from strom.connect.herder import Herder
from strom.connect.settings import WorkerSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["MirrorMaker"]

log = logging.getLogger(__name__)

REACH_TIMEOUT_S = 10.0
_TOPIC_NAME = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")
"""A ``topics`` entry that names one topic (MM2 reads it as a regex matching itself)."""


class MirrorMaker:
    """The flows of ``config`` whose target is in ``targets`` (MM2's ``--clusters``; all
    when None)."""

    def __init__(
        self,
        config: MirrorMakerConfig,
        *,
        spark: Callable[[], SparkSession] | None = None,
        targets: Iterable[str] | None = None,
    ) -> None:
        self.config = config
        wanted = set(targets) if targets is not None else set(config.clusters)
        if unknown := sorted(wanted - set(config.clusters)):
            raise ConfigError(
                f"--clusters: unknown cluster alias {unknown[0]!r}; clusters are"
                f" {', '.join(config.clusters)}"
            )
        self.flows = [f for f in config.flows() if f.target in wanted]
        self._spark_factory = spark
        self._spark: SparkSession | None = None
        self._lock = threading.Lock()
        self.starting_spark = False
        """Whether the Spark session is being made (its JVM must not be interrupted then)."""
        self.herders: dict[str, Herder] = {}

    def check_clusters(self) -> None:
        """Fail with one line naming a cluster the flows need that does not answer."""
        for alias in sorted({a for f in self.flows for a in (f.source, f.target)}):
            cluster = Cluster(alias, self.config.cluster(alias))
            try:
                cluster.admin.list_topics(timeout=REACH_TIMEOUT_S)
            except KafkaException as error:
                raise ConfigError(
                    f"cluster {alias} ({cluster.client['bootstrap.servers']}) is unreachable:"
                    f" {error.args[0].str()}; check {alias}.bootstrap.servers"
                ) from None
        for flow in self.flows:
            if flow.replicate:
                self._check_readable(flow)

    def _check_readable(self, flow: FlowPlan) -> None:
        """Fail with one line naming a topic the flow names that its source's user may not
        read (its ACLs deny Read or Describe); topics that do not exist yet pass."""
        topics = self.config.flow_settings(flow.source, flow.target).get("topics", "")
        names = [t.strip() for t in topics.split(",") if _TOPIC_NAME.fullmatch(t.strip())]
        if not names:
            return
        cluster = Cluster(flow.source, self.config.cluster(flow.source))
        futures = cluster.admin.describe_topics(
            TopicCollection(names),
            include_authorized_operations=True,
            request_timeout=REACH_TIMEOUT_S,
        )
        for name, future in futures.items():
            try:
                operations = future.result().authorized_operations
            except KafkaException as error:
                if error.args[0].name() != "TOPIC_AUTHORIZATION_FAILED":
                    continue  # not there yet: the mirror picks it up once it is
                operations = []
            if operations is not None and AclOperation.READ not in operations:
                user = cluster.java.get("sasl.username") or _jaas_user(cluster.java)
                raise ConfigError(
                    f"{flow.name}.topics: cluster {flow.source} does not let {user} read topic"
                    f" {name!r}; grant it Read and Describe on the topic (strom acls add"
                    f" --allow-principal User:{user} --operation Read --operation Describe"
                    f" --topic {name}) or leave the topic out"
                )

    def _session(self) -> SparkSession:
        with self._lock:
            if self._spark is None:
                self.starting_spark = True
                try:
                    self._spark = self._new_session()
                finally:
                    self.starting_spark = False
            return self._spark

    def _new_session(self) -> SparkSession:
        if self._spark_factory is not None:
            return self._spark_factory()
        import strom.spark  # noqa: PLC0415

        settings = self._settings(self.flows[0])
        return strom.spark.session(
            master=settings.spark_master,
            app_name="strom-mirror-maker",
            conf=dict(settings.spark_conf),
        )

    def _settings(self, flow: FlowPlan) -> WorkerSettings:
        return WorkerSettings.from_properties(self.config.worker(flow))

    def start(self) -> None:
        """Start every flow's herder and put its connectors' configs (unchanged ones keep
        running as they are)."""
        for flow in self.flows:
            herder = Herder(
                self._settings(flow), worker_id=f"mirror-{flow.name}", spark=self._session
            )
            herder.start()
            self.herders[flow.name] = herder
            running = herder.read(partial(_configs, herder))
            for connector in self.config.connectors(flow):
                if running.get(connector["name"]) != connector:
                    _put(herder, connector)
            log.info("flow %s: running %s", flow.name, ", ".join(herder.connector_names()))

    def stop(self) -> None:
        for herder in self.herders.values():
            herder.stop()
        self.herders.clear()


def _put(herder: Herder, connector: dict[str, str]) -> None:
    """Put ``connector``'s config, again while the config topic is too slow to read back (a
    500 timeout: the dedicated mode has no REST client to retry it)."""
    while True:
        try:
            herder.put(connector["name"], connector, create_only=False)
        except ConnectError as error:
            if error.status < 500:
                raise
            log.warning("connector %s: %s; putting its config again", connector["name"], error)
        else:
            return


def _jaas_user(java: dict[str, str]) -> str:
    """The user of a ``sasl.jaas.config`` (``username="alice"``), or "the mirror's user"."""
    found = re.search(r'username\s*=\s*"([^"]*)"', java.get("sasl.jaas.config", ""))
    return found.group(1) if found else "the mirror's user"


def _configs(herder: Herder) -> dict[str, dict[str, str]]:
    return {name: dict(config) for name, config in herder.configs.configs.items()}
