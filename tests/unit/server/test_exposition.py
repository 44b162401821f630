"""The text exposition format strom writes, read back with prometheus_client's parser; the
counters' request names and their time reservoir."""

from __future__ import annotations

import math

from prometheus_client.parser import text_string_to_metric_families

from strom.protocol.api import ApiKey
from strom.server.exposition import COUNTER, GAUGE, SUMMARY, Family, counter, gauge, labels, render
from strom.server.metrics import TIME_SAMPLES, NodeMetrics, PartitionTraffic, request_name


def parse(text: bytes) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    return {
        family.name: [(s.name, s.labels, s.value) for s in family.samples]
        for family in text_string_to_metric_families(text.decode())
    }


def test_families_read_back_with_their_types_labels_and_values() -> None:
    topics = Family("kafka_server_brokertopicmetrics_messagesin", COUNTER, "Records.")
    topics.add(7)
    topics.add(5, labels(topic="a"))
    times = Family("kafka_network_requestmetrics_totaltimems", SUMMARY, "Times.")
    times.add(1.5, labels(request="Produce", quantile="0.99"))
    times.add(3, labels(request="Produce"), "_count")
    times.add(4.5, labels(request="Produce"), "_sum")
    text = render([topics, times, gauge("g", "One.", 2.5), counter("c", "Two.", 3)])
    families = {f.name: f for f in text_string_to_metric_families(text.decode())}
    assert families["kafka_server_brokertopicmetrics_messagesin"].type == "counter"
    assert families["kafka_network_requestmetrics_totaltimems"].type == "summary"
    assert families["g"].type == "gauge"
    parsed = parse(text)
    assert parsed["kafka_server_brokertopicmetrics_messagesin"] == [
        ("kafka_server_brokertopicmetrics_messagesin_total", {}, 7),
        ("kafka_server_brokertopicmetrics_messagesin_total", {"topic": "a"}, 5),
    ]
    assert parsed["kafka_network_requestmetrics_totaltimems"] == [
        (
            "kafka_network_requestmetrics_totaltimems",
            {"request": "Produce", "quantile": "0.99"},
            1.5,
        ),
        ("kafka_network_requestmetrics_totaltimems_count", {"request": "Produce"}, 3),
        ("kafka_network_requestmetrics_totaltimems_sum", {"request": "Produce"}, 4.5),
    ]
    assert parsed["c"] == [("c_total", {}, 3)]


def test_label_values_are_escaped() -> None:
    odd = 'a "quoted"\\group\nwith a newline'
    family = Family("kafka_consumergroup_lag", GAUGE, "Lag.")
    family.add(1, labels(consumergroup=odd, topic="t", partition="0"))
    [(_, found, _)] = parse(render([family]))["kafka_consumergroup_lag"]
    assert found == {"consumergroup": odd, "topic": "t", "partition": "0"}


def test_values_that_are_not_finite() -> None:
    family = Family("x", GAUGE, "X.")
    for value in (math.inf, -math.inf, math.nan):
        family.add(value)
    values = [sample[2] for sample in parse(render([family]))["x"]]
    assert values[:2] == [math.inf, -math.inf] and math.isnan(values[2])


def test_request_names_are_kafkas() -> None:
    assert request_name(ApiKey.PRODUCE) == "Produce"
    assert request_name(ApiKey.OFFSET_FOR_LEADER_EPOCH) == "OffsetForLeaderEpoch"
    assert request_name(ApiKey.DESCRIBE_ACLS) == "DescribeAcls"
    assert request_name(ApiKey.API_VERSIONS) == "ApiVersions"


def test_partition_traffic_counts_per_batch_and_forgets_partitions_gone() -> None:
    traffic = PartitionTraffic()
    traffic.appended("a", 0, 1000)
    traffic.appended("a", 1, 400)
    traffic.appended("b", 0, 60)
    traffic.sent("a", 1, 700)
    assert traffic.counts == {("a", 0): [1000, 0], ("a", 1): [400, 700], ("b", 0): [60, 0]}
    traffic.forget_others({("a", 1)})
    assert traffic.counts == {("a", 1): [400, 700]}


def test_counters_add_per_batch_and_keep_the_latest_request_times() -> None:
    metrics = NodeMetrics()
    metrics.appended("a", 10, 1000)
    metrics.appended("a", 5, 400)
    metrics.appended("b", 1, 60)
    metrics.sent("a", 700)
    assert (metrics.topics["a"].messages_in, metrics.topics["a"].bytes_in) == (15, 1400)
    assert (metrics.total.messages_in, metrics.total.bytes_in) == (16, 1460)
    assert (metrics.topics["a"].bytes_out, metrics.total.bytes_out) == (700, 700)
    for index in range(TIME_SAMPLES + 10):
        metrics.answered("Produce", 9 + index % 2, float(index))
    times = metrics.requests["Produce"]
    assert times.count == TIME_SAMPLES + 10
    assert times.by_version == {9: (TIME_SAMPLES + 10) // 2, 10: (TIME_SAMPLES + 10) // 2}
    assert len(times.samples) == TIME_SAMPLES
    assert min(times.samples) == 10.0  # the oldest ten were replaced
