"""How long a producer's ``commit_transaction`` takes: one broker next to a 3-broker cluster.

A confluent-kafka transactional producer writes one record to each of 3 partitions and commits,
``--commits`` times; the clock runs around ``commit_transaction`` only (EndTxn, the markers
written to the partition leaders with acks=all, and the transaction log writes, as librdkafka's
test 0055 times it). On the cluster every topic, ``__transaction_state`` included, has 3
replicas (``min.insync.replicas`` 2), so each acks=all write waits for a follower's fetch.

Run: ``.venv/bin/python -m bench.txn_commit [--commits 50]``.
"""

from __future__ import annotations

import argparse
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
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"| {name} | {statistics.median(times):.1f} | {p99:.1f} | {max(times):.1f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=50, help="transactions per setup")
    args = parser.parse_args()
    with Broker(process=True) as broker:
        single = commit_times(broker.bootstrap_servers, 1, args.commits)
    replicated = {
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
    }
    with Cluster(brokers=3, controllers=1, config=replicated) as cluster:
        clustered = commit_times(cluster.bootstrap_servers, 3, args.commits)
    print("| setup | commit p50 (ms) | p99 (ms) | max (ms) |\n|---|---|---|---|")
    print(row("one broker", single))
    print(row("3 brokers, RF 3", clustered))


if __name__ == "__main__":
    main()
