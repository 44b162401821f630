"""MirrorMaker 2's replication policies (``replication.policy.class``) and its topic and group
filters: how a topic is named on the target, where a remote topic came from, which topics and
groups a flow mirrors, and which never (internal topics, cycles). Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Self

__all__ = [
    "DefaultReplicationPolicy",
    "Flow",
    "GroupFilter",
    "IdentityReplicationPolicy",
    "PolicyError",
    "TopicFilter",
    "replication_policy",
]

DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
TOPICS_DEFAULT = ".*"
TOPICS_EXCLUDE_DEFAULT = r".*[\-\.]internal, .*\.replica, __.*"
GROUPS_DEFAULT = ".*"
GROUPS_EXCLUDE_DEFAULT = "console-consumer-.*, connect-.*, __.*"
HEARTBEATS_TOPIC = "heartbeats"


class PolicyError(ValueError):
    """A replication policy or filter setting that cannot be used; the message names it."""


@dataclass(frozen=True)
class DefaultReplicationPolicy:
    """Remote topics are ``<source><separator><topic>`` (``replication.policy.separator``);
    internal topics use the separator too unless
    ``replication.policy.internal.topic.separator.enabled`` is false."""

    separator: str = "."
    internal_separator: str = "."
    heartbeats: str = HEARTBEATS_TOPIC

    def format_remote_topic(self, source: str, topic: str) -> str:
        return f"{source}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """The cluster a remote topic came from (None: not a remote topic)."""
        parts = topic.split(self.separator)
        while parts and not parts[-1]:  # Java's split drops trailing empty strings
            parts.pop()
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        """The topic's name one hop upstream (None: not a remote topic)."""
        source = self.topic_source(topic)
        return None if source is None else topic[len(source) + len(self.separator) :]

    def offset_syncs_topic(self, cluster: str) -> str:
        return f"mm2-offset-syncs{self.internal_separator}{cluster}{self.internal_suffix}"

    def checkpoints_topic(self, cluster: str) -> str:
        return f"{cluster}{self._checkpoints_suffix}"

    def heartbeats_topic(self) -> str:
        return self.heartbeats

    @property
    def internal_suffix(self) -> str:
        """How MM2's internal topics end (``.internal``)."""
        return f"{self.internal_separator}internal"

    @property
    def _checkpoints_suffix(self) -> str:
        return f"{self.internal_separator}checkpoints{self.internal_suffix}"

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(self._checkpoints_suffix)

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return topic.endswith(self.internal_suffix)

    def original_topic(self, topic: str) -> str:
        """The topic's name on the cluster where it was first written."""
        upstream = self.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return topic
        return self.original_topic(upstream)

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.original_topic(topic) == self.heartbeats_topic()

    def is_internal_topic(self, topic: str) -> bool:
        """MM2's internal topics and Kafka's own (``__*``, ``.*``): never mirrored."""
        return self.is_mm2_internal_topic(topic) or topic.startswith(("__", "."))

    def is_cycle(self, topic: str, target: str) -> bool:
        """Whether ``topic`` came from ``target`` at some hop (mirroring it back is a cycle)."""
        source = self.topic_source(topic)
        if source is None:
            return False
        if source == target:
            return True
        upstream = self.upstream_topic(topic)
        return upstream is not None and upstream != topic and self.is_cycle(upstream, target)


