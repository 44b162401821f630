"""MirrorMaker 2's pure core: replication policies and cycles, topic and group filters, the
source's subscription pattern against the exact rule, the internal records' bytes (checked
against hand-built protocol bytes), offset translation and ``mm2.properties``."""

from __future__ import annotations

import re
import struct

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from strom.connect.connectors.mirror.batches import Copied, planned_ranges
from strom.connect.connectors.mirror.clients import retry_reason
from strom.connect.connectors.mirror.formats import Checkpoint, FormatError, Heartbeat, OffsetSync
from strom.connect.connectors.mirror.mm2config import (
    CHECKPOINT,
    HEARTBEAT,
    SOURCE,
    ConfigError,
    MirrorMakerConfig,
)
from strom.connect.connectors.mirror.policy import (
    DefaultReplicationPolicy,
    Flow,
    GroupFilter,
    IdentityReplicationPolicy,
    PolicyError,
    TopicFilter,
    replication_policy,
)
from strom.connect.connectors.mirror.translate import (
    OffsetSyncStore,
    batch_syncs,
    remote_consumer_offsets,
)


def test_default_policy_names_and_sources() -> None:
    policy = DefaultReplicationPolicy()
    assert policy.format_remote_topic("us-west", "orders") == "us-west.orders"
    assert policy.topic_source("us-west.orders") == "us-west"
    assert policy.upstream_topic("B.A.orders") == "A.orders"
    assert policy.original_topic("B.A.orders") == "orders"
    assert policy.topic_source("orders") is None
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    assert policy.checkpoints_topic("A") == "A.checkpoints.internal"
    assert policy.is_heartbeats_topic("A.B.heartbeats")
    assert policy.is_internal_topic("__consumer_offsets")
    assert policy.is_internal_topic("A.checkpoints.internal")


def test_separator_and_internal_separator() -> None:
    policy = replication_policy({"replication.policy.separator": "_"})
    assert policy.format_remote_topic("A", "t") == "A_t"
    assert policy.offset_syncs_topic("B") == "mm2-offset-syncs_B_internal"
    legacy = replication_policy(
        {
            "replication.policy.separator": "_",
            "replication.policy.internal.topic.separator.enabled": "false",
        }
    )
    assert legacy.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    with pytest.raises(PolicyError, match=r"replication\.policy\.class"):
        replication_policy({"replication.policy.class": "com.example.Mine"})


def test_cycles_are_never_mirrored() -> None:
    a_to_b = Flow.of({"source.cluster.alias": "A", "target.cluster.alias": "B"})
    assert a_to_b.should_replicate("orders")
    assert a_to_b.should_replicate("C.orders")
    assert not a_to_b.should_replicate("B.orders")  # came from B: a cycle
    assert not a_to_b.should_replicate("C.B.orders")
    assert not a_to_b.should_replicate("mm2-offset-syncs.B.internal")
    assert not a_to_b.should_replicate("__consumer_offsets")
    assert a_to_b.should_replicate("heartbeats")
    assert a_to_b.remote_topic("orders") == "A.orders"
    assert a_to_b.checkpoint_topic("B.orders") == "orders"  # back under its name on B


