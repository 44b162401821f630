"""Replication: what RF 3 costs a producer, and how long a leader's death stops one.

A cluster of three brokers and one controller runs on this machine (``strom.testing.Cluster``,
every process on the same two cores, so each broker gets a fraction of one).

1. Throughput and latency, RF 1 next to RF 3: ``strom perf``'s producer (``strom.cli.perf``)
   writes 1 KB records with acks=all to a 3-partition topic of each replication factor
   (``min.insync.replicas`` 2 for RF 3): as fast as it can (MB/s), then paced at
   ``--rate`` records/s with linger.ms 0 (p50 and p99 from ``produce()`` to the
   acknowledgement, as librdkafka measures it). The reference is RF 1 on the same cluster: the
   ratio is what replication costs. ``--rounds`` rounds interleave RF 1 and RF 3 (the load
   other work puts on the machine moves every figure, and moves both alike within a round);
   each row is the median over the rounds, its ratio the median of the rounds' ratios, with
   the load average (``os.getloadavg``) before and after.
2. Failover: each trial kills -9 the leader of a single-partition RF 3 topic and at once sends
   a record with a producer that was connected to it (acks=all, idempotent); the clock stops
   when that record is acknowledged by the new leader. Then the broker is restarted and the
   next trial waits until it is back in the ISR. The reference is ``broker.session.timeout.ms``:
   the controller moves a dead broker's partitions once its session runs out (Kafka's KRaft
   does the same), so that is the floor of the figure for any KRaft system with these settings.

Run: ``.venv/bin/python -m bench.replication [--trials 20] [--records 100000] [--rate 2000]
[--rounds 3]``
(``--trials 0``: the throughput and latency rows only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Mapping

from confluent_kafka import Producer
from kafka.admin import KafkaAdminClient, NewTopic

from strom.cli.client_common import ClientConfig
from strom.cli.perf import ProduceResult, ProduceSpec, run_produce
from strom.testing import Cluster, unique_topic_name

SETTINGS: Mapping[str, str] = {
    "replica.lag.time.max.ms": "5000",
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def leader_of(admin: KafkaAdminClient, topic: str) -> tuple[int, set[int]]:
    """The leader and the ISR of the topic's partition 0 (-1 and nothing until it is known)."""
    [described] = admin.describe_topics([topic])
    for partition in described["partitions"]:
        if partition["partition_index"] == 0:
            return partition["leader_id"], set(partition["isr_nodes"])
    return -1, set()


def produce(servers: str, topic: str, spec: ProduceSpec, linger_ms: int) -> ProduceResult:
    config = ClientConfig.build(
        bootstrap_server=servers,
        command_config=None,
        overrides={"acks": "all", "linger.ms": str(linger_ms)},
    )
    return run_produce(config, ProduceSpec(topic, spec.num_records, 1024, spec.throughput))


def throughput_rows(
    cluster: Cluster, admin: KafkaAdminClient, records: int, rate: int, rounds: int
) -> None:
    topics = {}
    for replicas in (1, 3):
        name = unique_topic_name(f"rf{replicas}")
        admin.create_topics(
            [
                NewTopic(
                    name, 3, replicas, topic_configs={"min.insync.replicas": str(min(2, replicas))}
                )
            ]
        )
        topics[replicas] = name
    time.sleep(2)
    load_before = os.getloadavg()[0]
    rows: dict[str, dict[int, list[float]]] = {
        name: {1: [], 3: []} for name in ("MB/s", "p50 ms", "p99 ms")
    }
    for _ in range(rounds):
        for replicas, topic in topics.items():
            fast = produce(cluster.bootstrap_servers, topic, ProduceSpec(topic, records, 1024), 5)
            rows["MB/s"][replicas].append(fast.mb_per_s)
        for replicas, topic in topics.items():
            paced = produce(
                cluster.bootstrap_servers, topic, ProduceSpec(topic, rate * 10, 1024, rate), 0
            )
            rows["p50 ms"][replicas].append(paced.p50_ms)
            rows["p99 ms"][replicas].append(paced.p99_ms)
    print(
        f"1 KB records, acks=all, 3 partitions ({records} as fast as possible; {rate}/s paced), "
        f"median of {rounds} interleaved rounds, load average {load_before:.2f} before and "
        f"{os.getloadavg()[0]:.2f} after"
    )
    print(f"{'figure':<28}{'RF 1':>10}{'RF 3':>10}{'RF 3 / RF 1':>14}  ratio per round")
    for name, by_rf in rows.items():
        label = "produce " + name if name == "MB/s" else f"latency at {rate}/s, {name}"
        ratios = [rf3 / rf1 for rf1, rf3 in zip(by_rf[1], by_rf[3], strict=True)]
        print(
            f"{label:<28}{statistics.median(by_rf[1]):>10.2f}{statistics.median(by_rf[3]):>10.2f}"
            f"{statistics.median(ratios):>14.2f}  {' '.join(f'{r:.2f}' for r in ratios)}"
        )


def failover_trial(cluster: Cluster, admin: KafkaAdminClient, topic: str) -> float:
    """Seconds from kill -9 of the leader to a record acknowledged by its successor."""
    victim, _ = leader_of(admin, topic)
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 0,
        }
    )
    producer.produce(topic, b"warm-up")
    producer.flush(30)
    acknowledged: list[float] = []
    cluster.kill(victim)
    killed = time.monotonic()
    producer.produce(
        topic, b"after", on_delivery=lambda error, _: acknowledged.append(time.monotonic())
    )
    producer.flush(60)
    if not acknowledged:
        raise RuntimeError("the record sent after the kill was not acknowledged")
    elapsed = acknowledged[0] - killed
    cluster.restart(victim)
    cluster.wait_for(
        lambda: leader_of(admin, topic)[1] == {1, 2, 3},
        timeout=60,
        what=f"broker {victim} back in the ISR",
    )
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved RF 1 / RF 3 rounds")
    args = parser.parse_args()
    with Cluster(brokers=3, controllers=1, config=SETTINGS) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        throughput_rows(cluster, admin, args.records, args.rate, args.rounds)
        topic = unique_topic_name("failover")
        admin.create_topics([NewTopic(topic, 1, 3, topic_configs={"min.insync.replicas": "2"})])
        cluster.wait_for(
            lambda: leader_of(admin, topic)[1] == {1, 2, 3}, timeout=30, what="the topic"
        )
        times = []
        for trial in range(args.trials):
            times.append(failover_trial(cluster, admin, topic))
            print(f"trial {trial + 1}: {times[-1]:.2f} s", flush=True)
        session_s = int(SETTINGS["broker.session.timeout.ms"]) / 1000
        if times:
            print(
                f"\nleader kill -9 to first acknowledged produce, {args.trials} trials: "
                f"p50 {percentile(times, 0.5):.2f} s, p99 {percentile(times, 0.99):.2f} s, "
                f"mean {statistics.mean(times):.2f} s; reference: broker.session.timeout.ms "
                f"{session_s:.1f} s (when the controller may move the partitions)"
            )
        admin.close()


if __name__ == "__main__":
    main()
