"""``strom balance`` on a real cluster: three brokers with a skewed placement, a fourth joins,
``strom balance execute`` moves a fair share onto it under throttles while a confluent-kafka
producer and consumer run; afterwards replica and leader counts per broker are within 10% of
even, no rack holds two replicas of a partition, and nothing was lost. Bad input moves nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from balance_clients import Clients, assignment, create, uneven
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.cli.main import cli
from strom.testing import Cluster, unique_topic_name

pytestmark = pytest.mark.timeout(240)

_RACKS = {1: "a", 2: "b", 3: "a", 4: "b"}
_SKEW = {p: [1, 2] if p % 4 else [1, 3] for p in range(12)}  # p % 4 == 0: two replicas in rack a


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    settings = {
        "offsets.topic.num.partitions": 2,
        "offsets.topic.replication.factor": 2,
        "replication.quota.window.num": 2,
    }
    racks = {b: {"broker.rack": rack} for b, rack in _RACKS.items()}
    with Cluster(brokers=4, controllers=1, config=settings, node_config=racks) as running:
        running.terminate(4)  # three brokers first; the fourth joins later
        running.wait_for(
            lambda: running.unfenced_brokers(via=[1]) == {1, 2, 3}, timeout=20, what="3 brokers"
        )
        yield running


def _balance(cluster: Cluster, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, ["balance", *args, "--bootstrap-server", cluster.bootstrap_servers]
    )
    return result.exit_code, result.output


def test_a_new_broker_gets_a_fair_share_while_clients_run(cluster: Cluster) -> None:
    topic = unique_topic_name()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create(
        admin, NewTopic(topic, num_partitions=len(_SKEW), replica_assignment=list(_SKEW.values()))
    )
    clients = Clients(cluster.bootstrap_servers, topic)
    try:
        cluster.wait_for(lambda: len(clients.seen) > 100, timeout=30, what="records flowing")
        cluster.restart(4)
        cluster.wait_for(
            lambda: cluster.unfenced_brokers(via=[1]) == {1, 2, 3, 4}, timeout=30, what="broker 4"
        )
        code, output = _balance(
            cluster,
            "execute",
            "--throttle",
            "2000000",
            "--max-concurrent-moves",
            "3",
            "--timeout",
            "120",
        )
        assert code == 0, output
        assert "balanced" in output
    except BaseException:
        clients.close()
        raise
    clients.finish(cluster)

    assert uneven(admin, (1, 2, 3, 4)) == []
    for reps, _ in assignment(admin).values():
        racks = [_RACKS[b] for b in reps]
        assert len(set(racks)) == len(racks), reps
    code, output = _balance(cluster, "status")
    assert code == 0 and "0 partition move(s) in progress" in output, output


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--add-broker", "9"], "--add-broker names broker 9, which is not in the cluster"),
        (
            ["--remove-broker", "2", "--remove-broker", "4"],
            "but the brokers span only 1 rack(s) (a): add a broker in another rack",
        ),
    ],
)
def test_bad_input_is_one_line_and_moves_nothing(
    cluster: Cluster, args: list[str], error: str
) -> None:
    if not cluster.nodes[4].alive:  # run alone, without the test above
        cluster.restart(4)
    cluster.wait_for(
        lambda: cluster.unfenced_brokers(via=[1]) == {1, 2, 3, 4}, timeout=30, what="broker 4"
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = unique_topic_name()
    create(admin, NewTopic(topic, num_partitions=2, replication_factor=2))
    cluster.wait_for(lambda: (topic, 1) in assignment(admin), timeout=10, what=topic)
    before = assignment(admin)
    code, output = _balance(cluster, "execute", *args)
    assert code == 1
    assert error in output
    assert len(output.strip().splitlines()) == 1, output
    replicas = {tp: reps for tp, (reps, _) in before.items()}
    assert {tp: reps for tp, (reps, _) in assignment(admin).items()} == replicas