def test_identity_policy_keeps_names_but_not_heartbeats() -> None:
    flow = Flow.of(
        {
            "source.cluster.alias": "A",
            "target.cluster.alias": "B",
            "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        }
    )
    assert isinstance(flow.policy, IdentityReplicationPolicy)
    assert flow.remote_topic("orders") == "orders"
    assert flow.remote_topic("heartbeats") == "A.heartbeats"
    assert flow.policy.topic_source("orders") == "A"
    assert not flow.policy.is_cycle("orders", "B")
    assert flow.policy.is_cycle("B.heartbeats", "B")


def test_filters_have_mm2_defaults_and_name_bad_regexes() -> None:
    topics = TopicFilter.of({})
    assert topics.should_replicate_topic("orders")
    assert not topics.should_replicate_topic("connect-offsets-internal")
    assert not topics.should_replicate_topic("orders.replica")
    assert not topics.should_replicate_topic("__consumer_offsets")
    chosen = TopicFilter.of({"topics": "orders.*, pay", "topics.exclude": "orders-test"})
    assert chosen.should_replicate_topic("orders-eu")
    assert chosen.should_replicate_topic("pay")
    assert not chosen.should_replicate_topic("orders-test")
    assert not chosen.should_replicate_topic("payments")
    groups = GroupFilter.of({})
    assert groups.should_replicate_group("billing")
    assert not groups.should_replicate_group("console-consumer-123")
    assert not groups.should_replicate_group("connect-sink")
    with pytest.raises(PolicyError, match="topics: '\\(' is not a regular expression"):
        TopicFilter.of({"topics": "("})


NAMES = st.lists(
    st.sampled_from(["A", "B", "C", "orders", "heartbeats", "internal", "", "__x", "a-internal"]),
    min_size=1,
    max_size=4,
).map(".".join)


@given(NAMES, st.sampled_from(["", "orders.*", "A.*"]), st.sampled_from(["", "C\\..*"]))
@example("B..", "", "")  # no remote topic to Java's split, so no cycle: admitted
def test_source_pattern_admits_everything_the_rule_admits(
    topic: str, topics: str, exclude: str
) -> None:
    config = {"source.cluster.alias": "A", "target.cluster.alias": "B"}
    if topics:
        config["topics"] = topics
    if exclude:
        config["topics.exclude"] = exclude
    flow = Flow.of(config)
    if flow.should_replicate(topic):
        assert re.fullmatch(flow.source_pattern(), topic)


def test_source_pattern_leaves_internal_topics_and_cycles_out() -> None:
    pattern = Flow.of({"source.cluster.alias": "A", "target.cluster.alias": "B"}).source_pattern()
    for topic in ("__consumer_offsets", "B.orders", "C.B.orders", "mm2-offset-syncs.B.internal"):
        assert not re.fullmatch(pattern, topic), topic
    for topic in ("orders", "C.orders", "heartbeats", "C.heartbeats"):
        assert re.fullmatch(pattern, topic), topic


def _string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_records_in_mm2_bytes() -> None:
    sync = OffsetSync("orders", 2, 100, 42)
    assert sync.key() == _string("orders") + struct.pack(">i", 2)
    assert sync.value() == struct.pack(">qq", 100, 42)
    checkpoint = Checkpoint("billing", "A.orders", 1, 100, 42, "meta")
    assert checkpoint.key() == _string("billing") + _string("A.orders") + struct.pack(">i", 1)
    assert checkpoint.value() == struct.pack(">hqq", 0, 100, 42) + _string("meta")
    beat = Heartbeat("A", "B", 1_700_000_000_000)
    assert beat.key() == _string("A") + _string("B")
    assert beat.value() == struct.pack(">hq", 0, 1_700_000_000_000)
    for record in (sync, checkpoint, beat):
        assert type(record).decode(record.key(), record.value()) == record
    with pytest.raises(FormatError, match="unknown version 1"):
        Heartbeat.decode(beat.key(), struct.pack(">hq", 1, 5))
    with pytest.raises(FormatError, match="end too soon"):
        OffsetSync.decode(b"\x00\x05ab", b"")


TEXT = st.text(max_size=40)
LONG = st.integers(-(2**63), 2**63 - 1)
INT = st.integers(-(2**31), 2**31 - 1)


@given(
    st.one_of(
        st.builds(OffsetSync, TEXT, INT, LONG, LONG),
        st.builds(Checkpoint, TEXT, TEXT, INT, LONG, LONG, TEXT),
        st.builds(Heartbeat, TEXT, TEXT, LONG),
    )
)
def test_records_round_trip(record: OffsetSync | Checkpoint | Heartbeat) -> None:
    assert type(record).decode(record.key(), record.value()) == record


def test_translation_is_exact_at_a_sync_and_one_past_it_between() -> None:
    store = OffsetSyncStore()
    assert store.translate_downstream("t", 0, 5) is None
    store.apply(OffsetSync("t", 0, 9, 4))
    store.apply(OffsetSync("t", 0, 19, 14))
    assert store.translate_downstream("t", 0, 3) is None  # below the first sync
    assert store.translate_downstream("t", 0, 9) == 4
    assert store.translate_downstream("t", 0, 10) == 5
    assert store.translate_downstream("t", 0, 15) == 5  # read again from 5: never lost
    assert store.translate_downstream("t", 0, 20) == 15
    store.apply(OffsetSync("t", 0, 12, 30))  # the mirror went back: newer syncs are void
    assert store.translate_downstream("t", 0, 20) == 31


def test_a_batch_syncs_its_ends_and_between_them_only_without_gaps() -> None:
    def pairs(**batch: int) -> list[tuple[int, int]]:
        return [(s.upstream, s.downstream) for s in batch_syncs("t", 0, **batch)]

    # upstream 100..109 written as downstream 50..59
    assert pairs(first=100, last=109, count=10, end=60, lag_max=100) == [(100, 50), (109, 59)]
    assert pairs(first=100, last=109, count=10, end=60, lag_max=4) == [
        (100, 50),
        (104, 54),
        (108, 58),
        (109, 59),
    ]
    # gaps upstream (compaction, transaction markers): only the ends are known
    assert pairs(first=100, last=120, count=10, end=60, lag_max=1) == [(100, 50), (120, 59)]
    assert pairs(first=7, last=7, count=1, end=1, lag_max=1) == [(7, 0)]
    # never more than SYNCS_PER_BATCH between the ends
    assert len(pairs(first=0, last=999_999, count=1_000_000, end=1_000_000, lag_max=1)) <= 66


def test_remote_consumer_offsets_keep_the_newest_checkpoint() -> None:
    checkpoints = [
        Checkpoint("g", "A.t", 0, 5, 3),
        Checkpoint("other", "A.t", 0, 9, 9),
        Checkpoint("g", "A.t", 0, 8, 6),
        Checkpoint("g", "A.t", 1, 2, 2),
    ]
    assert remote_consumer_offsets(checkpoints, "g") == {("A.t", 0): 6, ("A.t", 1): 2}


MM2 = {
    "clusters": "A, B",
    "A.bootstrap.servers": "a:9092",
    "B.bootstrap.servers": "b:9092",
    "B.security.protocol": "SSL",
    "A->B.enabled": "true",
    "A->B.topics": "orders.*",
    "replication.factor": "1",
    "checkpoints.topic.replication.factor": "1",
}


def test_mm2_properties_flows_and_connector_configs() -> None:
    config = MirrorMakerConfig.of(MM2)
    flows = {f.name: f for f in config.flows()}
    assert set(flows) == {"A->B", "B->A"}
    assert flows["A->B"].replicate and flows["A->B"].heartbeats
    assert not flows["B->A"].replicate and flows["B->A"].heartbeats  # heartbeats only
    source, checkpoint, heartbeat = config.connectors(flows["A->B"])
    assert [c["connector.class"] for c in (source, checkpoint, heartbeat)] == [
        SOURCE,
        CHECKPOINT,
        HEARTBEAT,
    ]
    assert source["name"] == "MirrorSourceConnector"
    assert source["topics"] == "orders.*"
    assert source["source.cluster.alias"] == "A"
    assert source["source.cluster.bootstrap.servers"] == "a:9092"
    assert source["target.cluster.security.protocol"] == "SSL"
    assert source["replication.factor"] == "1"
    assert [c["connector.class"] for c in config.connectors(flows["B->A"])] == [HEARTBEAT]
    worker = config.worker(flows["A->B"])
    assert worker["bootstrap.servers"] == "b:9092"
    assert worker["security.protocol"] == "SSL"
    assert worker["config.storage.topic"] == "mm2-configs.A.internal"
    assert worker["group.id"] == "A-mm2"
    slow = MirrorMakerConfig.of({**MM2, "worker.sync.timeout.ms": "200"})
    assert slow.worker(flows["A->B"])["worker.sync.timeout.ms"] == "200"
    assert all("worker.sync.timeout.ms" not in c for c in slow.connectors(flows["A->B"]))
    no_beats = MirrorMakerConfig.of({**MM2, "emit.heartbeats.enabled": "false"})
    assert [f.name for f in no_beats.flows()] == ["A->B"]
    quiet = MirrorMakerConfig.of({**MM2, "A->B.emit.checkpoints.enabled": "false"})
    assert [c["connector.class"] for c in quiet.connectors(flows["A->B"])] == [SOURCE, HEARTBEAT]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"clusters": ""}, "clusters: required"),
        ({"A->C.enabled": "true"}, "A->C.enabled: unknown cluster alias 'C'; clusters are A, B"),
        ({"B.bootstrap.servers": ""}, "B.bootstrap.servers: required for cluster B"),
        ({"A->B.enabled": "false"}, "no replication flow is enabled: set A->B.enabled = true"),
    ],
)
def test_mm2_properties_problems_are_named(change: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        MirrorMakerConfig.of({**MM2, **change})


def test_an_unreachable_cluster_or_a_late_spark_worker_is_retried_other_failures_not() -> None:
    config = {
        "source.cluster.alias": "A",
        "source.cluster.bootstrap.servers": "a:9092",
        "target.cluster.alias": "B",
        "target.cluster.bootstrap.servers": "b:9092",
    }
    down = RuntimeError("ClusterError: cannot reach the cluster at 'a:9092' within 2s: ...")
    assert retry_reason(config, down) == "cluster A (a:9092) is unreachable"
    vague = RuntimeError("Traceback\nKafkaError{str='Local: Broker transport failure'}")
    assert retry_reason(config, vague) == "a cluster is unreachable (Traceback)"
    assert retry_reason(config, RuntimeError("TOPIC_AUTHORIZATION_FAILED")) is None
    late = RuntimeError("StreamingQueryException: Python worker failed to connect back.")
    assert retry_reason(config, late) == (
        "Spark's Python worker did not start in time (the machine is busy)"
    )


def _offset_log(offsets: str) -> str:
    """An offset log entry as Spark writes it: version, metadata, the one source's offsets."""
    return f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":1}}\n{offsets}'


def test_planned_ranges_come_from_the_offset_log() -> None:
    previous = _offset_log('{"t":{"0":10,"1":5},"u":{"0":7}}')
    current = _offset_log('{"t":{"0":13,"1":5},"u":{"0":9}}')
    assert planned_ranges(previous, current) == [
        Copied("t", 0, 10, 12, 3),  # partition 1 had nothing new: left out
        Copied("u", 0, 7, 8, 2),
    ]
    # unknown starts: the first batch, a partition new in this batch, no offsets
    assert planned_ranges(None, current) is None
    assert planned_ranges(previous, _offset_log('{"t":{"0":13,"1":5,"2":1}}')) is None
    assert planned_ranges("v1\n{}\n-", current) is None
