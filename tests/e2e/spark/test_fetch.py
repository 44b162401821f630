"""A task's read of one offset range (``strom.spark.fetch.read_range``) without Spark: offsets
lost between planning and reading are reported, or skipped with ``failOnDataLoss=false``; on
both read paths (the tasks' own Fetch requests, and librdkafka's ``consume()`` for settings
only librdkafka honours)."""

from __future__ import annotations

import pytest
from confluent_kafka import TopicPartition
from strom_harness import StromServer

from e2e.spark.clients import admin, create_topic, produce_values
from strom.client.security import ClientSecurity
from strom.spark.fetch import DataLossError, FetchSettings, fetch_security, read_range
from strom.spark.offsets import OffsetRange

ONLY_LIBRDKAFKA = {"sasl.oauthbearer.config": "principal=alice"}
"""A setting only librdkafka reads (unused without SASL): the task takes the librdkafka path."""


@pytest.fixture(params=["fetch", "consume"])
def path(request: pytest.FixtureRequest) -> dict[str, str]:
    """The extra client settings that pick the read path."""
    extra = ONLY_LIBRDKAFKA if request.param == "consume" else {}
    assert isinstance(fetch_security(extra), ClientSecurity) == (request.param == "fetch")
    return extra


def settings(broker: StromServer, path: dict[str, str], *, fail: bool) -> FetchSettings:
    return FetchSettings(
        client={"bootstrap.servers": broker.bootstrap, **path},
        include_headers=False,
        fail_on_data_loss=fail,
        poll_timeout_ms=10_000,
        api_timeout_ms=10_000,
        fetch_records=3,
    )


def offsets(broker: StromServer, path: dict[str, str], r: OffsetRange, *, fail: bool) -> list[int]:
    batches = read_range(r, settings(broker, path, fail=fail))
    return [o for batch in batches for o in batch.column("offset").to_pylist()]


def test_range_read_in_sized_batches_and_lost_offsets(
    broker: StromServer, path: dict[str, str]
) -> None:
    topic = create_topic(broker.bootstrap, "fetch-loss")
    produce_values(broker.bootstrap, topic, 10)
    batches = list(read_range(OffsetRange(topic, 0, 2, 9), settings(broker, path, fail=True)))
    assert [b.num_rows for b in batches] == [3, 3, 1]
    client = admin(broker.bootstrap)  # kept until the result is in
    futures = client.delete_records([TopicPartition(topic, 0, 4)])
    assert next(iter(futures.values())).result(10).low_watermark == 4
    with pytest.raises(DataLossError, match=rf"offsets \[1, 4\) of {topic}-0 are lost"):
        offsets(broker, path, OffsetRange(topic, 0, 1, 8), fail=True)
    assert offsets(broker, path, OffsetRange(topic, 0, 1, 8), fail=False) == [4, 5, 6, 7]


@pytest.mark.parametrize("fail", [True, False])
def test_range_past_the_log_end_is_lost(
    broker: StromServer, path: dict[str, str], fail: bool
) -> None:
    topic = create_topic(broker.bootstrap, "fetch-past-end")
    produce_values(broker.bootstrap, topic, 3)
    r = OffsetRange(topic, 0, 5, 9)
    if fail:
        with pytest.raises(DataLossError, match=rf"offsets \[5, 9\) of {topic}-0 are lost"):
            offsets(broker, path, r, fail=True)
    else:
        assert offsets(broker, path, r, fail=False) == []
