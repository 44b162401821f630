"""The console's views (``strom.console.views``): a broker that holds replicas but is not live
is down, partitions without a leader are offline, those missing in-sync replicas are
under-replicated, and a topic's records are what its offsets hold."""

from __future__ import annotations

from strom.console.views import BrokerView, PartitionView, cluster_health, topic_row


def _live(*ids: int) -> list[BrokerView]:
    return [BrokerView(i, "127.0.0.1", 9000 + i, None, alive=True) for i in ids]


def test_a_replicas_broker_that_is_not_live_is_down_and_its_partitions_need_attention() -> None:
    partitions = [
        PartitionView("t", 0, 1, (1, 2, 3), (1, 2)),
        PartitionView("t", 1, 2, (2, 3, 1), (2, 1)),
        PartitionView("t", 2, None, (3,), ()),
        PartitionView("u", 0, 1, (1, 2), (1, 2)),
    ]
    health = cluster_health(_live(1, 2), partitions, controller=1)
    brokers = {b["id"]: b for b in health["brokers"]}  # type: ignore[attr-defined]
    assert [brokers[i]["alive"] for i in (1, 2, 3)] == [True, True, False]
    assert (brokers[1]["leaders"], brokers[2]["leaders"], brokers[3]["leaders"]) == (2, 1, 0)
    assert brokers[3]["replicas"] == 3
    assert health["under_replicated"] == ["t-0", "t-1"]
    assert health["offline"] == ["t-2"]
    assert health["partitions"] == 4


def test_a_topic_row_counts_what_its_offsets_hold() -> None:
    partitions = [PartitionView("t", 0, 1, (1, 2), (1,)), PartitionView("t", 1, -1, (2, 1), ())]
    row = topic_row("t", partitions, {0: (10, 25), 1: (0, 7)}, internal=False)
    assert row == {"name": "t", "internal": False, "partitions": 2, "replication_factor": 2,
                   "records": 22, "under_replicated": 2, "under_min_isr": 0,
                   "offline": 1}  # fmt: skip
    uncounted = topic_row("t", partitions, None, internal=False)  # the page's first paint
    assert uncounted == {**row, "records": None}


def test_a_partition_with_fewer_in_sync_replicas_than_its_topics_minimum_is_under_min_isr() -> None:
    partitions = [
        PartitionView("t", 0, 1, (1, 2, 3), (1,), min_isr=2),
        PartitionView("t", 1, 2, (2, 3, 1), (2, 3), min_isr=2),
        PartitionView("t", 2, None, (3, 1, 2), (), min_isr=2),
        PartitionView("u", 0, 1, (1, 2), (1,)),
    ]
    health = cluster_health(_live(1, 2), partitions, controller=1)
    assert health["under_min_isr"] == ["t-0"]
    assert topic_row("t", partitions[:3], {}, internal=False)["under_min_isr"] == 1
