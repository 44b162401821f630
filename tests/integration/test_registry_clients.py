"""confluent-kafka's SchemaRegistryClient and its Avro, JSON Schema and Protobuf serializers,
unchanged, against the registry on a real ``strom server``: register, evolve (a compatible and
an incompatible change), produce and consume through strom."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from confluent_kafka.schema_registry import (
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from strom.registry.codec import RegistryCodec
from strom.testing import unique_topic_name
from strom.testing.registry import Registry

V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}]}
V2 = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "note", "type": "string", "default": ""},
    ],
}
BAD = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}


def round_trip(bootstrap: str, values: list[bytes | None]) -> list[bytes]:
    """Produce values to a new topic through strom and read them back."""
    topic = unique_topic_name("registry")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    read: list[bytes] = []
    while len(read) < len(values):
        message = consumer.poll(10)
        assert message is not None, "nothing to read"
        assert not message.error(), message.error()
        read.append(message.value() or b"")
    consumer.close()
    return read


@pytest.fixture
def client(registry: Registry) -> SchemaRegistryClient:
    result: SchemaRegistryClient = registry.client()
    return result


def test_client_endpoints(client: SchemaRegistryClient) -> None:
    first = client.register_schema("orders-value", Schema(json.dumps(V1), "AVRO"))
    assert client.register_schema("orders-value", Schema(json.dumps(V1), "AVRO")) == first
    second = client.register_schema("orders-value", Schema(json.dumps(V2), "AVRO"))
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("orders-value", Schema(json.dumps(BAD), "AVRO"))
    assert refused.value.http_status_code == 409
    assert client.get_subjects() == ["orders-value"]
    assert client.get_versions("orders-value") == [1, 2]
    latest = client.get_latest_version("orders-value")
    assert (latest.schema_id, latest.version) == (second, 2)
    assert json.loads(client.get_schema(first).schema_str or "") == V1
    assert client.get_version("orders-value", 1).schema_id == first
    found = client.lookup_schema("orders-value", Schema(json.dumps(V1), "AVRO"))
    assert found.version == 1
    assert client.test_compatibility("orders-value", Schema(json.dumps(BAD), "AVRO")) is False
    assert client.get_compatibility() == "BACKWARD"
    answer: Any = client.set_compatibility("orders-value", "FULL")  # the body, as it is
    assert answer == {"compatibility": "FULL"}
    assert client.get_compatibility("orders-value") == "FULL"
    assert client.get_schema_types() == ["AVRO", "JSON", "PROTOBUF"]
    assert client.get_subjects_by_schema_id(first) == ["orders-value"]
    assert client.update_mode("orders-value", "READONLY") == "READONLY"
    assert client.get_mode("orders-value") == "READONLY"
    assert client.delete_mode("orders-value") == "READONLY"
    assert client.delete_version("orders-value", 1) == 1
    assert client.delete_subject("orders-value") == [2]
    assert client.delete_subject("orders-value", permanent=True) == [1, 2]
    with pytest.raises(SchemaRegistryError) as missing:
        client.get_versions("orders-value")
    assert missing.value.error_code == 40401


def test_avro_serializers_through_strom(bootstrap: str, client: SchemaRegistryClient) -> None:
    context = SerializationContext("orders", MessageField.VALUE)
    old = AvroSerializer(client, json.dumps(V1))
    new = AvroSerializer(client, json.dumps(V2))
    values = [old({"id": 1}, context), new({"id": 2, "note": "n"}, context)]
    with pytest.raises(SchemaRegistryError) as refused:
        AvroSerializer(client, json.dumps(BAD))({"id": "x"}, context)
    assert refused.value.http_status_code == 409
    assert client.get_versions("orders-value") == [1, 2]
    read = round_trip(bootstrap, values)
    assert read[0][0] == 0 and read[0][1:5] != read[1][1:5]  # magic byte, two schema ids
    # A reader on the latest schema reads both versions' records.
    reader = AvroDeserializer(client, json.dumps(V2))
    assert [reader(value, context) for value in read] == [
        {"id": 1, "note": ""},
        {"id": 2, "note": "n"},
    ]
    assert AvroDeserializer(client)(read[0], context) == {"id": 1}


def test_record_name_strategy(client: SchemaRegistryClient) -> None:
    """The serializers' other subject name strategies need nothing of the registry: the
    subject is the record's full name (or the topic and the record's name)."""
    context = SerializationContext("any-topic", MessageField.VALUE)
    for strategy, subject in (
        (record_subject_name_strategy, "Order"),
        (topic_record_subject_name_strategy, "any-topic-Order"),
    ):
        serializer = AvroSerializer(
            client, json.dumps(V1), conf={"subject.name.strategy": strategy}
        )
        serializer({"id": 1}, context)
        assert client.get_latest_version(subject).version == 1


def test_json_serializer_through_strom(bootstrap: str, client: SchemaRegistryClient) -> None:
    schema: dict[str, Any] = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Reading",
        "type": "object",
        "properties": {"sensor": {"type": "string"}, "value": {"type": "number"}},
        "additionalProperties": False,
    }
    context = SerializationContext("readings", MessageField.VALUE)
    serializer = JSONSerializer(json.dumps(schema), client)
    read = round_trip(bootstrap, [serializer({"sensor": "t1", "value": 1.5}, context)])
    assert JSONDeserializer(json.dumps(schema))(read[0], context) == {"sensor": "t1", "value": 1.5}
    assert client.get_latest_version("readings-value").schema.schema_type == "JSON"
    # Adding an optional property to the closed model is backward compatible.
    evolved = {**schema, "properties": {**schema["properties"], "unit": {"type": "string"}}}
    assert client.test_compatibility("readings-value", Schema(json.dumps(evolved), "JSON"))
    opened = {**schema, "additionalProperties": True, "required": ["unit"]}
    assert not client.test_compatibility("readings-value", Schema(json.dumps(opened), "JSON"))


def _message_class(package: str, fields: list[tuple[str, int, int]]) -> Any:
    """A generated-at-run-time Protobuf message class (what protoc's _pb2 modules hold)."""
    file = descriptor_pb2.FileDescriptorProto(name=f"{package}.proto", package=package)
    file.syntax = "proto3"
    message = file.message_type.add(name="Payment")
    for name, number, kind in fields:
        message.field.add(name=name, number=number, type=kind, label=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.Payment"))


def test_protobuf_serializer_through_strom(bootstrap: str, client: SchemaRegistryClient) -> None:
    field = descriptor_pb2.FieldDescriptorProto
    payment = _message_class("shop", [("id", 1, field.TYPE_STRING), ("cents", 2, field.TYPE_INT64)])
    context = SerializationContext("payments", MessageField.VALUE)
    serializer = ProtobufSerializer(payment, client, {"use.deprecated.format": False})
    read = round_trip(bootstrap, [serializer(payment(id="p1", cents=250), context)])
    decoded = ProtobufDeserializer(payment, {"use.deprecated.format": False})(read[0], context)
    assert (decoded.id, decoded.cents) == ("p1", 250)
    assert client.get_latest_version("payments-value").schema.schema_type == "PROTOBUF"
    changed = _message_class("shop", [("id", 1, field.TYPE_INT32)])
    with pytest.raises(SchemaRegistryError) as refused:
        ProtobufSerializer(changed, client, {"use.deprecated.format": False})(
            changed(id=1), context
        )
    assert refused.value.http_status_code == 409


CUSTOMER: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "number"}},
    "required": ["name"],
}