@dataclass(frozen=True)
class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Remote topics keep their names (heartbeats excepted, to keep them apart), so a
    topic's source is only known from ``source.cluster.alias``; it cannot detect cycles,
    so it suits one-way flows only (migration, aggregation)."""

    source_alias: str | None = None

    def _looks_like_heartbeat(self, topic: str) -> bool:
        return topic.endswith(self.heartbeats_topic())

    def format_remote_topic(self, source: str, topic: str) -> str:
        if self._looks_like_heartbeat(topic):
            return super().format_remote_topic(source, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().topic_source(topic)
        return self.source_alias

    def upstream_topic(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().upstream_topic(topic)
        return topic


def replication_policy(config: Mapping[str, str]) -> DefaultReplicationPolicy:
    """The policy a connector's (or ``mm2.properties``') settings name."""
    name = config.get("replication.policy.class", DEFAULT_POLICY).strip()
    separator = config.get("replication.policy.separator", ".")
    internal = separator
    if config.get("replication.policy.internal.topic.separator.enabled", "true").lower() == "false":
        internal = "."
    heartbeats = config.get("heartbeats.topic", HEARTBEATS_TOPIC)
    if not separator:
        raise PolicyError("replication.policy.separator: may not be empty")
    if name in (DEFAULT_POLICY, "DefaultReplicationPolicy"):
        return DefaultReplicationPolicy(separator, internal, heartbeats)
    if name in (IDENTITY_POLICY, "IdentityReplicationPolicy"):
        return IdentityReplicationPolicy(
            separator, internal, heartbeats, config.get("source.cluster.alias")
        )
    raise PolicyError(
        f"replication.policy.class: unknown policy {name!r}; strom has {DEFAULT_POLICY} and"
        f" {IDENTITY_POLICY}"
    )


def _patterns(config: Mapping[str, str], name: str, default: str) -> re.Pattern[str]:
    """A comma-separated list of regexes (MM2's ``topics``, ``groups``...) as one pattern."""
    text = config.get(name, default)
    parts = [p.strip() for p in text.split(",") if p.strip()]
    for part in parts:
        try:
            re.compile(part)
        except re.error as error:
            raise PolicyError(f"{name}: {part!r} is not a regular expression: {error}") from None
    return re.compile("|".join(f"(?:{p})" for p in parts) if parts else "(?!)")


@dataclass(frozen=True)
class _NameFilter:
    """Names matching the ``KIND`` regex list minus those matching ``KIND.exclude`` (or the
    older ``KIND.blacklist``), as MM2's default filters read them."""

    KIND: ClassVar[str]
    INCLUDE_DEFAULT: ClassVar[str]
    EXCLUDE_DEFAULT: ClassVar[str]
    include: re.Pattern[str]
    exclude: re.Pattern[str]

    @classmethod
    def of(cls, config: Mapping[str, str]) -> Self:
        key = f"{cls.KIND}.exclude"
        exclude = config.get(key, config.get(f"{cls.KIND}.blacklist"))
        return cls(
            _patterns(config, cls.KIND, cls.INCLUDE_DEFAULT),
            _patterns({key: exclude} if exclude is not None else {}, key, cls.EXCLUDE_DEFAULT),
        )

    def accepts(self, name: str) -> bool:
        return bool(self.include.fullmatch(name)) and not self.exclude.fullmatch(name)


class TopicFilter(_NameFilter):
    """MM2's ``DefaultTopicFilter``: ``topics`` minus ``topics.exclude`` (regex lists)."""

    KIND = "topics"
    INCLUDE_DEFAULT = TOPICS_DEFAULT
    EXCLUDE_DEFAULT = TOPICS_EXCLUDE_DEFAULT

    def should_replicate_topic(self, topic: str) -> bool:
        return self.accepts(topic)


class GroupFilter(_NameFilter):
    """MM2's ``DefaultGroupFilter``: ``groups`` minus ``groups.exclude`` (regex lists)."""

    KIND = "groups"
    INCLUDE_DEFAULT = GROUPS_DEFAULT
    EXCLUDE_DEFAULT = GROUPS_EXCLUDE_DEFAULT

    def should_replicate_group(self, group: str) -> bool:
        return self.accepts(group)


@dataclass(frozen=True)
class Flow:
    """One replication flow's naming decisions: ``source`` -> ``target`` under a policy."""

    source: str
    target: str
    policy: DefaultReplicationPolicy
    topics: TopicFilter

    @classmethod
    def of(cls, config: Mapping[str, str]) -> Flow:
        """From a MirrorMaker connector's settings (``source.cluster.alias`` ...)."""
        return cls(
            config.get("source.cluster.alias", "source").strip(),
            config.get("target.cluster.alias", "target").strip(),
            replication_policy(config),
            TopicFilter.of(config),
        )

    def should_replicate(self, topic: str) -> bool:
        """MirrorSourceConnector's rule: filtered in (heartbeats always), never internal
        topics, never a topic that came from the target (a cycle)."""
        return (
            (self.topics.should_replicate_topic(topic) or self.policy.is_heartbeats_topic(topic))
            and not self.policy.is_internal_topic(topic)
            and not self.policy.is_cycle(topic, self.target)
        )

    def remote_topic(self, topic: str) -> str:
        """The topic's name on the target."""
        return self.policy.format_remote_topic(self.source, topic)

    def checkpoint_topic(self, topic: str) -> str:
        """The name a checkpoint gives a source topic on the target: a topic that came from
        the target goes back under its name there, any other is the remote topic."""
        if self.policy.topic_source(topic) == self.target:
            return self.policy.upstream_topic(topic) or topic
        return self.remote_topic(topic)

    def source_pattern(self) -> str:
        """A regex (Python's, as the ``strom`` source's ``subscribePattern``) matching every
        topic ``should_replicate`` admits and few more: internal topics and (with prefixes to
        tell) cycles are left out at the source; the exact rule filters what gets through."""
        policy, sep = self.policy, re.escape(self.policy.separator)
        heartbeats = f"(?:.*{sep})?{re.escape(policy.heartbeats_topic())}"
        filtered = f"(?!(?:{self.topics.exclude.pattern})$)(?:{self.topics.include.pattern})"
        never = ["__", r"\.", f".*{re.escape(policy.internal_suffix)}$"]
        if not isinstance(policy, IdentityReplicationPolicy):
            # a remote topic of the target: its alias, a separator, then more than separators
            # (Java's split drops trailing empty parts: "B.." is no remote topic)
            never.append(f"(?:.*{sep})?{re.escape(self.target)}{sep}(?!(?:{sep})*$)")
        return "".join(f"(?!{n})" for n in never) + f"(?:{filtered}|{heartbeats})"
