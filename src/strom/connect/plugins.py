"""What a connector plugin is to the worker: its Kafka Connect class name (and aliases), type,
setting definitions, task configs, and how it starts its Spark Structured Streaming query; the
settings every connector has (Kafka's ``ConnectorConfig``); and the catalogue of plugins."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from strom import __version__
from strom.connect.config_def import NO_DEFAULT, Definition, at_least, one_of, validate
from strom.connect.converters import CONVERTERS, converter, converter_problem
from strom.connect.errors import ConnectError
from strom.connect.transforms.specs import problems as transform_problems

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from strom.connect.converters import Converter

__all__ = ["ConnectorPlugin", "RunContext", "find_plugin", "plugins"]

Config = Mapping[str, str]
COMMON = "Common"
ERRORS = "Error Handling"


def _common(  # noqa: PLR0917
    order: int, name: str, kind: str, default: object, doc: str, display: str, **more: Any
) -> Definition:
    return Definition(
        name,
        kind,
        default,
        "HIGH" if default is NO_DEFAULT else "LOW",
        doc,
        COMMON,
        order,
        display,
        **more,
    )


def _not_empty(value: Any) -> str | None:
    return None if value else "String may not be empty"


COMMON_DEFINITIONS = (
    _common(
        1,
        "name",
        "STRING",
        NO_DEFAULT,
        "Globally unique name to use for this connector.",
        "Connector name",
        check=_not_empty,
    ),
    _common(
        2,
        "connector.class",
        "STRING",
        NO_DEFAULT,
        "Name or alias of the class for this connector.",
        "Connector class",
    ),
    _common(
        3,
        "tasks.max",
        "INT",
        1,
        "Maximum number of tasks to use for this connector.",
        "Tasks max",
        check=at_least(1),
    ),
    _common(
        4,
        "key.converter",
        "CLASS",
        None,
        "Converter class for record keys; the worker's key.converter when unset.",
        "Key converter class",
    ),
    _common(
        5,
        "value.converter",
        "CLASS",
        None,
        "Converter class for record values; the worker's value.converter when unset.",
        "Value converter class",
    ),
    _common(
        6,
        "header.converter",
        "CLASS",
        None,
        "HeaderConverter class for record headers.",
        "Header converter class",
    ),
    _common(
        7,
        "config.action.reload",
        "STRING",
        "restart",
        "The action Connect takes when a configuration provider's data changes: none or restart.",
        "Reload Action",
        check=one_of("none", "restart"),
    ),
    Definition(
        "transforms",
        "LIST",
        "",
        "LOW",
        "Aliases for the transformations to be applied to records.",
        "Transforms",
        1,
        "Transforms",
    ),
    Definition(
        "predicates",
        "LIST",
        "",
        "LOW",
        "Aliases for the predicates used by transformations.",
        "Predicates",
        1,
        "Predicates",
    ),
    Definition(
        "errors.retry.timeout",
        "LONG",
        0,
        "MEDIUM",
        "The maximum duration in milliseconds that a failed operation will be reattempted.",
        ERRORS,
        1,
        "Retry Timeout for Errors",
    ),
    Definition(
        "errors.retry.delay.max.ms",
        "LONG",
        60000,
        "MEDIUM",
        "The maximum duration in milliseconds between consecutive retry attempts.",
        ERRORS,
        2,
        "Maximum Delay Between Retries for Errors",
    ),
    Definition(
        "errors.tolerance",
        "STRING",
        "none",
        "MEDIUM",
        "Behavior for tolerating errors during connector operation: none or all.",
        ERRORS,
        3,
        "Error Tolerance",
        check=one_of("none", "all"),
    ),
    Definition(
        "errors.log.enable",
        "BOOLEAN",
        False,
        "MEDIUM",
        "Whether errors are logged.",
        ERRORS,
        4,
        "Log Errors",
    ),
    Definition(
        "errors.log.include.messages",
        "BOOLEAN",
        False,
        "MEDIUM",
        "Whether the records that caused a failure are logged.",
        ERRORS,
        5,
        "Log Error Details",
    ),
)
"""Kafka's ``ConnectorConfig``: the settings of every connector."""

SINK_DEFINITIONS = (
    _common(4, "topics", "LIST", "", "List of topics to consume, separated by commas.", "Topics"),
    _common(
        4,
        "topics.regex",
        "STRING",
        "",
        "Regular expression giving topics to consume.",
        "Topics regex",
    ),
    Definition(
        "errors.deadletterqueue.topic.name",
        "STRING",
        "",
        "MEDIUM",
        "The name of the topic to be used as the dead letter queue.",
        ERRORS,
        6,
        "Dead Letter Queue Topic Name",
    ),
    Definition(
        "errors.deadletterqueue.context.headers.enable",
        "BOOLEAN",
        False,
        "MEDIUM",
        "If true, add headers containing error context to the messages written to the dead"
        " letter queue.",
        ERRORS,
        8,
        "Enable Error Context Headers",
    ),
)
"""Kafka's ``SinkConnectorConfig`` on top of the common settings."""

