"""Which partitions of a coordinator's internal topic exist and which are still loading.

The group and the transaction coordinators both keep their state in the partitions of one
internal topic (``__consumer_offsets``, ``__transaction_state``); a key (group id,
transactional id) belongs to the partition Kafka's ``Utils.abs(key.hashCode()) % partitions``
names, and requests for a key wait until its partition is loaded.
"""

from __future__ import annotations

from collections.abc import Collection

from strom.common import ErrorCode

__all__ = ["CoordinatorPartitions", "PartitionedCoordinator", "java_string_hash", "partition_for"]


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, as a signed 32-bit int."""
    value = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for index in range(0, len(data), 2):
        value = (31 * value + ((data[index] << 8) | data[index + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def partition_for(key: str, num_partitions: int) -> int:
    """The coordinator partition of ``key`` (``Utils.abs`` maps MIN_VALUE to 0)."""
    hashed = java_string_hash(key)
    return (0 if hashed == -(2**31) else abs(hashed)) % num_partitions


class CoordinatorPartitions:
    """The partitions of ``topic``: none before the topic exists, then each one this broker
    leads loading until its records are replayed; keys of the others belong to other brokers."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.count: int | None = None
        """Partitions of the topic (None before it exists)."""
        self.loading: set[int] = set()
        self.owned: frozenset[int] = frozenset()
        """The partitions this broker leads, so coordinates."""

    def begin_loading(self, count: int, owned: Collection[int] | None = None) -> None:
        """The topic exists with ``count`` partitions, of which ``owned`` (all when None) are
        led here; they are now loading."""
        self.count = count
        self.owned = frozenset(range(count) if owned is None else owned)
        self.loading = set(self.owned)

    def finish_loading(self, partition: int) -> None:
        self.loading.discard(partition)

    def load(self, partition: int) -> None:
        """This broker now leads ``partition``: it loads, then coordinates its keys."""
        self.owned = self.owned | {partition}
        self.loading.add(partition)

    def unload(self, partition: int) -> None:
        """Another broker leads ``partition`` now: its keys are no longer coordinated here."""
        self.owned = self.owned - {partition}
        self.loading.discard(partition)

    def partition_of(self, key: str) -> int:
        if self.count is None:
            raise RuntimeError(f"{self.topic} does not exist yet")
        return partition_for(key, self.count)

    def error(self, key: str) -> ErrorCode:
        """NOT_COORDINATOR before the topic exists or when another broker leads the key's
        partition, COORDINATOR_LOAD_IN_PROGRESS while it loads, NONE when requests for the key
        may be served."""
        if self.count is None:
            return ErrorCode.not_coordinator
        partition = self.partition_of(key)
        if partition not in self.owned:
            return ErrorCode.not_coordinator
        if partition in self.loading:
            return ErrorCode.coordinator_load_in_progress
        return ErrorCode.none


class PartitionedCoordinator:
    """A base for a coordinator core whose keys live in the partitions of the internal ``topic``:
    what the runtime asks of it about them, answered by its ``CoordinatorPartitions``."""

    def __init__(self, topic: str) -> None:
        self._partitions = CoordinatorPartitions(topic)

    @property
    def partition_count(self) -> int | None:
        """Partitions of the topic (None before it exists)."""
        return self._partitions.count

    def begin_loading(self, partitions: int, owned: Collection[int] | None = None) -> None:
        """The topic exists with ``partitions`` partitions; those this broker leads (``owned``,
        all when None) are now loading."""
        self._partitions.begin_loading(partitions, owned)

    @property
    def owned_partitions(self) -> frozenset[int]:
        """The partitions of the topic this broker leads, so coordinates."""
        return self._partitions.owned

    def begin_loading_partition(self, partition: int) -> None:
        """This broker became the leader of ``partition``: its records are replayed next."""
        self._partitions.load(partition)

    def partition_of(self, key: str) -> int:
        """The partition of the topic ``key`` belongs to."""
        return self._partitions.partition_of(key)
