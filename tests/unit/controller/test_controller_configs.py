"""IncrementalAlterConfigs and AlterConfigs, on topics and brokers."""

from __future__ import annotations

import pytest
from controller_harness import Harness

from strom.common import ErrorCode
from strom.config import ServerConfig
from strom.controller import (
    AlterableConfig,
    AlterConfigOp,
    AlterConfigPolicyRequest,
    AlterConfigsRequest,
    AlterConfigsResource,
    AlterConfigsResult,
    ConfigEntry,
    ControllerSettings,
    CreatableTopic,
    CreateTopicsRequest,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from strom.metadata import ConfigRecord, ConfigResource, ConfigResourceType

TOPIC = ConfigResourceType.TOPIC
BROKER = ConfigResourceType.BROKER
SET, DELETE, APPEND, SUBTRACT = (
    AlterConfigOp.SET,
    AlterConfigOp.DELETE,
    AlterConfigOp.APPEND,
    AlterConfigOp.SUBTRACT,
)


def harness(settings: ControllerSettings | None = None) -> Harness:
    h = Harness(settings)
    h.add_broker(1)
    h.run(
        h.controller.create_topics(
            h.image,
            CreateTopicsRequest([CreatableTopic("t", configs={"retention.ms": "100"})]),
        )
    )
    return h


@pytest.fixture
def h() -> Harness:
    return harness()


def alter(
    h: Harness,
    resource_type: int,
    name: str,
    *configs: AlterableConfig,
    validate_only: bool = False,
) -> AlterConfigsResult:
    [result] = h.run(
        h.controller.incremental_alter_configs(
            h.image,
            IncrementalAlterConfigsRequest(
                [IncrementalAlterConfigsResource(resource_type, name, configs)],
                validate_only=validate_only,
            ),
        )
    )
    return result


def test_set_and_delete(h: Harness) -> None:
    result = h.controller.incremental_alter_configs(
        h.image,
        IncrementalAlterConfigsRequest(
            [
                IncrementalAlterConfigsResource(
                    TOPIC,
                    "t",
                    [
                        AlterableConfig("retention.ms", None, DELETE),
                        AlterableConfig("segment.ms", "60000", SET),
                    ],
                )
            ]
        ),
    )
    assert result.records == [
        ConfigRecord(TOPIC, "t", "retention.ms", None),
        ConfigRecord(TOPIC, "t", "segment.ms", "60000"),
    ]
    assert result.response == [AlterConfigsResult(TOPIC, "t")]
    h.run(result)
    assert h.image.topic_configs("t") == {"segment.ms": "60000"}


def test_setting_the_same_value_writes_nothing(h: Harness) -> None:
    result = h.controller.incremental_alter_configs(
        h.image,
        IncrementalAlterConfigsRequest(
            [IncrementalAlterConfigsResource(TOPIC, "t", [AlterableConfig("retention.ms", "100")])]
        ),
    )
    assert result.records == []
    assert result.response[0].error.is_success


def test_append_and_subtract_start_from_the_default(h: Harness) -> None:
    assert alter(
        h, TOPIC, "t", AlterableConfig("cleanup.policy", "compact", APPEND)
    ).error.is_success
    assert h.image.topic_configs("t")["cleanup.policy"] == "delete,compact"
    alter(h, TOPIC, "t", AlterableConfig("cleanup.policy", "compact", APPEND))
    assert h.image.topic_configs("t")["cleanup.policy"] == "delete,compact"
    alter(h, TOPIC, "t", AlterableConfig("cleanup.policy", "delete", SUBTRACT))
    assert h.image.topic_configs("t")["cleanup.policy"] == "compact"


def test_append_starts_from_the_servers_default() -> None:
    config = ServerConfig({"log.cleanup.policy": "compact"})
    h = harness(ControllerSettings.from_config(config))
    alter(h, TOPIC, "t", AlterableConfig("cleanup.policy", "delete", APPEND))
    assert h.image.topic_configs("t")["cleanup.policy"] == "compact,delete"


@pytest.mark.parametrize(
    ("resource_type", "name", "setting", "value"),
    [
        (BROKER, "", "log.cleaner.io.max.bytes.per.second", "1048576.0"),  # cluster-wide
        (BROKER, "1", "sasl.kerberos.min.time.before.relogin", "30000"),  # per-broker
        (TOPIC, "t", "remote.storage.enable", "false"),
    ],
)
def test_kafkas_settings_strom_does_not_act_on_are_stored(
    h: Harness, resource_type: int, name: str, setting: str, value: str
) -> None:
    assert alter(h, resource_type, name, AlterableConfig(setting, value)).error.is_success
    resource = ConfigResource(ConfigResourceType(resource_type), name)
    assert h.image.configs.configs(resource)[setting] == value


def test_validate_only_changes_nothing(h: Harness) -> None:
    before = h.image
    result = alter(h, TOPIC, "t", AlterableConfig("retention.ms", "5"), validate_only=True)
    assert result.error.is_success
    assert h.image is before


@pytest.mark.parametrize(
    ("resource_type", "name", "configs", "code", "message"),
    [
        (
            TOPIC,
            "nope",
            [AlterableConfig("retention.ms", "1")],
            ErrorCode.unknown_topic_or_partition,
            "does not exist",
        ),
        (
            TOPIC,
            "",
            [AlterableConfig("retention.ms", "1")],
            ErrorCode.invalid_request,
            "needs a topic name",
        ),
        (
            TOPIC,
            "bad name",
            [AlterableConfig("retention.ms", "1")],
            ErrorCode.invalid_topic_exception,
            "may only contain",
        ),
        (
            TOPIC,
            "t",
            [AlterableConfig("retention.ms", "soon")],
            ErrorCode.invalid_config,
            "retention.ms: expected an integer",
        ),
        (
            TOPIC,
            "t",
            [AlterableConfig("nope", "1")],
            ErrorCode.invalid_config,
            "nope: unknown topic setting",
        ),
        (
            TOPIC,
            "t",
            [AlterableConfig("nope", "1", APPEND)],
            ErrorCode.invalid_config,
            "nope: unknown topic setting",
        ),
        (
            TOPIC,
            "t",
            [AlterableConfig("retention.ms", "1", APPEND)],
            ErrorCode.invalid_config,
            "cannot APPEND to retention.ms",
        ),
        (
            TOPIC,
            "t",
            [AlterableConfig("cleanup.policy", "shred", APPEND)],
            ErrorCode.invalid_config,
            "'shred' is not one of",
        ),
        (
            TOPIC,
            "t",
            [AlterableConfig("retention.ms", None)],
            ErrorCode.invalid_request,
            "SET of config 'retention.ms' needs a value",
        ),
        (
            TOPIC,
            "t",
            [AlterableConfig("retention.ms", "1", 9)],
            ErrorCode.invalid_request,
            "unknown config operation 9",
        ),
        (
            TOPIC,
            "t",
            [AlterableConfig("retention.ms", "1"), AlterableConfig("retention.ms", None, DELETE)],
            ErrorCode.invalid_request,
            "'retention.ms' is given more than once",
        ),
        (
            BROKER,
            "x",
            [AlterableConfig("num.io.threads", "2")],
            ErrorCode.invalid_request,
            "named by a broker id",
        ),
        (
            BROKER,
            "-1",
            [AlterableConfig("num.io.threads", "2")],
            ErrorCode.invalid_request,
            "named by a broker id",
        ),
        (
            BROKER,
            "7",
            [AlterableConfig("num.io.threads", "2")],
            ErrorCode.broker_id_not_registered,
            "no broker with id 7",
        ),
        (
            BROKER,
            "",
            [AlterableConfig("node.id", "2")],
            ErrorCode.invalid_config,
            "node.id cannot change while the broker runs",
        ),
        (
            BROKER,
            "1",
            [AlterableConfig("num.io.threads", "0")],
            ErrorCode.invalid_config,
            "num.io.threads: must be at least 1",
        ),
        (
            BROKER,
            "1",
            [AlterableConfig("no.such", "0")],
            ErrorCode.invalid_config,
            "no.such: unknown broker setting",
        ),
        (  # Kafka's, recorded only, and read-only in Kafka too
            BROKER,
            "1",
            [AlterableConfig("sasl.login.connect.timeout.ms", "5000")],
            ErrorCode.invalid_config,
            "sasl.login.connect.timeout.ms cannot change while the broker runs",
        ),
        (  # per-broker in Kafka: no cluster-wide value
            BROKER,
            "",
            [AlterableConfig("sasl.kerberos.min.time.before.relogin", "30000")],
            ErrorCode.invalid_config,
            "sasl.kerberos.min.time.before.relogin is set per broker, not cluster-wide",
        ),
        (
            BROKER,
            "1",
            [AlterableConfig("log.cleaner.io.max.bytes.per.second", "fast")],
            ErrorCode.invalid_config,
            "log.cleaner.io.max.bytes.per.second: expected a number, got 'fast'",
        ),
        (
            TOPIC,
            "t",
            [AlterableConfig("local.retention.ms", "-3")],
            ErrorCode.invalid_config,
            "local.retention.ms: must be at least -2",
        ),
        (
            ConfigResourceType.BROKER_LOGGER,
            "1",
            [AlterableConfig("kafka", "DEBUG")],
            ErrorCode.invalid_request,
            "type 8 cannot be altered",
        ),
        (
            99,
            "x",
            [AlterableConfig("a", "b")],
            ErrorCode.invalid_request,
            "type 99 cannot be altered",
        ),
    ],
)
def test_incremental_errors(
    h: Harness,
    resource_type: int,
    name: str,
    configs: list[AlterableConfig],
    code: ErrorCode,
    message: str,
) -> None:
    before = h.image
    result = alter(h, resource_type, name, *configs)
    assert result.error.code is code
    assert message in (result.error.message or "")
    assert h.image is before


def test_broker_configs_for_one_broker_and_for_all(h: Harness) -> None:
    assert alter(h, BROKER, "1", AlterableConfig("log.retention.hours", "1")).error.is_success
    assert alter(h, BROKER, "", AlterableConfig("message.max.bytes", "2048")).error.is_success
    assert h.image.configs.broker_configs(1) == {"log.retention.hours": "1"}
    assert h.image.configs.broker_configs() == {"message.max.bytes": "2048"}
    assert alter(
        h, BROKER, "1", AlterableConfig("log.cleanup.policy", "compact", APPEND)
    ).error.is_success
    assert h.image.configs.broker_configs(1)["log.cleanup.policy"] == "delete,compact"
    assert alter(h, BROKER, "1", AlterableConfig("no.such", None, DELETE)).error.is_success


def test_each_resource_is_answered_on_its_own(h: Harness) -> None:
    results = h.run(
        h.controller.incremental_alter_configs(
            h.image,
            IncrementalAlterConfigsRequest(
                [
                    IncrementalAlterConfigsResource(
                        TOPIC, "t", [AlterableConfig("segment.ms", "9")]
                    ),
                    IncrementalAlterConfigsResource(
                        TOPIC, "u", [AlterableConfig("segment.ms", "9")]
                    ),
                    IncrementalAlterConfigsResource(
                        BROKER, "1", [AlterableConfig("num.io.threads", "3")]
                    ),
                    IncrementalAlterConfigsResource(
                        BROKER, "1", [AlterableConfig("num.io.threads", "4")]
                    ),
                ]
            ),
        )
    )
    assert [r.error.code for r in results] == [
        ErrorCode.none,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.invalid_request,
        ErrorCode.invalid_request,
    ]
    assert h.image.topic_configs("t")["segment.ms"] == "9"
    assert h.image.configs.broker_configs(1) == {}


def test_alter_configs_replaces_the_whole_set(h: Harness) -> None:
    result = h.controller.alter_configs(
        h.image,
        AlterConfigsRequest([AlterConfigsResource(TOPIC, "t", [ConfigEntry("segment.ms", "5")])]),
    )
    assert result.records == [
        ConfigRecord(TOPIC, "t", "retention.ms", None),
        ConfigRecord(TOPIC, "t", "segment.ms", "5"),
    ]
    h.run(result)
    assert h.image.topic_configs("t") == {"segment.ms": "5"}
    h.run(
        h.controller.alter_configs(
            h.image, AlterConfigsRequest([AlterConfigsResource(TOPIC, "t", [])])
        )
    )
    assert h.image.topic_configs("t") == {}
    assert ConfigResource.topic("t") not in h.image.configs.resources


@pytest.mark.parametrize(
    ("resource", "code", "message"),
    [
        (
            AlterConfigsResource(TOPIC, "t", [ConfigEntry("segment.ms", None)]),
            ErrorCode.invalid_request,
            "needs a value",
        ),
        (
            AlterConfigsResource(
                TOPIC, "t", [ConfigEntry("segment.ms", "1"), ConfigEntry("segment.ms", "2")]
            ),
            ErrorCode.invalid_request,
            "given more than once",
        ),
        (
            AlterConfigsResource(TOPIC, "t", [ConfigEntry("segment.ms", "0")]),
            ErrorCode.invalid_config,
            "segment.ms: must be at least 1",
        ),
        (
            AlterConfigsResource(BROKER, "1", [ConfigEntry("listeners", "x")]),
            ErrorCode.invalid_config,
            "cannot change",
        ),
    ],
)
def test_alter_configs_errors(
    h: Harness, resource: AlterConfigsResource, code: ErrorCode, message: str
) -> None:
    before = h.image
    [result] = h.run(h.controller.alter_configs(h.image, AlterConfigsRequest([resource])))
    assert result.error.code is code
    assert message in (result.error.message or "")
    assert h.image is before


def test_alter_configs_validate_only(h: Harness) -> None:
    result = h.controller.alter_configs(
        h.image,
        AlterConfigsRequest([AlterConfigsResource(TOPIC, "t", [])], validate_only=True),
    )
    assert result.records == []
    assert result.response[0].error.is_success


def test_a_policy_can_refuse_changes() -> None:
    seen: list[AlterConfigPolicyRequest] = []

    def keep_retention(request: AlterConfigPolicyRequest) -> str | None:
        seen.append(request)
        return "retention is fixed" if "retention.ms" in request.configs else None

    h = harness(ControllerSettings(alter_config_policy=keep_retention))
    result = alter(h, TOPIC, "t", AlterableConfig("retention.ms", None, DELETE))
    assert (result.error.code, result.error.message) == (
        ErrorCode.policy_violation,
        "retention is fixed",
    )
    assert seen == [AlterConfigPolicyRequest(ConfigResource.topic("t"), {"retention.ms": None})]
    assert alter(h, TOPIC, "t", AlterableConfig("segment.ms", "9")).error.is_success


def test_record_budget() -> None:
    h = Harness(ControllerSettings(max_records_per_operation=2))
    h.add_broker(1)
    h.run(h.controller.create_topics(h.image, CreateTopicsRequest([CreatableTopic("t")])))
    result = alter(
        h,
        TOPIC,
        "t",
        *(AlterableConfig(name, "9") for name in ("segment.ms", "retention.ms", "flush.ms")),
    )
    assert result.error.code is ErrorCode.policy_violation
    assert alter(h, TOPIC, "t", AlterableConfig("segment.ms", "9")).error.is_success


GROUP = ConfigResourceType.GROUP


def test_group_configs_are_stored_as_group_config_records(h: Harness) -> None:
    """Kafka 4.0's group configs (KIP-848): kept by group id, the group need not exist."""
    result = alter(
        h,
        GROUP,
        "g",
        AlterableConfig("consumer.session.timeout.ms", "50000"),
        AlterableConfig("share.auto.offset.reset", "earliest"),
    )
    assert result.error.is_success
    assert h.image.configs.configs(ConfigResource.group("g")) == {
        "consumer.session.timeout.ms": "50000",
        "share.auto.offset.reset": "earliest",
    }
    deleted = alter(h, GROUP, "g", AlterableConfig("share.auto.offset.reset", None, DELETE))
    assert deleted.error.is_success
    assert h.image.configs.configs(ConfigResource.group("g")) == {
        "consumer.session.timeout.ms": "50000"
    }


@pytest.mark.parametrize(
    ("configs", "code", "message"),
    [
        ({"no.such": "1"}, ErrorCode.invalid_config, "unknown group config name"),
        ({"consumer.heartbeat.interval.ms": "x"}, ErrorCode.invalid_config, "an integer"),
        (
            {"consumer.session.timeout.ms": "44999"},
            ErrorCode.invalid_config,
            "greater than or equal to group.consumer.min.session.timeout.ms",
        ),
        (
            {"share.heartbeat.interval.ms": "15001"},
            ErrorCode.invalid_config,
            "less than or equal to group.share.max.heartbeat.interval.ms",
        ),
        (
            {"share.record.lock.duration.ms": "999"},
            ErrorCode.invalid_config,
            "at least 1000",
        ),
        ({"share.auto.offset.reset": "none"}, ErrorCode.invalid_config, "not one of"),
    ],
)
def test_group_configs_are_validated_as_kafka_does(
    h: Harness, configs: dict[str, str], code: ErrorCode, message: str
) -> None:
    before = h.image
    result = alter(h, GROUP, "g", *(AlterableConfig(k, v) for k, v in configs.items()))
    assert result.error.code is code
    assert message in (result.error.message or "")
    assert h.image is before


def test_a_group_session_timeout_must_exceed_its_heartbeat_interval() -> None:
    h = harness(
        ControllerSettings(
            server_config=ServerConfig(
                {
                    "group.consumer.min.session.timeout.ms": "1000",
                    "group.consumer.min.heartbeat.interval.ms": "1000",
                }
            )
        )
    )
    result = alter(
        h,
        GROUP,
        "g",
        AlterableConfig("consumer.session.timeout.ms", "3000"),
        AlterableConfig("consumer.heartbeat.interval.ms", "3000"),
    )
    assert result.error.code is ErrorCode.invalid_config
    assert "greater than consumer.heartbeat.interval.ms" in (result.error.message or "")
    assert alter(
        h, GROUP, "", AlterableConfig("consumer.session.timeout.ms", "3000")
    ).error.code is (ErrorCode.invalid_request)
