"""Spark decode throughput of schema-registry Avro and Protobuf values next to plain JSON values.

Run: ``.venv/bin/python -m bench.spark_registry [--quick]``. Prints one table: value format,
records, the decode's records/s, and the ratio to JSON.

How it measures:

- One ``strom server`` child process and a registry (``strom.testing.Registry``) beside it; two
  topics of ``PARTITIONS`` partitions holding the same ``RECORDS`` sales: one with values that
  confluent-kafka's ``AvroSerializer`` encoded (magic byte, schema id, Avro binary), one with
  the same values as JSON text.
- A batch read of each topic with the ``strom`` source on ``local[PARTITIONS]``, its values
  decoded into a struct (Avro: ``decode_value(..., "avro", registry=..., subject=...)``, which
  looks the schema up by id once per Python worker; the same in the JVM with
  ``strom.spark.jvm.avro_decode``, spark-sql's Avro converters, as the SQL AVRO format;
  Protobuf (values of confluent-kafka's ``ProtobufSerializer``) in the JVM with
  ``strom.spark.jvm.protobuf_decode``, Spark's shaded protobuf-java, as the SQL PROTOBUF
  format; JSON:
  ``decode_value(..., "json", schema)``, Spark's ``from_json``), every column of the struct
  written to Spark's ``noop`` sink. The figure is records over the wall time of that job, the
  best of ``RUNS`` after one warm-up job; the read alone (the ``value`` column to ``noop``) is
  printed too, to show the decode's share.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Sequence

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pool, message_factory
from pyspark.sql import Column, DataFrame, SparkSession

import strom.spark
from bench.spark_run import spark_and_scratch
from strom.cli.perf import ensure_topic
from strom.registry.protobuf_schema import ProtobufSchema
from strom.spark.jvm import avro_decode, protobuf_decode
from strom.testing import Broker
from strom.testing.registry import Registry

PARTITIONS = 2
RUNS = 2
SALE = {
    "type": "record",
    "name": "Sale",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "shop", "type": "string"},
        {"name": "cents", "type": "long"},
        {"name": "coupon", "type": ["null", "string"], "default": None},
        {"name": "note", "type": "string"},
    ],
}
SALE_DDL = "id bigint, shop string, cents bigint, coupon string, note string"
SALE_PROTO = """syntax = "proto3";
message Sale {
  int64 id = 1;
  string shop = 2;
  int64 cents = 3;
  optional string coupon = 4;
  string note = 5;
}
"""


def sale_class() -> type:
    """The generated class of ``SALE_PROTO``'s message, in a pool of its own."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(ProtobufSchema(SALE_PROTO).file)
    made: type = message_factory.GetMessageClass(pool.FindMessageTypeByName("Sale"))
    return made


def sales(count: int) -> list[dict[str, object]]:
    rng = random.Random(7)
    return [
        {
            "id": n,
            "shop": f"shop-{rng.randrange(50)}",
            "cents": rng.randrange(100_000),
            "coupon": None if n % 3 else f"C{n % 97}",
            "note": "".join(rng.choices("abcdefghij", k=40)),
        }
        for n in range(count)
    ]


def fill(bootstrap: str, topic: str, values: Sequence[bytes]) -> None:
    ensure_topic(topic=topic, partitions=PARTITIONS, bootstrap_server=bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for n, value in enumerate(values):
        while True:
            try:
                producer.produce(topic, value, partition=n % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


def timed(spark: SparkSession, df: DataFrame, records: int) -> float:
    """Records/s of writing ``df`` to the noop sink: the best of RUNS after a warm-up."""
    best = 0.0
    for _ in range(RUNS + 1):
        started = time.monotonic()
        df.write.format("noop").mode("overwrite").save()
        best = max(best, records / (time.monotonic() - started))
    return best


def read(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    return (
        spark.read.format("strom")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )


def measure(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    records: int,
    decode: Callable[[Column], Column],
) -> tuple[float, float]:
    df = read(spark, bootstrap, topic)
    decoded = df.select(decode(df.value).alias("v")).select("v.*")
    return timed(spark, df.select("value"), records), timed(spark, decoded, records)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the records")
    args = parser.parse_args(argv)
    records = 100_000 if args.quick else 400_000
    started = time.monotonic()
    rows = []
    with (
        spark_and_scratch(PARTITIONS) as (spark, data),
        Broker(process=True, data_dir=data) as broker,
        Registry(broker.bootstrap_servers) as registry,
    ):
        bootstrap = broker.bootstrap_servers
        values = sales(records)
        client = SchemaRegistryClient({"url": registry.url})
        serializer = AvroSerializer(client, json.dumps(SALE))
        context = SerializationContext("bench-avro", MessageField.VALUE)
        fill(bootstrap, "bench-avro", [serializer(v, context) for v in values])
        fill(bootstrap, "bench-json", [json.dumps(v).encode() for v in values])
        sale = sale_class()
        protobuf = ProtobufSerializer(sale, client, {"use.deprecated.format": False})
        context = SerializationContext("bench-proto", MessageField.VALUE)
        present = [{k: v for k, v in value.items() if v is not None} for value in values]
        fill(bootstrap, "bench-proto", [protobuf(sale(**v), context) for v in present])
        avro_id = int(client.get_latest_version("bench-avro-value").schema_id or 0)
        proto_id = int(client.get_latest_version("bench-proto-value").schema_id or 0)
        for name, topic, decode in (
            (
                "registry Avro",
                "bench-avro",
                lambda c: strom.spark.decode_value(
                    c, "avro", registry=registry.url, subject="bench-avro-value"
                ),
            ),
            (
                "registry Avro, JVM",
                "bench-avro",
                lambda c: avro_decode(c, json.dumps(SALE), avro_id, "bench-avro"),
            ),
            (
                "registry Protobuf, JVM",
                "bench-proto",
                lambda c: protobuf_decode(c, SALE_PROTO, proto_id, SALE_DDL, "bench-proto"),
            ),
            ("JSON", "bench-json", lambda c: strom.spark.decode_value(c, "json", SALE_DDL)),
        ):
            raw, decoded = measure(spark, bootstrap, topic, records, decode)
            print(f"  {name}: read {raw:,.0f}/s, read+decode {decoded:,.0f}/s", flush=True)
            rows.append((name, raw, decoded))
    json_rate = rows[-1][2]
    mode = "quick" if args.quick else "full"
    print(f"\n{mode} run, {time.monotonic() - started:.0f} s, Python {sys.version.split()[0]}")
    print("| values | records | read only (records/s) | read + decode (records/s) | vs JSON |")
    print("|---|---|---|---|---|")
    for name, raw, decoded in rows:
        print(f"| {name} | {records:,} | {raw:,.0f} | {decoded:,.0f} | {decoded / json_rate:.2f} |")


if __name__ == "__main__":
    main()
