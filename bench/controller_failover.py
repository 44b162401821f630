"""Controller failover: from kill -9 of the active controller to a new one serving admin requests.

A cluster of three controllers and one broker runs on this machine (``strom.testing.Cluster``).
Each trial kills the active controller and, at the same instant, starts creating a topic
through the broker. The broker forwards CreateTopics to the controller and retries it until
one answers, so the clock stops once the new active controller has committed the topic. Then
the killed node is restarted and rejoins before the next trial.

Printed per timeout setting: p50, p99 and max over ``--trials`` trials, beside the reference:
when Kafka's KRaft protocol, with the same settings, lets a follower notice that the leader is
gone. A follower stands for election ``controller.quorum.fetch.timeout.ms`` after the leader
last answered its fetch, and the leader holds a fetch for up to 500 ms (Kafka's fixed fetch
wait). So a follower notices between fetch.timeout - 0.5 s and fetch.timeout after the kill.
The election and the commit of the topic come on top of that.

Run: ``.venv/bin/python -m bench.controller_failover [--trials 20]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from strom.testing import Cluster, unique_topic_name

SETTINGS: Mapping[str, Mapping[str, str]] = {
    "Kafka's defaults": {
        "controller.quorum.election.timeout.ms": "1000",
        "controller.quorum.fetch.timeout.ms": "2000",
        "controller.quorum.election.backoff.max.ms": "1000",
    },
    "tuned": {
        "controller.quorum.election.timeout.ms": "300",
        "controller.quorum.fetch.timeout.ms": "600",
        "controller.quorum.election.backoff.max.ms": "300",
    },
}


FETCH_MAX_WAIT_MS = 500
"""How long a KRaft leader holds a fetch that has nothing new (Kafka's and strom's)."""


def create_topic(servers: str) -> None:
    """Create a topic of a new name. TOPIC_ALREADY_EXISTS counts as created: the killed
    controller appended the topic, its successor committed it, and the broker's retry of the
    forwarded request met it (the name is this call's own)."""
    admin = AdminClient({"bootstrap.servers": servers, "socket.timeout.ms": 30_000})
    name = unique_topic_name("failover")
    future = admin.create_topics([NewTopic(name, num_partitions=1)], operation_timeout=30)[name]
    try:
        future.result(60)
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def trial(cluster: Cluster) -> float:
    """Seconds from killing the active controller to a topic created through the broker."""
    victim = cluster.active_controller()
    cluster.kill(victim)
    killed = time.monotonic()
    create_topic(cluster.bootstrap_servers)
    elapsed = time.monotonic() - killed
    cluster.restart(victim)
    cluster.wait_for(
        lambda: (
            cluster.active_controller() != victim
            and any("follows leader" in line for line in cluster.nodes[victim].lines[-20:])
        ),
        timeout=60,
        what=f"node {victim} to rejoin",
    )
    return elapsed


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    trials = parser.parse_args().trials
    print(
        f"{'timeouts':<17} {'fetch ms':>8} {'p50 s':>7} {'p99 s':>7} {'max s':>7} "
        f"{'KRaft notices at s':>19}"
    )
    for label, settings in SETTINGS.items():
        with Cluster(brokers=1, controllers=3, config=settings) as c:
            create_topic(c.bootstrap_servers)  # warm: the broker knows the controller
            times = []
            for number in range(1, trials + 1):
                times.append(trial(c))
                print(f"  {label}: trial {number}/{trials}: {times[-1]:.2f} s", flush=True)
        fetch_ms = int(settings["controller.quorum.fetch.timeout.ms"])
        print(
            f"{label:<17} {fetch_ms:>8} {statistics.median(times):>7.2f} "
            f"{percentile(times, 0.99):>7.2f} {max(times):>7.2f} "
            f"{f'{(fetch_ms - FETCH_MAX_WAIT_MS) / 1000:.1f}-{fetch_ms / 1000:.1f}':>19}"
        )


if __name__ == "__main__":
    main()
