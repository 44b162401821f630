"""The classic group coordinator, without I/O (see ``NOTES.md``)."""

from strom.coordinator.group.coordinator import GroupCoordinator
from strom.coordinator.group.group import ClassicGroup, GroupMember, OffsetAndMetadata
from strom.coordinator.group.membership import CoordinatorSettings, PartitionWriter, Reply
from strom.coordinator.group.records import CoordinatorRecord
from strom.coordinator.group.state import GroupState
from strom.coordinator.partitions import partition_for

__all__ = [
    "ClassicGroup",
    "CoordinatorRecord",
    "CoordinatorSettings",
    "GroupCoordinator",
    "GroupMember",
    "GroupState",
    "OffsetAndMetadata",
    "PartitionWriter",
    "Reply",
    "partition_for",
]
