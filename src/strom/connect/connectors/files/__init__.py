"""Kafka's file connectors: ``FileStreamSource`` (the lines appended to a file, into a topic)
and ``FileStreamSink`` (a topic's records, as lines of a file)."""

from strom.connect.connectors.files.connectors import FileStreamSink, FileStreamSource

__all__ = ["FileStreamSink", "FileStreamSource"]
