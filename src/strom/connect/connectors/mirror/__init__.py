"""MirrorMaker 2 on strom's Connect runtime: ``MirrorSourceConnector``,
``MirrorCheckpointConnector`` and ``MirrorHeartbeatConnector`` by their class names and
settings (``source``, ``checkpoint``, ``heartbeat``; they need Spark), MM2's internal records,
offset translation and ``mm2.properties``; and the failover API, which needs no Spark:
``translate_offsets(client, source, group)`` and ``commit_offsets(client, group, offsets)``."""

from strom.connect.connectors.mirror.remote import (
    MirrorClientError,
    commit_offsets,
    translate_offsets,
    upstream_clusters,
)

__all__ = ["MirrorClientError", "commit_offsets", "translate_offsets", "upstream_clusters"]
