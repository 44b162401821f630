"""The controller: validates admin requests against the metadata image and emits records.

See NOTES.md beside this file.
"""

from strom.controller.cluster_control import (
    BrokerHeartbeat,
    BrokerHeartbeatReply,
    BrokerRegistrationReply,
    BrokerRegistrationRequest,
    ProducerIdsBlock,
)
from strom.controller.config_control import (
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsRequest,
    AlterConfigsResource,
    AlterConfigsResult,
    ConfigEntry,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from strom.controller.controller import QuorumController
from strom.controller.features import FeatureUpdate, UpgradeType
from strom.controller.heartbeats import BrokerSessions
from strom.controller.isr_changes import (
    AlterPartitionItem,
    AlterPartitionReply,
    AlterPartitionRequest,
    IsrChangeResult,
)
from strom.controller.leadership import ElectionResult, ElectionType, ElectLeadersRequest
from strom.controller.placement import PlacementError, UsableBroker, place_replicas
from strom.controller.reassignment import ReassignmentRequest, ReassignmentResult
from strom.controller.replication_control import (
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsResult,
    CreatePartitionsTopic,
    CreateTopicResult,
    CreateTopicsRequest,
    DeletableTopic,
    DeleteTopicResult,
    DeleteTopicsRequest,
    ReplicaAssignment,
)
from strom.controller.results import (
    NO_ERROR,
    ZERO_UUID,
    ApiError,
    ControllerResult,
    RandomSource,
)
from strom.controller.settings import (
    DEFAULT_METADATA_VERSION,
    PRODUCER_ID_BLOCK_SIZE,
    SUPPORTED_FEATURES,
    AlterConfigPolicy,
    AlterConfigPolicyRequest,
    ControllerSettings,
    CreateTopicPolicy,
    CreateTopicPolicyRequest,
)
from strom.controller.topic_names import (
    CLUSTER_METADATA_TOPIC,
    INTERNAL_TOPICS,
    invalid_topic_reason,
    is_internal,
    validate_topic_name,
)

__all__ = [
    "CLUSTER_METADATA_TOPIC",
    "DEFAULT_METADATA_VERSION",
    "INTERNAL_TOPICS",
    "NO_ERROR",
    "PRODUCER_ID_BLOCK_SIZE",
    "SUPPORTED_FEATURES",
    "ZERO_UUID",
    "AlterConfigOp",
    "AlterConfigPolicy",
    "AlterConfigPolicyRequest",
    "AlterConfigsRequest",
    "AlterConfigsResource",
    "AlterConfigsResult",
    "AlterPartitionItem",
    "AlterPartitionReply",
    "AlterPartitionRequest",
    "AlterableConfig",
    "ApiError",
    "BrokerHeartbeat",
    "BrokerHeartbeatReply",
    "BrokerRegistrationReply",
    "BrokerRegistrationRequest",
    "BrokerSessions",
    "ConfigEntry",
    "ControllerResult",
    "ControllerSettings",
    "CreatableTopic",
    "CreatePartitionsRequest",
    "CreatePartitionsResult",
    "CreatePartitionsTopic",
    "CreateTopicPolicy",
    "CreateTopicPolicyRequest",
    "CreateTopicResult",
    "CreateTopicsRequest",
    "DeletableTopic",
    "DeleteTopicResult",
    "DeleteTopicsRequest",
    "ElectLeadersRequest",
    "ElectionResult",
    "ElectionType",
    "FeatureUpdate",
    "IncrementalAlterConfigsRequest",
    "IncrementalAlterConfigsResource",
    "IsrChangeResult",
    "PlacementError",
    "ProducerIdsBlock",
    "QuorumController",
    "RandomSource",
    "ReassignmentRequest",
    "ReassignmentResult",
    "ReplicaAssignment",
    "UpgradeType",
    "UsableBroker",
    "invalid_topic_reason",
    "is_internal",
    "place_replicas",
    "validate_topic_name",
]
