"""Schema-registry values through Spark: Avro values produced by confluent-kafka's serializer
with two compatible schema versions, decoded by ``strom.spark`` into the latest version,
aggregated, written back registry-encoded and read by confluent-kafka's deserializer; JSON
Schema and Protobuf values decoded into a Spark schema."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from strom_harness import StromServer

import strom.spark
from e2e.spark.clients import Record, consume_all, create_topic, produce
from strom.testing.registry import Registry

SALE_V1 = {
    "type": "record",
    "name": "Sale",
    "fields": [{"name": "shop", "type": "string"}, {"name": "cents", "type": "long"}],
}
SALE_V2 = {
    "type": "record",
    "name": "Sale",
    "fields": [
        {"name": "shop", "type": "string"},
        {"name": "cents", "type": "long"},
        {"name": "coupon", "type": ["null", "string"], "default": None},
    ],
}
TOTAL = {
    "type": "record",
    "name": "ShopTotal",
    "fields": [
        {"name": "shop", "type": "string"},
        {"name": "cents", "type": "long"},
        {"name": "sales", "type": "long"},
    ],
}


@pytest.fixture(scope="module")
def registry(broker: StromServer) -> Iterator[Registry]:
    with Registry(broker.bootstrap) as started:
        yield started


def test_avro_through_spark_and_back(
    spark: SparkSession, broker: StromServer, registry: Registry
) -> None:
    sales, totals = (
        create_topic(broker.bootstrap, "sales"),
        create_topic(broker.bootstrap, "totals"),
    )
    client = SchemaRegistryClient({"url": registry.url})
    context = SerializationContext(sales, MessageField.VALUE)
    old, new = (
        AvroSerializer(client, json.dumps(SALE_V1)),
        AvroSerializer(client, json.dumps(SALE_V2)),
    )
    values = [
        old({"shop": "north", "cents": 100}, context),
        old({"shop": "south", "cents": 250}, context),
        new({"shop": "north", "cents": 50, "coupon": "X1"}, context),
        new({"shop": "north", "cents": 25, "coupon": None}, context),
    ]
    produce(broker.bootstrap, sales, [Record(v) for v in values])
    assert client.get_versions(f"{sales}-value") == [1, 2]

    df = (
        spark.read.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", sales)
        .load()
    )
    sale = strom.spark.decode_value(
        df.value, "avro", registry=registry.url, subject=f"{sales}-value"
    )
    decoded = df.select(sale.alias("sale")).select("sale.*")
    assert sorted(decoded.columns) == ["cents", "coupon", "shop"]  # the reader's (latest) schema
    assert decoded.filter(F.col("coupon") == "X1").count() == 1
    per_shop = decoded.groupBy("shop").agg(
        F.sum("cents").alias("cents"), F.count("*").alias("sales")
    )
    out = per_shop.select(
        strom.spark.encode_value(
            F.struct("shop", "cents", "sales"),
            "avro",
            json.dumps(TOTAL),
            registry=registry.url,
            subject=f"{totals}-value",
        ).alias("value")
    )
    out.write.format("strom").option("kafka.bootstrap.servers", broker.bootstrap).option(
        "topic", totals
    ).mode("append").save()

    reader = AvroDeserializer(client)
    out_context = SerializationContext(totals, MessageField.VALUE)
    got = {
        row["shop"]: (row["cents"], row["sales"])
        for row in (reader(r.value, out_context) for r in consume_all(broker.bootstrap, totals))
    }
    assert got == {"north": (175, 3), "south": (250, 1)}
    assert client.get_latest_version(f"{totals}-value").version == 1


def test_json_schema_values(spark: SparkSession, broker: StromServer, registry: Registry) -> None:
    topic = create_topic(broker.bootstrap, "readings")
    client = SchemaRegistryClient({"url": registry.url})
    context = SerializationContext(topic, MessageField.VALUE)
    reading = {
        "type": "object",
        "properties": {"sensor": {"type": "string"}, "value": {"type": "number"}},
    }
    serializer = JSONSerializer(json.dumps(reading), client)
    values = [serializer({"sensor": s, "value": v}, context) for s, v in (("t1", 1.5), ("t2", 3.0))]
    produce(broker.bootstrap, topic, [Record(v) for v in values])
    df = (
        spark.read.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .load()
    )
    typed = df.select(
        strom.spark.decode_value(
            df.value, "json", "sensor STRING, value DOUBLE", registry=registry.url
        ).alias("r")
    ).select("r.*")
    assert sorted(tuple(row) for row in typed.collect()) == [("t1", 1.5), ("t2", 3.0)]
    text = df.select(strom.spark.decode_value(df.value, "json", registry=registry.url).alias("j"))
    assert sorted(json.loads(row.j)["sensor"] for row in text.collect()) == ["t1", "t2"]


def test_protobuf_values(spark: SparkSession, broker: StromServer, registry: Registry) -> None:
    topic = create_topic(broker.bootstrap, "payments")
    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="pay.proto", package="pay", syntax="proto3")
    header = file.message_type.add(name="Header")  # the second message: indexes [1]
    header.field.add(name="trace", number=1, type=field.TYPE_STRING, label=1)
    payment = file.message_type.add(name="Payment")
    payment.field.add(name="shop_id", number=1, type=field.TYPE_STRING, label=1)
    payment.field.add(name="cents", number=2, type=field.TYPE_INT64, label=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    Payment = message_factory.GetMessageClass(pool.FindMessageTypeByName("pay.Payment"))
    client = SchemaRegistryClient({"url": registry.url})
    serializer = ProtobufSerializer(Payment, client, {"use.deprecated.format": False})
    context = SerializationContext(topic, MessageField.VALUE)
    values = [serializer(Payment(shop_id=s, cents=c), context) for s, c in (("n", 5), ("s", 7))]
    produce(broker.bootstrap, topic, [Record(v) for v in values])
    df = (
        spark.read.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .load()
    )
    typed = df.select(
        strom.spark.decode_value(
            df.value, "protobuf", "shop_id STRING, cents BIGINT", registry=registry.url
        ).alias("p")
    ).select("p.*")
    assert sorted(tuple(row) for row in typed.collect()) == [("n", 5), ("s", 7)]