EXACTLY_ONCE = "Exactly Once Support"
SOURCE_DEFINITIONS = (
    Definition(
        "exactly.once.support",
        "STRING",
        "requested",
        "MEDIUM",
        "Permitted values are requested, required. If set to 'required', the connector is"
        " refused unless the worker has exactly.once.source.support=enabled and the connector"
        " can write exactly once.",
        EXACTLY_ONCE,
        1,
        "Exactly once support",
        check=one_of("requested", "required"),
    ),
    Definition(
        "transaction.boundary",
        "STRING",
        "poll",
        "MEDIUM",
        "Permitted values are poll, interval, connector. strom's transactions are its"
        " micro-batches (poll).",
        EXACTLY_ONCE,
        2,
        "Transaction Boundary",
        check=one_of("poll", "interval", "connector"),
    ),
)
"""Kafka's ``SourceConnectorConfig`` (KIP-618) on top of the common settings."""


@dataclass(frozen=True)
class RunContext:
    """What a connector's query is started with."""

    spark: SparkSession
    name: str
    config: Config
    tasks: Sequence[Config]
    key_converter: Converter
    value_converter: Converter
    spark_options: Mapping[str, str]
    """The ``strom`` source's and sink's options reaching the worker's cluster, with the
    connector's client settings (``client_overrides``): a sink's consumer's, a source's
    producer's."""
    producer_options: Mapping[str, str]
    """The same with the producer's settings, for a sink's writes (its dead letter queue)."""
    client: Mapping[str, str]
    """The worker's librdkafka settings."""
    offsets_topic: str
    source_offset: Callable[[Mapping[str, Any]], Mapping[str, Any] | None]
    """A source partition's offset in the offsets topic, or None."""
    checkpoint: str
    sink_group: str
    sink_start: str = "earliest"
    """A sink's ``startingOffsets``: its group's committed offsets when it has some."""
    transactions: str | None = None
    """For a source writing exactly once (KIP-618), the prefix of its transactional ids."""


def _converter_problem(name: str, config: Config) -> str | None:
    """Why the converter ``name`` of ``config`` (its class and ``name.*`` settings) cannot be
    used, or None."""
    class_name = config[name].strip()
    problem = converter_problem(class_name)
    if problem is None:
        prefix = f"{name}."
        try:
            converter(
                class_name,
                {k.removeprefix(prefix): v for k, v in config.items() if k.startswith(prefix)},
            )
        except ValueError as error:
            return str(error)
    return problem


