"""The console's throughput and latency sample from the nodes' scrapes
(``strom.console.metrics.sample``): totals over every node from the all-topics series only,
and per API the slowest node's 99th percentile."""

from __future__ import annotations

from strom.console.metrics import History, sample

NODE = """\
# TYPE kafka_server_brokertopicmetrics_messagesin_total counter
kafka_server_brokertopicmetrics_messagesin_total {all}
kafka_server_brokertopicmetrics_messagesin_total{{topic="orders"}} {all}
# TYPE kafka_server_brokertopicmetrics_bytesin_total counter
kafka_server_brokertopicmetrics_bytesin_total 1000
# TYPE kafka_network_requestmetrics_totaltimems summary
kafka_network_requestmetrics_totaltimems{{request="Produce",quantile="0.5"}} 1.0
kafka_network_requestmetrics_totaltimems{{request="Produce",quantile="0.99"}} {p99}
kafka_network_requestmetrics_totaltimems{{request="Metadata",quantile="0.99"}} 50.0
"""


def test_totals_add_up_over_nodes_and_latency_is_the_slowest_nodes() -> None:
    found = sample([NODE.format(all=10, p99=4.5), NODE.format(all=32, p99=7.25)])
    assert found["totals"] == {"messages_in": 42.0, "bytes_in": 2000.0, "bytes_out": 0.0}
    assert found["p99_ms"] == {"Produce": 7.25}


def test_no_scrapes_is_nothing_yet() -> None:
    assert sample([]) == {"totals": {"messages_in": 0.0, "bytes_in": 0.0, "bytes_out": 0.0},
                          "p99_ms": {}}  # fmt: skip


def test_history_keeps_the_last_minutes_one_sample_a_gap() -> None:
    history = History(window_s=10.0, gap_s=1.0)
    history.add(100.0, {"n": 1})
    assert history.add(100.4, {"n": 2}) == [{"at": 100.0, "n": 2}]  # too close: the latest kept
    assert [s["n"] for s in history.add(101.0, {"n": 3})] == [2, 3]
    kept = history.add(110.5, {"n": 4})
    assert [(s["at"], s["n"]) for s in kept] == [(101.0, 3), (110.5, 4)]  # 100.0 is too old
