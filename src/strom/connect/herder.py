"""The worker's herder: the connectors' configs, target states and status, kept in the config,
status and offsets topics (``TopicLog``, applied to the pure ``ConfigState``/``StatusState``),
and each connector's Spark query started, paused, stopped and restarted to match them. The REST
API calls its methods from its threads; one request changes things at a time.

Alone (no ``assign`` call ever: the mirror's dedicated mode) a herder is its own leader and runs
every connector. In a group (``strom.connect.membership``) it runs the connectors the group's
leader assigned it; the leader writes the config topic, and every worker follows the records it
reads there for the connectors it runs (``_follow``)."""

from __future__ import annotations

import logging
import shutil
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from strom.connect.client_overrides import client_options, policy_refusals, with_overrides
from strom.connect.config_def import error_messages
from strom.connect.converters import converter
from strom.connect.errors import ConnectError
from strom.connect.following import GroupRole
from strom.connect.offsets import SinkOffsets, SourceOffsets
from strom.connect.plugins import ConnectorPlugin, RunContext, find_plugin
from strom.connect.protocol import Assignment
from strom.connect.records import ConfigKey, TargetState, decode, encode, parse_config_key
from strom.connect.retries import RetryPolicy
from strom.connect.settings import WorkerSettings
from strom.connect.state import ConfigState, Record, Status, StatusState
from strom.connect.topics import TopicLog
from strom.spark.options import client_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["Herder"]

log = logging.getLogger(__name__)

MONITOR_INTERVAL_S = 0.5
RETRY_S = 5.0
"""How soon a connector whose reconcile timed out on an internal topic is reconciled again."""
T = TypeVar("T")
Config = dict[str, str]
Wanted = tuple[Config, TargetState, list[Config]] | None
"""What the config topic says of a connector: its config, target state and task configs."""


