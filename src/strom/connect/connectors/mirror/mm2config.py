"""``mm2.properties``, MirrorMaker 2's dedicated-mode configuration (``MirrorMakerConfig``):
``clusters = A, B``, each cluster's client settings under its alias (``A.bootstrap.servers``,
``A.security.protocol``...), each flow's switch and settings under ``A->B.`` (``A->B.enabled``,
``A->B.topics``), and top-level settings every flow inherits. It gives the connectors' configs
and the Connect worker settings of each flow. Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CHECKPOINT", "HEARTBEAT", "SOURCE", "ConfigError", "FlowPlan", "MirrorMakerConfig"]

PACKAGE = "org.apache.kafka.connect.mirror."
SOURCE = PACKAGE + "MirrorSourceConnector"
CHECKPOINT = PACKAGE + "MirrorCheckpointConnector"
HEARTBEAT = PACKAGE + "MirrorHeartbeatConnector"
_FLOW = re.compile(r"^([^.>-]+(?:-[^.>-]+)*)->([^.>]+)\.(.+)$")
_CLIENT_PREFIXES = ("security.", "sasl.", "ssl.")
_WORKER_DEFAULTS = {
    "config.storage.replication.factor": "3",
    "offset.storage.replication.factor": "3",
    "status.storage.replication.factor": "3",
}
_WORKER_PREFIXES = ("spark.", "worker.")
"""Settings the herders take as they are (``worker.sync.timeout.ms``, Spark's)."""


class ConfigError(ValueError):
    """An ``mm2.properties`` that cannot run; the message names the setting to change."""


def _true(text: str | None, default: bool) -> bool:
    return default if text is None else text.strip().lower() == "true"


@dataclass(frozen=True)
class FlowPlan:
    """One source -> target pair: ``replicate`` runs the source and checkpoint connectors,
    ``heartbeats`` the heartbeat connector (MM2 runs it for a disabled pair too, so that the
    reverse flow carries heartbeats)."""

    source: str
    target: str
    replicate: bool
    heartbeats: bool

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"


@dataclass(frozen=True)
class MirrorMakerConfig:
    """The parsed file; ``of`` checks it and names the first problem."""

    clusters: tuple[str, ...]
    values: Mapping[str, str]

    @classmethod
    def of(cls, values: Mapping[str, str]) -> MirrorMakerConfig:
        text = values.get("clusters", "").strip()
        if not text:
            raise ConfigError("clusters: required, the aliases of the clusters (clusters = A, B)")
        clusters = tuple(c.strip() for c in text.split(",") if c.strip())
        config = cls(clusters, dict(values))
        for name in values:
            match = _FLOW.match(name)
            if match is None:
                continue
            for alias in match.group(1, 2):
                if alias not in clusters:
                    raise ConfigError(
                        f"{name}: unknown cluster alias {alias!r}; clusters are"
                        f" {', '.join(clusters)} (add it to clusters, or fix the name)"
                    )
        for alias in clusters:
            if not config.cluster(alias).get("bootstrap.servers", "").strip():
                raise ConfigError(f"{alias}.bootstrap.servers: required for cluster {alias}")
        if not any(flow.replicate for flow in config.flows()):
            pair = f"{clusters[0]}->{clusters[-1]}" if len(clusters) > 1 else "A->B"
            raise ConfigError(f"no replication flow is enabled: set {pair}.enabled = true")
        return config

    def _top_level(self) -> dict[str, str]:
        """Settings under no cluster's or flow's prefix."""
        prefixes = tuple(f"{alias}." for alias in self.clusters)
        return {
            k: v
            for k, v in self.values.items()
            if k != "clusters" and not k.startswith(prefixes) and not _FLOW.match(k)
        }

    def cluster(self, alias: str) -> dict[str, str]:
        """A cluster's client settings: the top-level security settings, then ``<alias>.*``."""
        found = {k: v for k, v in self._top_level().items() if k.startswith(_CLIENT_PREFIXES)}
        prefix = f"{alias}."
        found.update({k[len(prefix) :]: v for k, v in self.values.items() if k.startswith(prefix)})
        return found

    def flow_settings(self, source: str, target: str) -> dict[str, str]:
        """The top-level settings, overridden by ``<source>-><target>.*``."""
        prefix = f"{source}->{target}."
        found = self._top_level()
        found.update({k[len(prefix) :]: v for k, v in self.values.items() if k.startswith(prefix)})
        return found

    def flows(self) -> list[FlowPlan]:
        """Every ordered pair of clusters that runs something."""
        heartbeats = _true(self.values.get("emit.heartbeats.enabled"), True)
        plans = []
        for source in self.clusters:
            for target in self.clusters:
                if source == target:
                    continue
                settings = self.flow_settings(source, target)
                replicate = _true(self.values.get(f"{source}->{target}.enabled"), False)
                beats = _true(settings.get("emit.heartbeats.enabled"), heartbeats)
                if replicate or beats:
                    plans.append(FlowPlan(source, target, replicate, beats))
        return plans

    def connector_config(self, flow: FlowPlan, connector_class: str) -> dict[str, str]:
        """The config of one of the flow's connectors, as MM2 builds it."""
        config = {
            k: v
            for k, v in self.flow_settings(flow.source, flow.target).items()
            if k != "enabled" and not k.startswith((*_WORKER_PREFIXES, *_WORKER_DEFAULTS))
        }
        config.update(
            {
                "name": connector_class.rpartition(".")[2],
                "connector.class": connector_class,
                "source.cluster.alias": flow.source,
                "target.cluster.alias": flow.target,
            }
        )
        for side, alias in (("source", flow.source), ("target", flow.target)):
            config.update({f"{side}.cluster.{k}": v for k, v in self.cluster(alias).items()})
        return config

    def connectors(self, flow: FlowPlan) -> list[dict[str, str]]:
        """The configs of the connectors the flow runs (the checkpoint connector not with
        ``emit.checkpoints.enabled = false``, when it would have no task in MM2)."""
        settings = self.flow_settings(flow.source, flow.target)
        checkpoints = _true(settings.get("emit.checkpoints.enabled"), True)
        classes = ([SOURCE, CHECKPOINT] if checkpoints else [SOURCE]) if flow.replicate else []
        if flow.heartbeats:
            classes.append(HEARTBEAT)
        return [self.connector_config(flow, c) for c in classes]

    def worker(self, flow: FlowPlan) -> dict[str, str]:
        """The Connect worker settings of the flow's herder, on the target cluster, with
        MM2's internal topics (``mm2-configs.<source>.internal`` ...)."""
        settings = self.flow_settings(flow.source, flow.target)
        target = self.cluster(flow.target)
        worker = {
            k: v for k, v in target.items() if k.startswith((*_CLIENT_PREFIXES, "bootstrap."))
        }
        worker.update(
            {
                "group.id": f"{flow.source}-mm2",
                "config.storage.topic": f"mm2-configs.{flow.source}.internal",
                "offset.storage.topic": f"mm2-offsets.{flow.source}.internal",
                "status.storage.topic": f"mm2-status.{flow.source}.internal",
            }
        )
        for name, default in _WORKER_DEFAULTS.items():
            worker[name] = settings.get(name, default)
        worker.update({k: v for k, v in settings.items() if k.startswith(_WORKER_PREFIXES)})
        return worker
