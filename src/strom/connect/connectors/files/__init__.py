"""Kafka's file connectors: ``FileStreamSource`` (the lines appended to a file, into a topic)
and ``FileStreamSink`` (a topic's records, as lines of a file)."""

from strom.connect.connectors.files.connectors import FileStreamSink, FileStreamSource
from strom.connect.connectors.files.storage import StorageSink

__all__ = ["FileStreamSink", "FileStreamSource", "StorageSink"]
