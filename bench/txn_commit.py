"""How long a producer's ``commit_transaction`` takes: one broker next to a 3-broker cluster.

A confluent-kafka transactional producer writes one record to each of 3 partitions and commits,
``--commits`` times; the clock runs around ``commit_transaction`` only (EndTxn, the markers
written to the partition leaders with acks=all, and the transaction log writes, as librdkafka's
test 0055 times it). On the cluster every topic, ``__transaction_state`` included, has 3
replicas (``min.insync.replicas`` 2), so each acks=all write waits for a follower's fetch.

The first commit of a producer also opens its connections to the partition leaders (ApiVersions
and a Metadata request on each, before the first Produce), so it is shown apart, and p50, p99
and max are of the commits after it. The load average (``os.getloadavg``) before and after is
printed with them: other work on the machine moves every figure.

Run: ``.venv/bin/python -m bench.txn_commit [--commits 50]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from confluent_kafka import Producer
from kafka.admin import KafkaAdminClient, NewTopic

from strom.testing import Broker, Cluster, unique_topic_name


def commit_times(servers: str, replicas: int, commits: int) -> list[float]:
    """Milliseconds each of ``commits`` transactions spent in ``commit_transaction``."""
    admin = KafkaAdminClient(bootstrap_servers=servers)
    topic = unique_topic_name("txn")
    configs = {"min.insync.replicas": str(min(2, replicas))}
    admin.create_topics([NewTopic(topic, 3, replicas, topic_configs=configs)])
    admin.close()
    time.sleep(2)
    producer = Producer({"bootstrap.servers": servers, "transactional.id": topic})
    producer.init_transactions(30)
    times = []
    for _ in range(commits):
        producer.begin_transaction()
        for partition in range(3):
            producer.produce(topic, b"x", partition=partition)
        started = time.monotonic()
        producer.commit_transaction(30)
        times.append((time.monotonic() - started) * 1000)
    return times


def row(name: str, times: list[float]) -> str:
    """The setup's row: the first commit apart, then p50, p99 and max of the others."""
    first, rest = times[0], times[1:] or times
    ordered = sorted(rest)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"| {name} | {statistics.median(rest):.1f} | {p99:.1f} | {max(rest):.1f} | {first:.1f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--commits", type=int, default=50, help="transactions per setup, the first included"
    )
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with Broker(process=True) as broker:
        single = commit_times(broker.bootstrap_servers, 1, args.commits)
    replicated = {
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
    }
    with Cluster(brokers=3, controllers=1, config=replicated) as cluster:
        clustered = commit_times(cluster.bootstrap_servers, 3, args.commits)
    print("| setup | commit p50 (ms) | p99 (ms) | max (ms) | first commit (ms) |")
    print("|---|---|---|---|---|")
    print(row("one broker", single))
    print(row("3 brokers, RF 3", clustered))
    print(f"load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
