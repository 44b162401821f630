"""The KRaft quorum, sans-I/O: a port of the state machine of Kafka's ``KafkaRaftClient``.

See NOTES.md beside this file for what the core does and what its shell must do.
"""

from strom.raft.batches import ControlType, RaftBatch
from strom.raft.channel import Channel, InboundRequest, InboundResponse, OutboundRequest
from strom.raft.client import NotLeaderError, RaftClient
from strom.raft.config import RaftConfig
from strom.raft.listeners import CommittedBatch, RaftListener
from strom.raft.log import InMemoryRaftLog, OffsetAndEpoch, RaftLog
from strom.raft.messages import METADATA_TOPIC, LeaderAndEpoch
from strom.raft.quorum_state import (
    TRANSITIONS,
    ElectionState,
    FileQuorumStateStore,
    MemoryQuorumStateStore,
    QuorumStateStore,
    Role,
    Trigger,
)
from strom.raft.snapshots import SnapshotReader, SnapshotWriter

__all__ = [
    "METADATA_TOPIC",
    "TRANSITIONS",
    "Channel",
    "CommittedBatch",
    "ControlType",
    "ElectionState",
    "FileQuorumStateStore",
    "InMemoryRaftLog",
    "InboundRequest",
    "InboundResponse",
    "LeaderAndEpoch",
    "MemoryQuorumStateStore",
    "NotLeaderError",
    "OffsetAndEpoch",
    "OutboundRequest",
    "QuorumStateStore",
    "RaftBatch",
    "RaftClient",
    "RaftConfig",
    "RaftListener",
    "RaftLog",
    "Role",
    "SnapshotReader",
    "SnapshotWriter",
    "Trigger",
]