class Herder:
    """The state and the running queries of one worker."""

    def __init__(
        self,
        settings: WorkerSettings,
        *,
        worker_id: str,
        spark: Callable[[], SparkSession],
    ) -> None:
        self.settings = settings
        self.worker_id = worker_id
        self._spark_factory = spark
        self._spark: SparkSession | None = None
        self._spark_lock = threading.Lock()
        self.configs = ConfigState()
        self.statuses = StatusState()
        self.source_offsets = SourceOffsets()
        self._state_lock = threading.Lock()
        self._ops = threading.RLock()
        client = settings.client_config()
        self.client = client
        self.sink_offsets = SinkOffsets(client, settings.timeout)
        self._config_log = TopicLog(
            topic=settings.config_topic,
            partitions=1,
            replication_factor=settings.config_replication_factor,
            client=client,
            apply=self._apply_config,
            lock=self._state_lock,
            timeout=settings.timeout,
            read_timeout=settings.sync_timeout_ms / 1000,
        )
        self._status_log = TopicLog(
            topic=settings.status_topic,
            partitions=settings.status_partitions,
            replication_factor=settings.status_replication_factor,
            client=client,
            apply=lambda k, v: self.statuses.apply((k or b"").decode(), decode(v)),
            lock=self._state_lock,
            timeout=settings.timeout,
            read_timeout=settings.sync_timeout_ms / 1000,
        )
        self._offset_log = TopicLog(
            topic=settings.offset_topic,
            partitions=settings.offset_partitions,
            replication_factor=settings.offset_replication_factor,
            client=client,
            apply=self.source_offsets.apply,
            lock=self._state_lock,
            timeout=settings.timeout,
            read_timeout=settings.sync_timeout_ms / 1000,
        )
        self.generation = 0
        self.cluster_id: str | None = None
        self._queries: dict[str, StreamingQuery] = {}
        self._again: dict[str, float] = {}
        """Connectors to reconcile again, and when (monotonic): their last reconcile timed out
        reading or writing an internal topic."""
        self._retries: dict[str, float] = {}
        """Connectors to start again, and when (monotonic)."""
        self._failing: dict[str, tuple[float, int]] = {}
        """Connectors retried since (monotonic), and how many times, until a micro-batch
        completes or the user changes or restarts them."""
        self._stopping = threading.Event()
        self._monitor: threading.Thread | None = None
        self.role = GroupRole()
        """Its part in the group; changed under ``_ops``, its pending records under
        ``_state_lock``."""
        self.on_connectors_changed: Callable[[], None] | None = None
        """Called (the leader's, in a group) when a connector is created or deleted."""
        self._reconciled: dict[str, Wanted] = {}
        """What each connector's query (or its absence) was last made to match."""
        self._group_changed = threading.Condition()
        self._following = False

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, *, warm_up: bool = False, group: bool = False) -> None:
        """Read the three topics to their ends, then run what they say should run (in a
        ``group``: nothing until the group assigns connectors); ``warm_up`` starts the Spark
        session meanwhile."""
        if group:
            self.role.join()
        for topic_log in (self._config_log, self._offset_log, self._status_log):
            topic_log.start()
        self.generation = self.statuses.generation + 1
        self.cluster_id = self.sink_offsets.cluster_id()
        with self._ops:
            self._following = True
            for name in self.connector_names():
                self._reconcile_or_later(name)
        self._monitor = threading.Thread(
            target=self._watch, args=(warm_up,), name="connect-monitor", daemon=True
        )
        self._monitor.start()

    def stop(self) -> None:
        """Stop every query (their status becomes UNASSIGNED, as a leaving worker's does)."""
        self.stop_queries()
        for topic_log in (self._config_log, self._offset_log, self._status_log):
            topic_log.stop()

    def stop_queries(self) -> None:
        """Stop the monitor and every query, whose status becomes UNASSIGNED."""
        self._stopping.set()
        if self._monitor is not None:
            self._monitor.join(timeout=5)
        with self._ops:
            for name in list(self._queries):
                self._stop_query(name)
                self._set_status(name, "UNASSIGNED")
            if not self.role.alone:
                self.role.assigned = frozenset()

    @property
    def spark(self) -> SparkSession:
        """The connectors' session, active in the calling thread (queries start from the
        REST API's threads)."""
        from strom.spark.session import activate  # noqa: PLC0415

        with self._spark_lock:
            if self._spark is None:
                self._spark = self._spark_factory()
            return activate(self._spark)

    def _warm_up(self) -> None:
        """Start the session before the first connector needs it (a JVM takes seconds)."""
        try:
            self.spark  # noqa: B018
        except Exception:
            log.exception("cannot start the Spark session; connectors will fail to start")

    # -- the group -------------------------------------------------------------------------
    def config_offset(self) -> int:
        """How far this worker read the config topic (the offset after its last record)."""
        return self._config_log.positions().get(0, 0)

    def read_configs(self, offset: int | None = None) -> None:
        """Read the config topic up to ``offset`` (default: its end)."""
        self._config_log.catch_up(None if offset is None else {0: offset})

    def catch_up(self) -> None:
        """Read the config and status topics to their ends (after a write another worker
        made for this one's request)."""
        self._config_log.catch_up()
        self._status_log.catch_up()

    def task_counts(self) -> dict[str, int]:
        """Each connector's number of tasks, as the leader assigns them (once a request under
        way has written them)."""
        with self._ops:
            return self.read(
                lambda: {
                    name: len(self.configs.tasks.get(name, [])) for name in self.configs.configs
                }
            )

    def assign(
        self,
        assignment: Assignment,
        *,
        generation: int,
        is_leader: bool,
        owner_urls: Mapping[str, str],
    ) -> None:
        """Run what the group assigned (after reading the config topic as far as the leader
        had; the monitor thread starts the queries) and stop what it revoked, before this
        returns."""
        self.read_configs(assignment.config_offset)
        with self._ops:
            revoked, new = self.role.take(assignment, is_leader=is_leader, owner_urls=owner_urls)
            self.generation = generation
            for name in sorted(revoked):
                self._stop_query(name)
                self._reconciled.pop(name, None)
            for name in new:
                # its local checkpoint may be older than what another worker did since
                shutil.rmtree(self._checkpoint(name), ignore_errors=True)
                self._reconciled.pop(name, None)
        with self._state_lock:  # started by the monitor thread: this one must heartbeat
            self.role.changed |= new
        with self._group_changed:
            self._group_changed.notify_all()
        log.info(
            "generation %d: running %s%s",
            generation,
            ", ".join(assignment.connectors) or "no connector",
            " (the leader)" if is_leader else "",
        )

    def unassign(self) -> None:
        """Stop every connector and know no leader: the group moved on without this worker."""
        with self._ops:
            for name in self.role.drop():
                self._stop_query(name)
                self._reconciled.pop(name, None)

    def forward_to(self, task_of: str | None = None) -> str | None:
        """``GroupRole.forward_to``: where a request must go, None here."""
        return self.role.forward_to(task_of)

    def _apply_config(self, key: bytes | None, value: bytes | None) -> None:
        """Apply a config topic record, and note the connector it is about (for ``_follow``),
        a restart request (read after the start) and a connector created or deleted."""
        text, parsed_value = (key or b"").decode(), decode(value)
        parsed = parse_config_key(text)
        existed = parsed is not None and parsed.connector in self.configs.configs
        self.configs.apply(text, parsed_value)
        if parsed is None:
            return
        self.role.changed.add(parsed.connector)
        if parsed.kind is ConfigKey.RESTART and parsed_value is not None and self._following:
            self.role.restarts[parsed.connector] = (
                bool(parsed_value.get("include-tasks")),
                bool(parsed_value.get("only-failed")),
            )
        exists = parsed.connector in self.configs.configs
        if existed != exists and self.role.is_leader and self.on_connectors_changed is not None:
            self.on_connectors_changed()

    def _follow(self) -> None:
        """In a group: make the queries of this worker's connectors match what the config
        topic says now (another worker's writes: a new config, a target state, a deletion,
        a restart request)."""
        if self.role.alone:
            return
        changed, restarts = self.read(self.role.pending)
        for name in changed:
            if self.read(partial(self._wanted, name)) != self._reconciled.get(name, ()):
                self._reconcile_quietly(name)
        for name, (include_tasks, only_failed) in restarts:
            try:
                self._restart_here(name, include_tasks=include_tasks, only_failed=only_failed)
            except ConnectError as error:
                log.warning("connector %s: cannot restart it: %s", name, error.message)

    def follow(self) -> None:
        """``_follow`` in the calling thread (the first assignment's connectors start before
        the worker's ``start`` returns, as a lone worker's do)."""
        with self._ops:
            self._follow()

    def _wanted(self, name: str) -> Wanted:
        config = self.configs.configs.get(name)
        if config is None:
            return None
        return dict(config), self.configs.target(name), list(self.configs.tasks.get(name, []))

    def _reconcile_quietly(self, name: str) -> None:
        try:
            self._reconcile_or_later(name)
        except ConnectError as error:
            log.warning("connector %s: %s", name, error.message)

    def _reconcile_or_later(self, name: str) -> None:
        """``_reconcile``, or, when an internal topic was too slow for it (a 500), again from
        the monitor in ``RETRY_S`` (reconciling twice does nothing twice)."""
        try:
            self._reconcile(name)
        except ConnectError as error:
            if error.status < 500:
                raise
            log.warning("connector %s: %s; again in %g s", name, error.message, RETRY_S)
            self._again[name] = time.monotonic() + RETRY_S

    # -- reads -----------------------------------------------------------------------------
    def read(self, query: Callable[[], T]) -> T:
        """Run ``query`` under the lock the topics' readers apply records under."""
        with self._state_lock:
            return query()

    def connector_names(self) -> list[str]:
        return self.read(lambda: sorted(self.configs.configs))

    def info(self, name: str) -> dict[str, Any]:
        """Connect's ``ConnectorInfo``."""

        def query() -> dict[str, Any]:
            config = self.configs.config(name)
            return {
                "name": name,
                "config": dict(config),
                "tasks": [
                    {"connector": name, "task": i}
                    for i in range(len(self.configs.tasks.get(name, [])))
                ],
                "type": _plugin_type(config),
            }

        return self.read(query)

    def status(self, name: str) -> dict[str, Any]:
        """Connect's ``ConnectorStateInfo``."""

        def query() -> dict[str, Any]:
            config = self.configs.config(name)
            connector = self.statuses.connectors.get(name) or Status("UNASSIGNED", self.worker_id)
            tasks = [
                _state(
                    self.statuses.tasks.get((name, i)) or Status("UNASSIGNED", self.worker_id), id=i
                )
                for i in range(len(self.configs.tasks.get(name, [])))
            ]
            return {
                "name": name,
                "connector": _state(connector),
                "tasks": tasks,
                "type": _plugin_type(config),
            }

        return self.read(query)

    def task_status(self, name: str, task: int) -> dict[str, Any]:
        status = self.status(name)
        for entry in status["tasks"]:
            if entry["id"] == task:
                return dict(entry)
        raise ConnectError.task_not_found(name, task)

    def tasks(self, name: str) -> list[dict[str, Any]]:
        def query() -> list[dict[str, Any]]:
            return [
                {"id": {"connector": name, "task": i}, "config": dict(c)}
                for i, c in enumerate(self.configs.task_configs(name))
            ]

        return self.read(query)

    def active_topics(self, name: str) -> list[str]:
        """KIP-558's active topics of a connector."""

        def query() -> list[str]:
            self.configs.config(name)
            return sorted(self.statuses.topics.get(name, ()))

        return self.read(query)

    # -- writes ----------------------------------------------------------------------------
    def validate(self, plugin_name: str, config: Mapping[str, str]) -> dict[str, Any]:
        """Connect's ``ConfigInfos`` of ``config``, with its client overrides the worker's
        ``connector.client.config.override.policy`` forbids among the errors."""
        infos = find_plugin(plugin_name).validate(config)
        refused = policy_refusals(self.settings.override_policy, config)
        required = config.get("exactly.once.support", "").strip() == "required"
        if required and not self.settings.exactly_once_source:
            _add_error(
                infos,
                "exactly.once.support",
                "This worker does not have exactly-once source support enabled"
                " (exactly.once.source.support=enabled).",
            )
        return with_overrides(infos, config, refused)

    def put(
        self,
        name: str,
        config: Config,
        *,
        create_only: bool,
        initial: TargetState = TargetState.STARTED,
    ) -> tuple[bool, dict[str, Any]]:
        """Create or update a connector: (created, its info); a 400 naming every problem of
        the config, a 409 for ``create_only`` and an existing connector."""
        if "connector.class" not in config:
            raise ConnectError.bad_request(
                "Connector config " + str(config) + " contains no connector type"
            )
        errors = error_messages(self.validate(config["connector.class"], {**config, "name": name}))
        if errors:
            raise ConnectError.bad_request(
                f"Connector configuration is invalid and contains the following {len(errors)}"
                " error(s):\n" + "\n".join(errors) + "\nYou can also find the above list of"
                " errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"
            )
        with self._ops:
            exists = self.read(lambda: name in self.configs.configs)
            if exists and create_only:
                raise ConnectError.already_exists(name)
            created, records = self.read(lambda: self.configs.plan_put(name, config, initial))
            self._write_configs(records)
            if created:  # a checkpoint a deleted connector of this name left is not its
                shutil.rmtree(self._checkpoint(name), ignore_errors=True)
            self._reconcile(name)
        if created and not self.role.alone:
            self._start_when_assigned(name)
        return created, self.info(name)

    def _start_when_assigned(self, name: str) -> None:
        """In a group: wait (up to the timeout) for the rebalance a new connector causes; when
        this worker got it, start it before answering, as a lone worker does."""
        with self._group_changed:
            self._group_changed.wait_for(
                lambda: name in (self.role.assigned or ()) or name in self.role.owner_urls,
                self.settings.timeout,
            )
        if self.role.runs(name):
            with self._ops:
                self._reconcile(name)

    def delete(self, name: str) -> None:
        with self._ops:
            records = self.read(lambda: self.configs.plan_delete(name))
            task_count = self.read(lambda: len(self.configs.tasks.get(name, [])))
            self._stop_query(name)
            self._write_configs(records)
            tombstones = self.read(
                lambda: self.statuses.plan(name, None, dict.fromkeys(range(task_count)))
            )
            topics = self.read(lambda: sorted(self.statuses.topics.get(name, ())))
            self._write_status([*tombstones, *_topic_tombstones(name, topics)])
            shutil.rmtree(self._checkpoint(name), ignore_errors=True)

    def set_target(self, name: str, target: TargetState) -> None:
        with self._ops:
            records = self.read(lambda: self.configs.plan_target(name, target))
            self._write_configs(records)
            self._reconcile(name)

    def restart(self, name: str, *, include_tasks: bool, only_failed: bool) -> dict[str, Any]:
        """Restart the connector (and with ``include_tasks`` its tasks; with ``only_failed``
        only what failed); the status as it was, what restarts shown RESTARTING. In a group the
        leader writes Connect's restart request to the config topic, for the worker that runs
        the connector."""
        if self.role.alone:
            return self._restart_here(name, include_tasks=include_tasks, only_failed=only_failed)
        status = self._restart_plan(name, include_tasks=include_tasks, only_failed=only_failed)[0]
        request = {"include-tasks": include_tasks, "only-failed": only_failed}
        self._write_configs([(f"{ConfigKey.RESTART.value}{name}", request)])
        return status

    def _restart_here(self, name: str, *, include_tasks: bool, only_failed: bool) -> dict[str, Any]:
        with self._ops:
            status, restart = self._restart_plan(
                name, include_tasks=include_tasks, only_failed=only_failed
            )
            # the connector and its tasks are one Spark query: restarting either restarts it
            if restart:
                self._stop_query(name)
                self._reconcile(name)
            return status

    def _restart_plan(
        self, name: str, *, include_tasks: bool, only_failed: bool
    ) -> tuple[dict[str, Any], bool]:
        """The status a restart answers with, and whether the query restarts."""
        status = self.status(name)
        connector_failed = status["connector"]["state"] == "FAILED"
        if connector_failed or not only_failed:
            status["connector"]["state"] = "RESTARTING"
            status["connector"].pop("trace", None)
        restarted = [
            task
            for task in status["tasks"]
            if include_tasks and (task["state"] == "FAILED" or not only_failed)
        ]
        for task in restarted:
            task["state"] = "RESTARTING"
            task.pop("trace", None)
        return status, bool(restarted or connector_failed)

    def restart_task(self, name: str, task: int) -> None:
        self.task_status(name, task)
        with self._ops:
            self._stop_query(name)
            self._reconcile(name)

    def reset_topics(self, name: str) -> None:
        with self._ops:
            topics = self.active_topics(name)
            self._write_status(_topic_tombstones(name, topics))

    # -- offsets (KIP-875) -----------------------------------------------------------------
    def _admin_offsets(self, name: str, config: Mapping[str, str]) -> SinkOffsets:
        """A sink connector's group offsets through its own admin client, as Kafka Connect
        makes it: the worker's ``admin.*`` settings, then the connector's ``admin.override.*``
        (client id ``connector-adminclient-<name>`` unless they name one)."""
        options = {
            **self.settings.spark_options(),
            "kafka.client.id": f"connector-adminclient-{name}",
            **client_options(self.settings.client_overrides, config, "admin"),
        }
        try:
            client = client_config(options)
        except ValueError as error:
            raise ConnectError.bad_request(f"The connector's admin client: {error}") from None
        return SinkOffsets(client, self.settings.timeout)

    def offsets(self, name: str) -> dict[str, Any]:
        config = self.read(lambda: dict(self.configs.config(name)))
        if _plugin_type(config) == "sink":
            admin = self._admin_offsets(name, config)
            return {"offsets": admin.listed(_sink_group(name, config))}
        return {"offsets": self.read(lambda: self.source_offsets.listed(name))}

    def alter_offsets(
        self, name: str, entries: list[tuple[dict[str, Any], dict[str, Any] | None]] | None
    ) -> str:
        """Alter (``entries``) or reset (None) a stopped connector's offsets; the message."""
        with self._ops:
            config = self.read(lambda: dict(self.configs.config(name)))
            if self.read(lambda: self.configs.target(name)) is not TargetState.STOPPED:
                raise ConnectError.bad_request(
                    "Connectors must be in the STOPPED state before their offsets can be modified."
                    " This can be done for the specified connector by issuing a 'PUT' request to"
                    f" the '/connectors/{name}/stop' endpoint"
                )
            verb = "altered" if entries is not None else "reset"
            if _plugin_type(config) == "sink":
                group, admin = _sink_group(name, config), self._admin_offsets(name, config)
                if entries is None:
                    admin.reset(group)
                else:
                    admin.alter(group, entries)
                message = f"The offsets for this connector have been {verb} successfully"
            else:
                records = self.read(lambda: self.source_offsets.records(name, entries))
                if records:
                    self._offset_log.write(records)
                message = (
                    f"The Connect framework-managed offsets for this connector have been {verb}"
                    " successfully. However, if this connector manages offsets externally, they"
                    f" will need to be manually {verb} in the system"
                    " that the connector uses."
                )
            # the query's checkpoint holds offsets too: the next start reads the new ones
            shutil.rmtree(self._checkpoint(name), ignore_errors=True)
            return message

    # -- running queries -------------------------------------------------------------------
    def _reconcile(self, name: str) -> None:
        """Make the query of ``name`` and its status match the config topic: the leader writes
        its task configs, the worker that runs it (re)starts, pauses or stops its query."""
        wanted = self.read(partial(self._wanted, name))
        before = self._reconciled.get(name, ())
        if before != wanted:
            self._stop_query(name)  # a new config (or none) restarts the query
        self._reconciled[name] = wanted
        if wanted is None:
            return
        config, target, _ = wanted
        if not self.role.alone and before and before[1] is TargetState.STOPPED:
            # its offsets may have been altered (KIP-875) by the leader, not here
            shutil.rmtree(self._checkpoint(name), ignore_errors=True)
        if not self.role.runs(name):
            if self.role.is_leader and target is TargetState.STARTED:
                try:
                    self._write_task_configs(name, config)
                except Exception:  # the worker that runs it reports the failure
                    log.warning("connector %s: no task configs", name, exc_info=True)
            return
        if target is not TargetState.STARTED:
            self._stop_query(name)
            state = "PAUSED" if target is TargetState.PAUSED else "STOPPED"
            self._set_status(name, state, tasks_state=None if state == "STOPPED" else state)
            return
        plugin = find_plugin(config["connector.class"])()
        try:
            if self.role.is_leader:
                self._write_task_configs(name, config)
                self._reconciled[name] = self.read(partial(self._wanted, name))
            if name not in self._queries:
                self._queries[name] = plugin.start(self._context(name, plugin, config))
                if self._retries.pop(name, None) is not None:
                    log.info("connector %s: started again", name)
                self._write_status(
                    _topic_records(
                        name,
                        plugin.topics(config),
                        self.read(lambda: self.statuses.topics.get(name, set())),
                    )
                )
        except ConnectError:
            raise
        except Exception as error:
            if self._retry(name, plugin, config, error):
                self._set_status(name, "RUNNING")  # waiting it out, as a Kafka client does
                return
            log.exception("connector %s failed to start", name)
            self._set_status(name, "FAILED", trace=_trace(error), tasks_state="UNASSIGNED")
            return
        self._set_status(name, "RUNNING")

    def _write_task_configs(self, name: str, config: Config) -> None:
        plugin = find_plugin(config["connector.class"])()
        task_configs = plugin.task_configs(config, int(config.get("tasks.max", "1")))
        self._write_configs(self.read(lambda: self.configs.plan_tasks(name, task_configs)))

    def _context(self, name: str, plugin: ConnectorPlugin, config: Config) -> RunContext:
        settings = self.settings

        def converter_of(which: str) -> Any:
            class_name = config.get(f"{which}.converter") or getattr(settings, f"{which}_converter")
            prefix = f"{which}.converter."
            source = config if f"{which}.converter" in config else settings.converter_settings
            return converter(
                class_name,
                {k.removeprefix(prefix): v for k, v in source.items() if k.startswith(prefix)},
            )

        checkpoint = self._checkpoint(name)
        group = _sink_group(name, config)
        start = "earliest"
        reads = "consumer" if plugin.kind == "sink" else "producer"
        if plugin.kind == "sink" and not checkpoint.exists():
            start = self.sink_offsets.starting_offsets(group, plugin.topics(config))
        return RunContext(
            spark=self.spark,
            name=name,
            config=config,
            tasks=self.read(lambda: list(self.configs.tasks.get(name, []))),
            key_converter=converter_of("key"),
            value_converter=converter_of("value"),
            spark_options={
                **settings.spark_options(),
                **client_options(settings.client_overrides, config, reads),
            },
            producer_options={
                **settings.spark_options(),
                **client_options(settings.client_overrides, config, "producer"),
            },
            client=self.client,
            offsets_topic=settings.offset_topic,
            source_offset=lambda p: self.read(lambda: self.source_offsets.offset(name, p)),
            checkpoint=str(checkpoint),
            sink_group=group,
            sink_start=start,
            transactions=(
                f"{settings.group_id}-{name}"
                if plugin.exactly_once and settings.exactly_once_source
                else None
            ),
        )

    def _checkpoint(self, name: str) -> Path:
        return self.settings.checkpoint(self.cluster_id or "unknown-cluster", name)

    def _stop_query(self, name: str) -> None:
        self._retries.pop(name, None)
        self._failing.pop(name, None)
        query = self._queries.pop(name, None)
        if query is not None:
            try:
                query.stop()
            except Exception:  # a failed query may throw its failure again
                log.debug("stopping the query of %s", name, exc_info=True)

    def _watch(self, warm_up: bool) -> None:
        """Notice failed queries: their tasks become FAILED with the failure's trace. With
        ``warm_up``, start the session first, in this thread that lives as long as the worker
        (a session made in a thread that ends loses py4j's connection of that thread)."""
        if warm_up:
            self._warm_up()
        while not self._stopping.wait(MONITOR_INTERVAL_S):
            try:
                with self._ops:
                    self._look()
            except ConnectError as error:  # an internal topic read or written too slowly
                log.warning("%s; looking again in %g s", error.message, MONITOR_INTERVAL_S)

    def _look(self) -> None:
        """One round of ``_watch``: follow the config topic, note stopped queries, and start
        again the connectors whose retry is due."""
        self._follow()
        for name, query in list(self._queries.items()):
            if query.isActive:
                continue
            error = query.exception()
            if error is None or not self._retry_failed(name, error):
                trace = _trace(error) if error is not None else "the query stopped"
                log.warning("connector %s: its query stopped: %s", name, trace.splitlines()[0])
                # before the query is forgotten: a write that timed out is made next round
                self._set_status(name, "RUNNING", tasks_state="FAILED", trace=trace)
            del self._queries[name]
        now = time.monotonic()
        for name in list(self._failing):
            running = self._queries.get(name)
            if running is not None and running.lastProgress is not None:
                self._failing.pop(name)  # it works again
        for name, when in list(self._retries.items()):
            if when <= now and name not in self._queries:
                try:
                    self._reconcile_or_later(name)
                except ConnectError as error:  # a refusal, not worth retrying
                    self._retries.pop(name, None)
                    self._set_status(name, "FAILED", trace=_trace(error))
                if name in self._again:  # the topics were slow: tried again from there
                    self._retries.pop(name, None)
        for name, when in list(self._again.items()):
            if when <= now:
                del self._again[name]
                self._reconcile_or_later(name)

    def _retry_failed(self, name: str, error: BaseException) -> bool:
        """``_retry`` for the query of ``name`` that stopped with ``error``."""
        config = self.read(lambda: dict(self.configs.configs.get(name, {})))
        return bool(config) and self._retry(
            name, find_plugin(config["connector.class"])(), config, error
        )

    def _retry(
        self, name: str, plugin: ConnectorPlugin, config: Config, error: BaseException
    ) -> bool:
        """Start ``name`` again later, with backoff, when its plugin calls ``error``
        retriable and ``errors.retry.timeout`` has not passed; one warning line when the
        trouble starts, debug lines after."""
        reason = plugin.retriable(config, error)
        policy = RetryPolicy.of(config, plugin.retry_timeout_ms)
        now = time.monotonic()
        since, attempts = self._failing.get(name, (now, 0))
        if reason is None or policy.gives_up(now - since):
            self._retries.pop(name, None)
            self._failing.pop(name, None)
            if reason is not None and attempts:
                log.warning("connector %s: %s; retried for errors.retry.timeout", name, reason)
            return False
        self._retries[name] = now + policy.delay_s(attempts)
        self._failing[name] = (since, attempts + 1)
        (log.debug if attempts else log.warning)(
            "connector %s: %s; retrying every %g s at most, still RUNNING",
            name,
            reason,
            policy.delay_max_ms / 1000,
        )
        return True

    # -- records ---------------------------------------------------------------------------
    def _write_configs(self, records: list[Record]) -> None:
        if records:
            self._config_log.write((k.encode(), encode(v)) for k, v in records)

    def _write_status(self, records: list[Record]) -> None:
        if records:
            self._status_log.write((k.encode(), encode(v)) for k, v in records)

    def _set_status(
        self, name: str, state: str, *, tasks_state: str | None = "", trace: str | None = None
    ) -> None:
        """The connector's status, and its tasks' (``tasks_state``: "" the same as the
        connector's, None tombstones); a trace goes with FAILED states only."""
        tasks_state = state if tasks_state == "" else tasks_state
        count = self.read(lambda: len(self.configs.tasks.get(name, [])))
        old_count = self.read(lambda: sum(1 for (n, _) in self.statuses.tasks if n == name))

        def status(value: str | None) -> Status | None:
            if value is None:
                return None
            return Status(
                value, self.worker_id, self.generation, trace if value == "FAILED" else None
            )

        tasks = {i: status(tasks_state) for i in range(count)}
        tasks.update(dict.fromkeys(range(count, old_count)))
        self._write_status(self.read(lambda: self.statuses.plan(name, status(state), tasks)))


