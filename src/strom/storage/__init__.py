"""The partition log on disk, in Kafka's layout: segments, indexes, recovery, retention.

See ``NOTES.md`` in this package for the invariants. Entry points:
:class:`~strom.storage.log_manager.LogManager` (a data directory),
:class:`~strom.storage.partition_log.PartitionLog` (one partition, Kafka's ``UnifiedLog``, over
a :class:`~strom.storage.local_log.LocalLog` of segments),
:class:`~strom.storage.log_config.LogConfig` (its settings).
"""
