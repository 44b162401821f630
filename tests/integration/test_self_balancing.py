"""``strom.balancer.enable=true`` on a real cluster with skewed load: three brokers in two racks
(rack b is broker 2 alone, so it holds a replica of every partition until broker 4 joins rack b),
replica and leader counts even but broker 1 leading every partition of the one hot topic, the
others idle. The brokers report their byte rates with their heartbeats, so the controller alone
spreads the hot leaders; then a fourth broker joins and gets its fair share. Meanwhile the chaos
suite's queue workload (idempotent producers, a consumer group) runs on the hot topic, and its
history is checked as the fault suite checks it (no lost, duplicated or reordered record, no
error). Afterwards replica and leader counts per broker are within 10% of even, no rack holds two
replicas of a partition, and no broker leads more than its share of the hot partitions.
``strom balance plan`` shows the measured rates too. The cluster is configured with Confluent's
names of two of the settings (``confluent.balancer.enable``, ``confluent.balancer.heal.*``).

Self-healing: a broker killed and not back within
``strom.balancer.heal.broker.failure.threshold.ms`` has its replicas moved to the live brokers,
every partition back to its full replication factor, while the workload runs unharmed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from balance_clients import assignment, create, uneven
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.cli.main import cli
from strom.testing import Cluster, unique_topic_name
from strom.testing.chaos import QueueWorkload, Recorder, check, final_read

pytestmark = pytest.mark.timeout(240)

_RACKS = {1: "a", 2: "b", 3: "a", 4: "b"}
_HOT = [[1, 2]] * 4
"""The hot topic: every partition led by broker 1."""
_COLD = [[3, 2]] * 4 + [[2, 1]] * 2 + [[2, 3]] * 2
"""Idle partitions that even out the counts: brokers 1 and 3 hold 6 replicas, each broker
leads 4 partitions."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    settings = {
        "offsets.topic.num.partitions": 2,
        "offsets.topic.replication.factor": 2,
        "replication.quota.window.num": 2,
        "confluent.balancer.enable": "true",  # Confluent's name for strom.balancer.enable
        "strom.balancer.check.interval.ms": 1000,
        "strom.balancer.max.concurrent.moves": 3,
        "strom.balancer.throttle.bytes.per.second": 2000000,
        "strom.balancer.metrics.reporter.interval.ms": 1000,
        "broker.heartbeat.interval.ms": 500,
        "confluent.balancer.heal.broker.failure.threshold.ms": 3000,
    }
    racks = {b: {"broker.rack": rack} for b, rack in _RACKS.items()}
    with Cluster(brokers=4, controllers=1, config=settings, node_config=racks) as running:
        running.terminate(4)  # three brokers first; the fourth joins later
        running.wait_for(
            lambda: running.unfenced_brokers(via=[1]) == {1, 2, 3}, timeout=20, what="3 brokers"
        )
        yield running


def _hot_leaders(admin: AdminClient, topic: str) -> Counter[int]:
    return Counter(leader for (t, _), (_, leader) in assignment(admin).items() if t == topic)


def _spread(admin: AdminClient, topic: str, brokers: int) -> bool:
    """No broker leads more hot partitions than its share (rounded up)."""
    return max(_hot_leaders(admin, topic).values()) <= -(-len(_HOT) // brokers)


def _plan_rates(cluster: Cluster) -> dict[int, float]:
    """Each broker's bytes in per second now, as ``strom balance plan`` shows it (none while
    the controller's moves run: the command refuses to plan then)."""
    result = CliRunner().invoke(
        cli, ["balance", "plan", "--bootstrap-server", cluster.bootstrap_servers]
    )
    if result.exit_code != 0:
        return {}
    rows = result.output.split("in (bytes/s)")[1].splitlines()[1:]
    return {int(row.split()[0]): float(row.split()[10]) for row in rows if row.strip()}


def test_the_controller_spreads_hot_leaders_and_fills_a_new_broker(cluster: Cluster) -> None:
    hot, cold = unique_topic_name(), unique_topic_name()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(admin, NewTopic(cold, num_partitions=len(_COLD), replica_assignment=_COLD))
    create(admin, NewTopic(hot, num_partitions=len(_HOT), replica_assignment=_HOT))
    recorder = Recorder()
    workload = QueueWorkload(hot, partitions=len(_HOT), rate=150.0)
    workload.start(cluster.bootstrap_servers, recorder)
    try:
        cluster.wait_for(
            lambda: _plan_rates(cluster).get(2, 0) > 0, timeout=30, what="measured rates"
        )
        cluster.wait_for(lambda: _spread(admin, hot, 3), timeout=60, what="hot leaders spread")
        cluster.restart(4)
        cluster.wait_for(
            lambda: not uneven(admin, (1, 2, 3, 4)) and _spread(admin, hot, 4),
            timeout=90,
            what="four brokers balanced",
        )
    finally:
        workload.stop()
    assert final_read(cluster.bootstrap_servers, workload.topics, recorder)
    result = check(recorder.history())
    assert result.valid, result.summary()
    stats = result.stats
    assert (stats.sends_fail, stats.sends_info) == (0, 0), result.summary()
    assert stats.sends_ok > 500 and stats.values_read > 0, result.summary()
    placed = assignment(admin)
    assert uneven(admin, (1, 2, 3, 4)) == [], placed
    assert _spread(admin, hot, 4), placed
    for reps, _ in placed.values():
        racks = [_RACKS[b] for b in reps]
        assert len(set(racks)) == len(racks), placed


def test_a_broker_dead_longer_than_the_threshold_is_drained(cluster: Cluster) -> None:
    if not cluster.nodes[4].alive:  # run alone, without the test above
        cluster.restart(4)
    cluster.wait_for(
        lambda: cluster.unfenced_brokers(via=[1]) == {1, 2, 3, 4}, timeout=30, what="broker 4"
    )
    topic = unique_topic_name()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    placement = [[3, 2], [3, 4], [1, 2], [2, 3]]
    create(admin, NewTopic(topic, num_partitions=len(placement), replica_assignment=placement))
    recorder = Recorder()
    workload = QueueWorkload(topic, partitions=len(placement), rate=100.0)
    workload.start(cluster.bootstrap_servers, recorder)
    try:
        cluster.wait_for(lambda: len(recorder) > 200, timeout=30, what="records flowing")
        cluster.kill(3)
        cluster.wait_for(
            lambda: all(3 not in reps for reps, _ in assignment(admin).values()),
            timeout=60,
            what="broker 3's replicas moved",
        )
        healed = len(recorder)
        cluster.wait_for(lambda: len(recorder) > healed + 200, timeout=30, what="records after")
    finally:
        workload.stop()
    assert final_read(cluster.bootstrap_servers, workload.topics, recorder)
    result = check(recorder.history())
    assert result.valid, result.summary()
    placed = assignment(admin)
    for reps, leader in placed.values():
        assert len(reps) == 2 and leader in reps, placed
        assert len({_RACKS[b] for b in reps}) == 2, placed
