"""The settings MirrorMaker 2's connectors share (``MirrorConnectorConfig``), as Connect setting
definitions, and the checks every mirror connector makes of a config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from strom.connect.config_def import NO_DEFAULT, Definition
from strom.connect.connectors.mirror.policy import (
    DEFAULT_POLICY,
    GROUPS_EXCLUDE_DEFAULT,
    TOPICS_EXCLUDE_DEFAULT,
    GroupFilter,
    PolicyError,
    TopicFilter,
    replication_policy,
)

__all__ = ["COMMON", "GROUPS", "TOPICS", "interval_s", "mirror_problems", "query_name", "setting"]

if TYPE_CHECKING:
    from strom.connect.plugins import RunContext

GROUP = "Mirror"


def setting(name: str, kind: str, default: object, doc: str, order: int, **more: Any) -> Definition:
    """A mirror connector's setting, in MM2's terms."""
    importance = "HIGH" if default is NO_DEFAULT else "LOW"
    return Definition(name, kind, default, importance, doc, GROUP, order, name, **more)


COMMON = (
    setting("source.cluster.alias", "STRING", NO_DEFAULT, "Alias of source cluster", 1),
    setting("target.cluster.alias", "STRING", "target", "Alias of target cluster.", 2),
    setting(
        "source.cluster.bootstrap.servers",
        "LIST",
        NO_DEFAULT,
        "The source cluster's bootstrap servers.",
        3,
    ),
    setting(
        "target.cluster.bootstrap.servers",
        "LIST",
        "",
        "The target cluster's bootstrap servers (the worker's cluster when unset).",
        4,
    ),
    setting(
        "replication.policy.class",
        "CLASS",
        DEFAULT_POLICY,
        "Class which defines the remote topic naming convention.",
        5,
    ),
    setting(
        "replication.policy.separator",
        "STRING",
        ".",
        "Separator used in remote topic naming convention.",
        6,
    ),
    setting(
        "replication.policy.internal.topic.separator.enabled",
        "BOOLEAN",
        True,
        "Whether to use replication.policy.separator to name internal topics.",
        7,
    ),
    setting(
        "offset-syncs.topic.location",
        "STRING",
        "source",
        "The location (source/target) of the offset-syncs topic.",
        8,
    ),
)
TOPICS = (
    setting("topics", "LIST", ".*", "Topics to replicate. Supports comma-separated regex.", 20),
    setting(
        "topics.exclude",
        "LIST",
        TOPICS_EXCLUDE_DEFAULT,
        "Topics to exclude. Supports comma-separated regex.",
        21,
    ),
)
GROUPS = (
    setting("groups", "LIST", ".*", "Consumer groups to replicate. Supports regex.", 30),
    setting(
        "groups.exclude",
        "LIST",
        GROUPS_EXCLUDE_DEFAULT,
        "Consumer groups to exclude. Supports comma-separated regex.",
        31,
    ),
)


def mirror_problems(config: Mapping[str, str]) -> dict[str, list[str]]:
    """What a mirror connector refuses beyond single settings."""
    found: dict[str, list[str]] = {}
    try:
        replication_policy(config)
        TopicFilter.of(config)
        GroupFilter.of(config)
    except PolicyError as error:
        name = str(error).partition(":")[0]
        found[name] = [str(error)]
    location = config.get("offset-syncs.topic.location", "source").strip()
    if location not in ("source", "target"):
        found["offset-syncs.topic.location"] = [
            f"Invalid value {location} for configuration offset-syncs.topic.location:"
            " String must be one of: source, target"
        ]
    if config.get("transforms", "").strip():
        found["transforms"] = ["transforms are not supported by the mirror connectors in strom yet"]
    return found


def interval_s(config: Mapping[str, str], name: str, default: float) -> float:
    """A ``*.interval.seconds`` setting (validated as a LONG before the connector starts)."""
    return float(config.get(name, default))


def query_name(context: RunContext) -> str:
    """The connector's Spark query name, with its flow: the dedicated mode runs the same
    connector names for every flow in one session, where query names must differ."""
    config = context.config
    source = config.get("source.cluster.alias", "source").strip()
    target = config.get("target.cluster.alias", "target").strip()
    return f"connect-{context.name}-{source}-{target}"
