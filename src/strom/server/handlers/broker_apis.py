"""The APIs a broker serves its clients, in the groups whose handlers it builds together on the
first request to one of them (``HandlerTable.register_lazy``), so that the handlers' modules
and the kio schemas they import load then, not at start. ``Broker`` builds each group."""

from __future__ import annotations

from typing import Final

from strom.protocol.api import ApiKey

__all__ = ["DATA_APIS", "DESCRIBE_APIS", "FORWARDED", "GROUP_APIS", "TXN_APIS"]

FORWARDED: Final = (
    ApiKey.CREATE_TOPICS,
    ApiKey.DELETE_TOPICS,
    ApiKey.CREATE_PARTITIONS,
    ApiKey.ELECT_LEADERS,
    ApiKey.UPDATE_FEATURES,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.ALTER_CONFIGS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.DESCRIBE_QUORUM,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    ApiKey.CREATE_ACLS,
    ApiKey.DELETE_ACLS,
    ApiKey.ALTER_CLIENT_QUOTAS,
    ApiKey.ADD_RAFT_VOTER,
    ApiKey.REMOVE_RAFT_VOTER,
)
"""The admin APIs a broker forwards to the active controller."""
DESCRIBE_APIS: Final = (
    ApiKey.METADATA,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS,
    ApiKey.DESCRIBE_CONFIGS,
    ApiKey.DESCRIBE_CLUSTER,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
    ApiKey.DESCRIBE_ACLS,
    ApiKey.DESCRIBE_CLIENT_QUOTAS,
    ApiKey.DESCRIBE_LOG_DIRS,
)
DATA_APIS: Final = (
    ApiKey.PRODUCE,
    ApiKey.FETCH,
    ApiKey.LIST_OFFSETS,
    ApiKey.DELETE_RECORDS,
    ApiKey.DESCRIBE_PRODUCERS,
    ApiKey.WRITE_TXN_MARKERS,
    ApiKey.OFFSET_FOR_LEADER_EPOCH,
)
GROUP_APIS: Final = (
    ApiKey.FIND_COORDINATOR,
    ApiKey.JOIN_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH,
    ApiKey.DESCRIBE_GROUPS,
    ApiKey.LIST_GROUPS,
    ApiKey.DELETE_GROUPS,
    ApiKey.OFFSET_DELETE,
    ApiKey.TXN_OFFSET_COMMIT,
)
TXN_APIS: Final = (
    ApiKey.INIT_PRODUCER_ID,
    ApiKey.ADD_PARTITIONS_TO_TXN,
    ApiKey.ADD_OFFSETS_TO_TXN,
    ApiKey.END_TXN,
    ApiKey.DESCRIBE_TRANSACTIONS,
    ApiKey.LIST_TRANSACTIONS,
)