def test_json_schema_references(
    bootstrap: str, registry: Registry, client: SchemaRegistryClient
) -> None:
    """A ``$ref`` naming a reference reaches the referenced subject's schema, in the
    serializer's validation and in the registry's compatibility checks."""
    client.set_compatibility("customer", "NONE")
    client.register_schema("customer", Schema(json.dumps(CUSTOMER), "JSON"))
    order = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"id": {"type": "integer"}, "buyer": {"$ref": "customer.json"}},
        "additionalProperties": False,
    }
    v1 = [SchemaReference("customer.json", "customer", 1)]
    schema = Schema(json.dumps(order), "JSON", v1)
    context = SerializationContext("orders", MessageField.VALUE)
    serializer = JSONSerializer(schema, client)
    value = {"id": 1, "buyer": {"name": "ann", "age": 41.5}}
    read = round_trip(bootstrap, [serializer(value, context)])
    assert JSONDeserializer(schema, schema_registry_client=client)(read[0], context) == value
    with pytest.raises(SerializationError):  # the referenced schema requires a name
        serializer({"id": 2, "buyer": {"age": 3}}, context)
    registered = client.get_latest_version("orders-value")
    schema_id = registered.schema_id
    assert schema_id is not None
    codec = RegistryCodec(registry.url)  # strom's own client side (CLI, Spark)
    assert codec.decode(codec.encode(schema_id, value)) == value
    with pytest.raises(jsonschema.ValidationError, match="'name' is a required property"):
        codec.encode(schema_id, {"id": 2, "buyer": {"age": 3}})
    assert [(r.name, r.subject, r.version) for r in registered.schema.references or ()] == [
        ("customer.json", "customer", 1)
    ]
    # customer v2 narrows age to integers: orders reading through it cannot read v1's data
    narrowed = {**CUSTOMER, "properties": {**CUSTOMER["properties"], "age": {"type": "integer"}}}
    client.register_schema("customer", Schema(json.dumps(narrowed), "JSON"))
    v2 = [SchemaReference("customer.json", "customer", 2)]
    assert not client.test_compatibility("orders-value", Schema(json.dumps(order), "JSON", v2))
    assert client.test_compatibility("orders-value", Schema(json.dumps(order), "JSON", v1))
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("orders-value", Schema(json.dumps(order), "JSON", v2))
    assert refused.value.error_code == 409
