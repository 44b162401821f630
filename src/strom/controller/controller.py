"""The quorum controller: admin requests in, metadata records and replies out.

``QuorumController`` is a pure object, like the validating half of Kafka's ``QuorumController``:
every operation takes the current :class:`~strom.metadata.MetadataImage` and a request, and
returns a :class:`~strom.controller.results.ControllerResult` (records + reply). It keeps no
state between calls and never applies its records. The caller must run operations one at a
time: validate against the image, append the records to the metadata log, let the loader apply
them, and only then validate the next operation; otherwise two requests could both create the
same topic.
"""

from __future__ import annotations

from collections.abc import Sequence

from strom.common import TopicPartition
from strom.controller.acl_control import AclDeleteResult, create_acls, delete_acls
from strom.controller.cluster_control import (
    BrokerHeartbeat,
    BrokerHeartbeatReply,
    BrokerRegistrationReply,
    BrokerRegistrationRequest,
    ClusterControl,
    ProducerIdsBlock,
)
from strom.controller.config_control import (
    AlterConfigsRequest,
    AlterConfigsResult,
    ConfigControl,
    IncrementalAlterConfigsRequest,
)
from strom.controller.features import FeatureUpdate, update_features
from strom.controller.isr_changes import (
    AlterPartitionReply,
    AlterPartitionRequest,
    alter_partition,
)
from strom.controller.leadership import (
    ElectionResult,
    ElectionType,
    ElectLeadersRequest,
    elect_leaders,
)
from strom.controller.reassignment import (
    ReassignmentRequest,
    ReassignmentResult,
    alter_reassignments,
    ongoing_reassignments,
)
from strom.controller.replication_control import (
    CreatePartitionsRequest,
    CreatePartitionsResult,
    CreateTopicResult,
    CreateTopicsRequest,
    DeleteTopicResult,
    DeleteTopicsRequest,
    ReplicationControl,
)
from strom.controller.results import ApiError, ControllerResult, RandomSource
from strom.controller.settings import DEFAULT_METADATA_VERSION, ControllerSettings
from strom.metadata import MetadataImage, PartitionRegistration, UserScramCredentialRecord
from strom.security.acls import AclBinding, AclBindingFilter

__all__ = ["QuorumController"]


class QuorumController:
    def __init__(self, settings: ControllerSettings, *, random: RandomSource) -> None:
        self.settings = settings
        self._random = random
        self._replication = ReplicationControl(settings, random)
        self._configs = ConfigControl(settings)
        self._cluster = ClusterControl(settings)

    def bootstrap(
        self,
        image: MetadataImage,
        *,
        metadata_version: int = DEFAULT_METADATA_VERSION,
        scram: Sequence[UserScramCredentialRecord] = (),
    ) -> ControllerResult[None]:
        """The first records of a new cluster's metadata log (none once it has them)."""
        return self._cluster.bootstrap(image, metadata_version=metadata_version, scram=scram)

    def register_broker(
        self, image: MetadataImage, request: BrokerRegistrationRequest, *, alive: bool = False
    ) -> ControllerResult[BrokerRegistrationReply]:
        return self._cluster.register_broker(image, request, alive=alive)

    def broker_heartbeat(
        self, image: MetadataImage, beat: BrokerHeartbeat
    ) -> ControllerResult[BrokerHeartbeatReply]:
        return self._cluster.heartbeat(image, beat)

    def unfence_broker(
        self, image: MetadataImage, *, broker_id: int, broker_epoch: int
    ) -> ControllerResult[ApiError]:
        return self._cluster.unfence_broker(image, broker_id=broker_id, broker_epoch=broker_epoch)

    def fence_broker(
        self, image: MetadataImage, *, broker_id: int, broker_epoch: int
    ) -> ControllerResult[ApiError]:
        return self._cluster.fence_broker(image, broker_id=broker_id, broker_epoch=broker_epoch)

    def unregister_broker(self, image: MetadataImage, broker_id: int) -> ControllerResult[ApiError]:
        return self._cluster.unregister_broker(image, broker_id)

    def allocate_producer_ids(
        self, image: MetadataImage, *, broker_id: int, broker_epoch: int
    ) -> ControllerResult[ProducerIdsBlock]:
        return self._cluster.allocate_producer_ids(
            image, broker_id=broker_id, broker_epoch=broker_epoch
        )

    def create_acls(
        self, image: MetadataImage, bindings: Sequence[AclBinding]
    ) -> ControllerResult[list[ApiError]]:
        return create_acls(image, bindings, self._random)

    def delete_acls(
        self, image: MetadataImage, filters: Sequence[AclBindingFilter]
    ) -> ControllerResult[list[AclDeleteResult]]:
        return delete_acls(image, filters)

    def create_topics(
        self, image: MetadataImage, request: CreateTopicsRequest
    ) -> ControllerResult[list[CreateTopicResult]]:
        return self._replication.create_topics(image, request)

    def delete_topics(
        self, image: MetadataImage, request: DeleteTopicsRequest
    ) -> ControllerResult[list[DeleteTopicResult]]:
        return self._replication.delete_topics(image, request)

    def create_partitions(
        self, image: MetadataImage, request: CreatePartitionsRequest
    ) -> ControllerResult[list[CreatePartitionsResult]]:
        return self._replication.create_partitions(image, request)

    def incremental_alter_configs(
        self, image: MetadataImage, request: IncrementalAlterConfigsRequest
    ) -> ControllerResult[list[AlterConfigsResult]]:
        return self._configs.incremental_alter_configs(image, request)

    def alter_configs(
        self, image: MetadataImage, request: AlterConfigsRequest
    ) -> ControllerResult[list[AlterConfigsResult]]:
        return self._configs.alter_configs(image, request)

    def elect_leaders(
        self, image: MetadataImage, request: ElectLeadersRequest
    ) -> ControllerResult[list[ElectionResult]]:
        return elect_leaders(image, self.settings.server_config, request)

    def update_features(
        self, image: MetadataImage, updates: Sequence[FeatureUpdate], *, validate_only: bool
    ) -> ControllerResult[ApiError]:
        return update_features(image, updates, validate_only=validate_only)

    def alter_reassignments(
        self, image: MetadataImage, requests: Sequence[ReassignmentRequest]
    ) -> ControllerResult[list[ReassignmentResult]]:
        return alter_reassignments(image, requests)

    def list_reassignments(
        self, image: MetadataImage, partitions: Sequence[TopicPartition] | None
    ) -> list[tuple[TopicPartition, PartitionRegistration]]:
        """ListPartitionReassignments (a read: no records)."""
        return ongoing_reassignments(image, partitions)

    def balance_leaders(self, image: MetadataImage) -> ControllerResult[int]:
        """``auto.leader.rebalance.enable``: give each partition back to its preferred replica
        where that replica is in the ISR and on an active broker (KRaft's
        ``maybeBalancePartitionLeaders``); the reply is how many partitions moved."""
        result = elect_leaders(
            image, self.settings.server_config, ElectLeadersRequest(ElectionType.PREFERRED, None)
        )
        return ControllerResult(result.records, len(result.records))

    def alter_partition(
        self, image: MetadataImage, request: AlterPartitionRequest
    ) -> ControllerResult[AlterPartitionReply]:
        return alter_partition(image, self.settings.server_config, request)
