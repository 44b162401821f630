"""What the examples share: their command line, topics, demo records and running a query.

Each example is a plain script (``python examples/word_count.py --help``); this module keeps
the plumbing that is not the point of any of them out of their way.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Iterable, Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from pyspark.sql import SparkSession
from pyspark.sql.streaming.readwriter import DataStreamWriter

import strom.spark

__all__ = ["ensure_topics", "parser", "produce", "run", "session", "source_options"]


def parser(
    description: str, *, input_topic: str, output_topic: str | None
) -> argparse.ArgumentParser:
    """The options every example takes, plus its input (and output) topic."""
    cli = argparse.ArgumentParser(description=description)
    cli.add_argument(
        "--bootstrap-server",
        "--bootstrap",
        dest="bootstrap",
        default="localhost:9092",
        help="the broker to use (default: %(default)s)",
    )
    cli.add_argument("--input", default=input_topic, help="topic to read (default: %(default)s)")
    where = "print them" if output_topic is None else "%(default)s"
    cli.add_argument(
        "--output", default=output_topic, help=f"topic to write the results to (default: {where})"
    )
    cli.add_argument(
        "--seed", action="store_true", help="write the demo records to the input topic first"
    )
    cli.add_argument(
        "--once",
        action="store_true",
        help="process what the input topic holds now and stop (Trigger.AvailableNow)",
    )
    cli.add_argument(
        "--checkpoint",
        help="checkpoint directory; a query given the same one resumes where it stopped "
        "(default: a new temporary one, so each run reads the input topic from its start)",
    )
    cli.add_argument(
        "--master",
        default="local[*]",
        help="Spark master: local[*] or a standalone cluster's spark://host:port "
        "(default: %(default)s)",
    )
    cli.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting, e.g. spark.executor.memory=512m (repeatable)",
    )
    return cli


def ensure_topics(bootstrap: str, names: Iterable[str], *, partitions: int = 1) -> None:
    """Create the topics that do not exist yet."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(name, partitions, 1) for name in names]
    for future in admin.create_topics(topics, operation_timeout=10).values():
        try:
            future.result(30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise


def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes]]) -> int:
    """Write ``(key, value)`` records in order; how many."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    count = 0
    for key, value in records:
        producer.produce(topic, key=key, value=value)
        producer.poll(0)
        count += 1
    if producer.flush(30) != 0:
        raise RuntimeError(f"demo records not delivered to {topic!r} within 30 s")
    print(f"wrote {count} demo records to {topic}")
    return count


def session(app_name: str, master: str, conf: Sequence[str]) -> SparkSession:
    """A SparkSession with the ``strom`` format registered and times in UTC."""
    settings = {
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
    }
    for item in conf:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--conf wants KEY=VALUE, not {item!r}")
        settings[key] = value
    return strom.spark.session(master=master, app_name=app_name, conf=settings)


def source_options(args: argparse.Namespace) -> dict[str, str]:
    """The source options every example reads its input topic with."""
    return {
        "kafka.bootstrap.servers": args.bootstrap,
        "subscribe": args.input,
        "startingOffsets": "earliest",
    }


def run(writer: DataStreamWriter, args: argparse.Namespace) -> None:
    """Start the query and wait for it: until the input is read with ``--once``, else forever."""
    checkpoint = args.checkpoint or tempfile.mkdtemp(prefix="strom-example-")
    writer = writer.option("checkpointLocation", checkpoint)
    writer = (
        writer.trigger(availableNow=True)
        if args.once
        else writer.trigger(processingTime="1 second")
    )
    before = end_offsets(args.bootstrap, args.output) if args.once and args.output else None
    try:
        writer.start().awaitTermination()
    finally:
        if args.checkpoint is None:
            shutil.rmtree(checkpoint, ignore_errors=True)
    if before is not None:
        print_written(args.bootstrap, args.output, before)


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """Partition -> the offset the next record written to ``topic`` gets."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "strom-example-reader"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        }
    finally:
        consumer.close()


def print_written(bootstrap: str, topic: str, before: dict[int, int]) -> None:
    """Print what the query wrote to ``topic`` (everything after ``before``), key and value."""
    after = end_offsets(bootstrap, topic)
    wanted = sum(after[p] - before.get(p, 0) for p in after)
    print(f"the query wrote {wanted} record(s) to {topic}:")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "strom-example-reader"})
    try:
        consumer.assign([TopicPartition(topic, p, before.get(p, 0)) for p in after])
        seen = 0
        while seen < wanted:
            message = consumer.poll(10)
            if message is None:
                break
            if message.error() is None:
                key = (message.key() or b"").decode(errors="replace")
                print(f"  {key}\t{(message.value() or b'').decode(errors='replace')}")
                seen += 1
    finally:
        consumer.close()