def _state(status: Status, **more: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {**more, "state": status.state, "worker_id": status.worker_id}
    if status.trace is not None:
        entry["trace"] = status.trace
    return entry


def _plugin_type(config: Mapping[str, str]) -> str:
    try:
        return find_plugin(config.get("connector.class", "")).kind
    except ConnectError:
        return "unknown"


def _sink_group(name: str, config: Mapping[str, str]) -> str:
    return config.get("consumer.override.group.id") or f"connect-{name}"


def _trace(error: BaseException) -> str:
    return "".join(traceback.format_exception(error)).strip()


def _topic_records(name: str, topics: list[str], known: set[str]) -> list[Record]:
    now = int(time.time() * 1000)
    return [
        (
            f"status-topic-{topic}:connector-{name}",
            {
                "topic": {
                    "name": topic,
                    "connector": name,
                    "task": 0,
                    "partition": 0,
                    "discoverTimestamp": now,
                }
            },
        )
        for topic in topics
        if topic not in known
    ]


def _topic_tombstones(name: str, topics: list[str]) -> list[Record]:
    return [(f"status-topic-{topic}:connector-{name}", None) for topic in topics]


def _add_error(infos: dict[str, Any], name: str, message: str) -> None:
    """``message`` among the errors of setting ``name`` in a validate answer."""
    for entry in infos["configs"]:
        if entry["value"]["name"] == name:
            entry["value"]["errors"].append(message)
            infos["error_count"] += 1
            return
