"""Exactly-once writes without a cluster: options, transactional ids, what tasks hand the driver."""

from __future__ import annotations

import pickle

import pytest

from strom.spark.options import OptionError, parse_write_options
from strom.spark.transactional import OpenTransaction, TaskIdentity, transactional_id
from strom.spark.writer import Written, _transactions

BOOT = {"kafka.bootstrap.servers": "h:9092"}
TASK = TaskIdentity(query_id="5f0c", batch_id=7, partition_id=3)


def test_exactly_once_is_off_by_default_and_takes_a_prefix() -> None:
    plain = parse_write_options(BOOT)
    assert not plain.exactly_once and plain.transactional_id_prefix is None
    on = parse_write_options({**BOOT, "ExactlyOnce": "true", "transactionalIdPrefix": " etl "})
    assert on.exactly_once and on.transactional_id_prefix == "etl"
    assert on.client["enable.idempotence"] == "true"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"exactlyOnce": "yes"}, "'exactlyOnce' must be 'true' or 'false'"),
        ({"kafka.transactional.id": "t"}, "'transactional.id' is not supported"),
        ({"kafka.enable.idempotence": "false"}, "idempotent producer"),
        ({"kafka.acks": "1"}, "'kafka.acks' = all"),
    ],
)
def test_settings_a_transactional_sink_cannot_honour_are_refused(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        parse_write_options({**BOOT, "exactlyOnce": "true", **options})


def test_transactional_id_is_the_prefix_and_the_spark_partition() -> None:
    assert transactional_id(None, TASK) == "spark-strom-5f0c-3"
    assert transactional_id("etl", TASK) == "etl-3"


def test_the_driver_gets_the_open_transactions_of_the_tasks_that_have_one() -> None:
    txn = OpenTransaction("spark-strom-5f0c-0", producer_id=12, producer_epoch=4, batch_id=7)
    messages = [Written(5, txn), Written(0), None, Written(2)]
    shipped = pickle.loads(pickle.dumps(messages))  # as Spark ships them to the driver
    assert _transactions(shipped) == [txn]
