"""The v3 API's resources as JSON (Confluent REST Proxy's shapes): each has ``kind``, a
``metadata`` with its ``self`` URL and ``resource_name`` (a CRN), and ``related`` links to the
resources below it. Pure: plain values in, dicts out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["ConfigOwner", "ConfigValue", "Lag", "Links", "Member"]

Json = dict[str, object]


def _related(url: str) -> Json:
    return {"related": url}


@dataclass(frozen=True)
class Links:
    """The URLs and CRNs of one cluster's resources under ``base`` (the proxy's own URL)."""

    base: str
    cluster_id: str

    @property
    def cluster(self) -> str:
        return f"{self.base}/v3/clusters/{self.cluster_id}"

    @property
    def crn(self) -> str:
        return f"crn:///kafka={self.cluster_id}"

    def resource(self, kind: str, path: str, crn: str | None, **fields: object) -> Json:
        """A resource at ``cluster/path`` with its CRN below the cluster's."""
        url = f"{self.cluster}/{path}" if path else self.cluster
        name = None if crn is None else (f"{self.crn}/{crn}" if crn else self.crn)
        return {
            "kind": kind,
            "metadata": {"self": url, "resource_name": name},
            "cluster_id": self.cluster_id,
            **fields,
        }

    def collection(self, kind: str, path: str, data: Iterable[Json]) -> Json:
        url = f"{self.cluster}/{path}" if path else f"{self.base}/v3/clusters"
        return {"kind": kind, "metadata": {"self": url, "next": None}, "data": list(data)}

    def cluster_resource(self, controller: int | None) -> Json:
        c = self.cluster
        return self.resource(
            "KafkaCluster",
            "",
            "",
            controller=None if controller is None else _related(f"{c}/brokers/{controller}"),
            acls=_related(f"{c}/acls"),
            brokers=_related(f"{c}/brokers"),
            broker_configs=_related(f"{c}/broker-configs"),
            consumer_groups=_related(f"{c}/consumer-groups"),
            topics=_related(f"{c}/topics"),
            partition_reassignments=_related(f"{c}/topics/-/partitions/-/reassignment"),
        )

    def broker(self, broker_id: int, host: str | None, port: int | None, rack: str | None) -> Json:
        path = f"brokers/{broker_id}"
        return self.resource(
            "KafkaBroker",
            path,
            f"broker={broker_id}",
            broker_id=broker_id,
            host=host,
            port=port,
            rack=rack,
            configs=_related(f"{self.cluster}/{path}/configs"),
            partition_replicas=_related(f"{self.cluster}/{path}/partition-replicas"),
        )

    def topic(
        self,
        name: str,
        *,
        internal: bool,
        replication_factor: int,
        partitions: int,
        operations: Sequence[str] = (),
    ) -> Json:
        path = f"topics/{name}"
        return self.resource(
            "KafkaTopic",
            path,
            f"topic={name}",
            topic_name=name,
            is_internal=internal,
            replication_factor=replication_factor,
            partitions_count=partitions,
            partitions=_related(f"{self.cluster}/{path}/partitions"),
            configs=_related(f"{self.cluster}/{path}/configs"),
            partition_reassignments=_related(f"{self.cluster}/{path}/partitions/-/reassignment"),
            authorized_operations=list(operations),
        )

    def partition(self, topic: str, partition: int, leader: int | None) -> Json:
        path = f"topics/{topic}/partitions/{partition}"
        return self.resource(
            "KafkaPartition",
            path,
            f"topic={topic}/partition={partition}",
            topic_name=topic,
            partition_id=partition,
            leader=None
            if leader is None or leader < 0
            else _related(f"{self.cluster}/{path}/replicas/{leader}"),
            replicas=_related(f"{self.cluster}/{path}/replicas"),
            reassignment=_related(f"{self.cluster}/{path}/reassignment"),
        )

    def replica(
        self, topic: str, partition: int, broker_id: int, *, leader: bool, in_sync: bool
    ) -> Json:
        path = f"topics/{topic}/partitions/{partition}/replicas/{broker_id}"
        return self.resource(
            "KafkaReplica",
            path,
            f"topic={topic}/partition={partition}/replica={broker_id}",
            topic_name=topic,
            partition_id=partition,
            broker_id=broker_id,
            is_leader=leader,
            is_in_sync=in_sync,
            broker=_related(f"{self.cluster}/brokers/{broker_id}"),
        )

    def config(self, owner: ConfigOwner, entry: ConfigValue) -> Json:
        """A topic's (``KafkaTopicConfig``), a broker's (``KafkaBrokerConfig``) or the
        cluster-wide broker default's (``KafkaClusterConfig``) setting."""
        fields: Json = {
            "name": entry.name,
            "value": None if entry.sensitive else entry.value,
            "is_default": entry.default,
            "is_read_only": entry.read_only,
            "is_sensitive": entry.sensitive,
            "source": entry.source,
            "synonyms": [
                {"name": n, "value": None if entry.sensitive else v, "source": s}
                for n, v, s in entry.synonyms
            ],
        }
        if owner.topic is not None:
            path, crn = f"topics/{owner.topic}/configs", f"topic={owner.topic}"
            kind, fields["topic_name"] = "KafkaTopicConfig", owner.topic
        elif owner.broker is not None:
            path, crn = f"brokers/{owner.broker}/configs", f"broker={owner.broker}"
            kind, fields["broker_id"] = "KafkaBrokerConfig", owner.broker
        else:
            path, crn, kind = "broker-configs", "", "KafkaClusterConfig"
            fields["config_type"] = "BROKER"
        crn = f"{crn}/config={entry.name}" if crn else f"broker-config={entry.name}"
        return self.resource(kind, f"{path}/{entry.name}", crn, **fields)

    def group(
        self,
        group: str,
        *,
        simple: bool,
        assignor: str,
        state: str,
        coordinator: int | None,
    ) -> Json:
        path = f"consumer-groups/{group}"
        return self.resource(
            "KafkaConsumerGroup",
            path,
            f"consumer-group={group}",
            consumer_group_id=group,
            is_simple=simple,
            partition_assignor=assignor,
            state=state,
            type="CLASSIC",
            is_mixed_consumer_group=False,
            coordinator=None
            if coordinator is None
            else _related(f"{self.cluster}/brokers/{coordinator}"),
            consumers=_related(f"{self.cluster}/{path}/consumers"),
            lag_summary=_related(f"{self.cluster}/{path}/lag-summary"),
        )

    def consumer(self, group: str, member: Member) -> Json:
        path = f"consumer-groups/{group}/consumers/{member.consumer_id}"
        return self.resource(
            "KafkaConsumer",
            path,
            f"consumer-group={group}/consumer={member.consumer_id}",
            consumer_group_id=group,
            consumer_id=member.consumer_id,
            instance_id=member.instance_id,
            client_id=member.client_id,
            assignments=_related(f"{self.cluster}/{path}/assignments"),
        )

    def lag(self, group: str, lag: Lag) -> Json:
        path = f"consumer-groups/{group}/lags/{lag.topic}/partitions/{lag.partition}"
        return self.resource(
            "KafkaConsumerLag",
            path,
            f"consumer-group={group}/lag={lag.topic}/partition={lag.partition}",
            consumer_group_id=group,
            topic_name=lag.topic,
            partition_id=lag.partition,
            current_offset=lag.current_offset,
            log_end_offset=lag.log_end_offset,
            lag=lag.lag,
            consumer_id=lag.member.consumer_id,
            instance_id=lag.member.instance_id,
            client_id=lag.member.client_id,
        )

    def lag_summary(self, group: str, lags: Sequence[Lag]) -> Json:
        """The group's total lag and its largest, as the proxy's ``lag-summary``."""
        worst = max(lags, key=lambda lag: lag.lag, default=None)
        g = f"{self.cluster}/consumer-groups/{group}"
        fields: Json = {
            "consumer_group_id": group,
            "max_lag_consumer_id": "" if worst is None else worst.member.consumer_id,
            "max_lag_instance_id": None if worst is None else worst.member.instance_id,
            "max_lag_client_id": "" if worst is None else worst.member.client_id,
            "max_lag_topic_name": "" if worst is None else worst.topic,
            "max_lag_partition_id": 0 if worst is None else worst.partition,
            "max_lag": 0 if worst is None else worst.lag,
            "total_lag": sum(lag.lag for lag in lags),
            "max_lag_consumer": None
            if worst is None or not worst.member.consumer_id
            else _related(f"{g}/consumers/{worst.member.consumer_id}"),
            "max_lag_partition": None
            if worst is None
            else _related(f"{self.cluster}/topics/{worst.topic}/partitions/{worst.partition}"),
        }
        return self.resource(
            "KafkaConsumerGroupLagSummary",
            f"consumer-groups/{group}/lag-summary",
            f"consumer-group={group}/lag-summary",
            **fields,
        )

    def acl(self, acl: Mapping[str, object]) -> Json:
        return {"kind": "KafkaAcl", "metadata": {"self": f"{self.cluster}/acls"},
                "cluster_id": self.cluster_id, **acl}  # fmt: skip


@dataclass(frozen=True)
class ConfigOwner:
    """Whose settings: a topic's, a broker's, or (neither) the cluster-wide broker default."""

    topic: str | None = None
    broker: int | None = None


@dataclass(frozen=True)
class ConfigValue:
    name: str
    value: str | None
    default: bool
    read_only: bool
    sensitive: bool
    source: str
    synonyms: tuple[tuple[str, str | None, str], ...] = ()


@dataclass(frozen=True)
class Member:
    consumer_id: str = ""
    instance_id: str | None = None
    client_id: str = ""


@dataclass(frozen=True)
class Lag:
    topic: str
    partition: int
    current_offset: int
    log_end_offset: int
    member: Member

    @property
    def lag(self) -> int:
        return max(0, self.log_end_offset - self.current_offset)
