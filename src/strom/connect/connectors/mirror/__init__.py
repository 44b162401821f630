"""MirrorMaker 2 on strom's Connect runtime: ``MirrorSourceConnector``,
``MirrorCheckpointConnector`` and ``MirrorHeartbeatConnector`` by their class names and
settings, MM2's internal records, offset translation, and ``mm2.properties``."""

from strom.connect.connectors.mirror.source import MirrorSource

__all__ = ["MirrorSource"]