class ConnectorPlugin(ABC):
    """A connector: ``class_name`` is the Kafka Connect class it stands for."""

    class_name: ClassVar[str]
    kind: ClassVar[str]  # "source" or "sink"
    definitions: ClassVar[tuple[Definition, ...]] = ()
    tolerates_errors: ClassVar[bool] = False
    """Whether the connector runs ``errors.tolerance=all`` (and a sink's dead letter queue)."""
    exactly_once: ClassVar[bool] = False
    """Whether the source writes its records and offsets in one transaction per micro-batch
    when the worker has ``exactly.once.source.support=enabled`` (KIP-618)."""
    retry_timeout_ms: ClassVar[int | None] = 0
    """``errors.retry.timeout`` when the config gives none: Kafka's 0 (a failure is the
    task's at once); None for a connector that waits for its cluster as a client does."""

    @classmethod
    def aliases(cls) -> tuple[str, ...]:
        """Kafka's aliases: the simple class name, and without its ``Connector`` suffix."""
        simple = cls.class_name.rpartition(".")[2]
        return (cls.class_name, simple, simple.removesuffix("Connector"))

    @classmethod
    def all_definitions(cls) -> tuple[Definition, ...]:
        return (
            COMMON_DEFINITIONS
            + (SINK_DEFINITIONS if cls.kind == "sink" else SOURCE_DEFINITIONS)
            + cls.definitions
        )

    @classmethod
    def problems(cls, config: Config) -> dict[str, list[str]]:
        """Errors beyond single settings (validate's ``extra``), keyed by setting."""
        found: dict[str, list[str]] = {}
        for name in ("key.converter", "value.converter"):
            if name in config and (problem := _converter_problem(name, config)):
                found[name] = [f"Invalid value {config[name]} for configuration {name}: {problem}"]
        found.update(transform_problems(config))
        if config.get("errors.tolerance", "none").strip() == "all" and not cls.tolerates_errors:
            found["errors.tolerance"] = [
                "errors.tolerance=all is not supported by this connector in strom yet"
            ]
        if cls.kind == "source":
            found.update(cls._exactly_once_problems(config))
        if cls.kind == "sink":
            topics, regex = config.get("topics", "").strip(), config.get("topics.regex", "").strip()
            if topics and regex:
                found["topics"] = [
                    "topics and topics.regex are mutually exclusive options, but both are set."
                ]
            elif not topics and not regex:
                found["topics"] = ["Must configure one of topics or topics.regex"]
            dlq = config.get("errors.deadletterqueue.topic.name", "").strip()
            if dlq and not cls.tolerates_errors:
                found["errors.deadletterqueue.topic.name"] = [
                    "Dead letter queues are not supported by this connector in strom yet"
                ]
        return found

    @classmethod
    def _exactly_once_problems(cls, config: Config) -> dict[str, list[str]]:
        """KIP-618's checks of a source's own settings (the worker's are the herder's)."""
        found: dict[str, list[str]] = {}
        boundary = config.get("transaction.boundary", "poll").strip()
        if boundary in ("interval", "connector"):
            found["transaction.boundary"] = [
                f"transaction.boundary={boundary} is not supported: strom's source transactions"
                " are its micro-batches (poll)"
            ]
        required = config.get("exactly.once.support", "requested").strip() == "required"
        if required and not cls.exactly_once:
            found["exactly.once.support"] = [
                "The connector does not support exactly-once semantics with the provided"
                " configuration."
            ]
        return found

    @classmethod
    def validate(cls, config: Config) -> dict[str, Any]:
        """Connect's ``ConfigInfos`` for ``config``."""
        return validate(cls.class_name, cls.all_definitions(), config, cls.problems(config))

    @classmethod
    def info(cls) -> dict[str, str]:
        """An entry of ``GET /connector-plugins``."""
        return {"class": cls.class_name, "type": cls.kind, "version": __version__}

    def task_configs(self, config: Config, max_tasks: int) -> list[dict[str, str]]:
        """The configs of the connector's tasks (at most ``max_tasks``): a sink's tasks share
        its topics' partitions; a source is one Spark query, so one task (Spark's tasks are
        its parallelism)."""
        return [dict(config) for _ in range(max_tasks if self.kind == "sink" else 1)]

    def topics(self, config: Config) -> list[str]:
        """The topics the connector reads or writes (KIP-558's active topics): a sink's
        ``topics``; a source's are known once it runs (what its tasks wrote)."""
        return listed_topics(config) if self.kind == "sink" else []

    @abstractmethod
    def start(self, context: RunContext) -> StreamingQuery:
        """Start the connector's query."""

    def retriable(self, config: Config, error: BaseException) -> str | None:
        """Why a start or a query that failed with ``error`` is tried again (a cluster the
        connector reads is down for a while: it stays RUNNING, as a Kafka client keeps
        retrying), one line; None when its tasks fail."""
        return None


def listed_topics(config: Config) -> list[str]:
    """A sink's ``topics`` setting as names (empty when it reads ``topics.regex``)."""
    return [t.strip() for t in config.get("topics", "").split(",") if t.strip()]


def plugins() -> list[type[ConnectorPlugin]]:
    """Every connector plugin, by class name."""
    from strom.connect.connectors.cdc import PostgresConnector  # noqa: PLC0415
    from strom.connect.connectors.files import (  # noqa: PLC0415
        FileStreamSink,
        FileStreamSource,
        StorageSink,
        StorageSource,
    )
    from strom.connect.connectors.jdbc import JdbcSink, JdbcSource  # noqa: PLC0415
    from strom.connect.connectors.mirror.checkpoint import MirrorCheckpoint  # noqa: PLC0415
    from strom.connect.connectors.mirror.heartbeat import MirrorHeartbeat  # noqa: PLC0415
    from strom.connect.connectors.mirror.source import MirrorSource  # noqa: PLC0415

    return [
        FileStreamSink,
        FileStreamSource,
        JdbcSink,
        JdbcSource,
        MirrorCheckpoint,
        MirrorHeartbeat,
        MirrorSource,
        PostgresConnector,
        StorageSink,
        StorageSource,
    ]


def find_plugin(name: str) -> type[ConnectorPlugin]:
    """The plugin of a class name or alias; a 400 naming the available ones when none."""
    for plugin in plugins():
        if name.strip() in plugin.aliases():
            return plugin
    available = ", ".join(p.class_name for p in plugins())
    raise ConnectError.bad_request(
        f"Failed to find any class that implements Connector and which name matches {name}, "
        f"available connectors are: {available}"
    )


def converter_plugins() -> list[dict[str, str]]:
    """The converters' entries of ``GET /connector-plugins?connectorsOnly=false``."""
    return [{"class": name, "type": "converter", "version": __version__} for name in CONVERTERS]
