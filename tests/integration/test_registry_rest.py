"""Conformance of the REST API with raw HTTP: paths, bodies, status codes, Confluent's error
codes and content type, against a registry on a real ``strom server``. Refused requests change
nothing."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from google.protobuf import descriptor_pb2

from strom.testing.registry import Registry

CT = "application/vnd.schemaregistry.v1+json"


def record(*fields: str, name: str = "r") -> str:
    fields_json = [{"name": f, "type": "int"} for f in fields]
    return json.dumps(
        {"type": "record", "name": name, "fields": fields_json}, separators=(",", ":")
    )


class Api:
    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, headers={"Content-Type": CT}, timeout=30)

    def call(self, method: str, path: str, body: Any = None, **params: Any) -> httpx.Response:
        content = None if body is None else json.dumps(body)
        return self.http.request(method, path, content=content, params=params)

    def ok(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        response = self.call(method, path, body, **params)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == CT
        return response.json()

    def fails(
        self, status: int, code: int, method: str, path: str, body: Any = None, **params: Any
    ) -> str:
        response = self.call(method, path, body, **params)
        assert response.status_code == status, response.text
        assert response.json()["error_code"] == code, response.text
        message: str = response.json()["message"]
        return message


@pytest.fixture
def api(registry: Registry) -> Api:
    return Api(registry.url)


def test_register_and_read(api: Api) -> None:
    assert api.ok("GET", "/subjects") == []
    assert sorted(api.ok("GET", "/schemas/types")) == ["AVRO", "JSON", "PROTOBUF"]
    first = api.ok("POST", "/subjects/orders-value/versions", {"schema": record("a")})["id"]
    # Whitespace does not make another schema; a second subject shares the id.
    again = {"schema": json.dumps(json.loads(record("a")), indent=2)}
    assert api.ok("POST", "/subjects/orders-value/versions", again) == {"id": first}
    assert api.ok("POST", "/subjects/other/versions", again) == {"id": first}
    second = api.ok(
        "POST",
        "/subjects/orders-value/versions",
        {
            "schema": json.dumps(
                {
                    "type": "record",
                    "name": "r",
                    "fields": [
                        {"name": "a", "type": "int"},
                        {"name": "b", "type": "int", "default": 0},
                    ],
                }
            )
        },
    )["id"]
    assert second == first + 1
    assert api.ok("GET", "/subjects") == ["orders-value", "other"]
    assert api.ok("GET", "/subjects", subjectPrefix="ord") == ["orders-value"]
    assert api.ok("GET", "/subjects/orders-value/versions") == [1, 2]
    latest = api.ok("GET", "/subjects/orders-value/versions/latest")
    assert latest["version"] == 2 and latest["id"] == second and "schemaType" not in latest
    assert api.ok("GET", "/subjects/orders-value/versions/-1") == latest
    assert api.call("GET", "/subjects/orders-value/versions/1/schema").text == record("a")
    assert api.call("GET", f"/schemas/ids/{first}/schema").text == record("a")
    assert api.ok("GET", f"/schemas/ids/{first}") == {"schema": record("a")}
    assert api.ok("GET", f"/schemas/ids/{first}/subjects") == ["orders-value", "other"]
    assert api.ok("GET", f"/schemas/ids/{first}/versions") == [
        {"subject": "orders-value", "version": 1},
        {"subject": "other", "version": 1},
    ]
    found = api.ok("POST", "/subjects/orders-value", {"schema": record("a")})
    assert found == {"subject": "orders-value", "version": 1, "id": first, "schema": record("a")}
    assert api.ok("GET", "/subjects/orders-value/versions/1/referencedby") == []


def test_errors(api: Api) -> None:
    api.ok("POST", "/subjects/s/versions", {"schema": record("a")})
    api.fails(404, 40401, "GET", "/subjects/missing/versions")
    api.fails(404, 40401, "GET", "/subjects/missing/versions/1")
    api.fails(404, 40402, "GET", "/subjects/s/versions/9")
    api.fails(422, 42202, "GET", "/subjects/s/versions/zero")
    api.fails(422, 42202, "GET", "/subjects/s/versions/0")
    api.fails(404, 40403, "GET", "/schemas/ids/999")
    api.fails(404, 40403, "POST", "/subjects/s", {"schema": record("b")})
    api.fails(404, 40401, "POST", "/subjects/missing", {"schema": record("a")})
    api.fails(422, 42201, "POST", "/subjects/s/versions", {"schema": "{not json"})
    api.fails(422, 42201, "POST", "/subjects/s/versions", {"schema": "{}", "schemaType": "XML"})
    api.fails(422, 42201, "POST", "/subjects/s/versions", {})
    refs = [{"name": "x.Y", "subject": "absent", "version": 1}]
    api.fails(
        422, 42201, "POST", "/subjects/s/versions", {"schema": record("a"), "references": refs}
    )
    message = api.fails(409, 409, "POST", "/subjects/s/versions", {"schema": record("a", "b")})
    assert message.startswith("Schema being registered is incompatible with an earlier schema")
    api.fails(404, 404, "GET", "/nowhere")
    api.fails(405, 405, "PATCH", "/subjects")
    api.fails(422, 42203, "PUT", "/config", {"compatibility": "SIDEWAYS"})
    api.fails(422, 42204, "PUT", "/mode", {"mode": "WRITEONLY"})
    api.fails(404, 40408, "GET", "/config/s")
    api.fails(404, 40409, "GET", "/mode/s")
    wrong_type = api.http.post(
        "/subjects/s/versions", content=b"schema", headers={"Content-Type": "text/plain"}
    )
    assert wrong_type.status_code == 415 and wrong_type.json()["error_code"] == 415
    malformed = api.http.post("/subjects/s/versions", content=b"{")
    assert malformed.status_code == 400 and malformed.json()["error_code"] == 400
    huge = api.http.post("/subjects/s/versions", content=b" " * (17 << 20))
    assert huge.status_code == 413 and huge.json()["error_code"] == 413
    # None of it changed anything.
    assert api.ok("GET", "/subjects") == ["s"]
    assert api.ok("GET", "/subjects/s/versions") == [1]


def test_delete_soft_and_hard(api: Api) -> None:
    schema_id = api.ok("POST", "/subjects/d/versions", {"schema": record("a")})["id"]
    api.ok("PUT", "/config/d", {"compatibility": "NONE"})
    api.ok("POST", "/subjects/d/versions", {"schema": record("b")})
    api.fails(404, 40407, "DELETE", "/subjects/d/versions/1", permanent="true")
    assert api.ok("DELETE", "/subjects/d/versions/1") == 1
    api.fails(404, 40406, "DELETE", "/subjects/d/versions/1")
    api.fails(404, 40402, "GET", "/subjects/d/versions/1")
    assert api.ok("GET", "/subjects/d/versions/1", deleted="true")["id"] == schema_id
    assert api.ok("GET", "/subjects/d/versions", deleted="true") == [1, 2]
    assert api.ok("DELETE", "/subjects/d/versions/1", permanent="true") == 1
    api.fails(404, 40405, "DELETE", "/subjects/d", permanent="true")
    assert api.ok("DELETE", "/subjects/d") == [2]
    assert api.ok("GET", "/subjects") == []
    assert api.ok("GET", "/subjects", deleted="true") == ["d"]
    api.fails(404, 40404, "DELETE", "/subjects/d")
    assert api.ok("DELETE", "/subjects/d", permanent="true") == [2]
    api.fails(404, 40401, "GET", "/subjects/d/versions", deleted="true")
    api.fails(404, 40403, "GET", f"/schemas/ids/{schema_id}")
    # The same schema registered again keeps its id; an id never goes to another schema.
    assert api.ok("POST", "/subjects/d/versions", {"schema": record("a")})["id"] == schema_id
    assert api.ok("GET", "/subjects/d/versions") == [1]
    assert api.ok("POST", "/subjects/e/versions", {"schema": record("c")})["id"] > schema_id + 1


def test_config_mode_and_compatibility(api: Api) -> None:
    assert api.ok("GET", "/config") == {"compatibilityLevel": "BACKWARD"}
    assert api.ok("PUT", "/config/c", {"compatibility": "FULL"}) == {"compatibility": "FULL"}
    assert api.ok("GET", "/config/c") == {"compatibilityLevel": "FULL"}
    assert api.ok("GET", "/config/x", defaultToGlobal="true") == {"compatibilityLevel": "BACKWARD"}
    api.ok("POST", "/subjects/c/versions", {"schema": record("a")})
    with_default = json.dumps(
        {
            "type": "record",
            "name": "r",
            "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 1}],
        }
    )
    check = api.ok("POST", "/compatibility/subjects/c/versions/latest", {"schema": with_default})
    assert check == {"is_compatible": True}
    verbose = api.ok(
        "POST",
        "/compatibility/subjects/c/versions/1",
        {"schema": record("a", "b")},
        verbose="true",
    )
    assert verbose["is_compatible"] is False and verbose["messages"]
    assert api.ok("POST", "/compatibility/subjects/c/versions", {"schema": with_default}) == {
        "is_compatible": True
    }
    assert api.ok("DELETE", "/config/c") == {"compatibilityLevel": "FULL"}
    api.fails(404, 40408, "GET", "/config/c")
    assert api.ok("GET", "/mode") == {"mode": "READWRITE"}
    assert api.ok("PUT", "/mode/c", {"mode": "READONLY"}) == {"mode": "READONLY"}
    api.fails(422, 42205, "POST", "/subjects/c/versions", {"schema": with_default})
    api.fails(422, 42205, "PUT", "/mode", {"mode": "IMPORT"})
    assert api.ok("DELETE", "/mode/c") == {"mode": "READONLY"}
    # IMPORT keeps the ids and versions it is given.
    assert api.ok("PUT", "/mode/imported", {"mode": "IMPORT"}) == {"mode": "IMPORT"}
    body = {"schema": record("z"), "id": 5000, "version": 7}
    assert api.ok("POST", "/subjects/imported/versions", body) == {"id": 5000}
    assert api.ok("GET", "/subjects/imported/versions/7")["id"] == 5000


def test_json_schema_protobuf_and_references(api: Api) -> None:
    document = {"type": "object", "properties": {"a": {"type": "string"}}}
    json_id = api.ok(
        "POST", "/subjects/j/versions", {"schema": json.dumps(document), "schemaType": "JSON"}
    )["id"]
    assert api.ok("GET", f"/schemas/ids/{json_id}")["schemaType"] == "JSON"
    address = json.dumps({"type": "record", "name": "Address", "namespace": "x", "fields": []})
    api.ok("POST", "/subjects/address/versions", {"schema": address})
    user = json.dumps(
        {
            "type": "record",
            "name": "User",
            "namespace": "x",
            "fields": [{"name": "home", "type": "x.Address"}],
        }
    )
    refs = [{"name": "x.Address", "subject": "address", "version": 1}]
    user_id = api.ok("POST", "/subjects/user/versions", {"schema": user, "references": refs})["id"]
    assert api.ok("GET", f"/schemas/ids/{user_id}")["references"] == refs
    assert api.ok("GET", "/subjects/address/versions/1/referencedby") == [user_id]
    api.fails(422, 42206, "DELETE", "/subjects/address/versions/1")


def test_normalize(api: Api) -> None:
    one = json.dumps({"type": "record", "name": "n", "fields": [{"name": "a", "type": "int"}]})
    other = json.dumps({"fields": [{"type": "int", "name": "a"}], "name": "n", "type": "record"})
    first = api.ok("POST", "/subjects/n/versions", {"schema": one}, normalize="true")["id"]
    assert api.ok("POST", "/subjects/n/versions", {"schema": other}, normalize="true") == {
        "id": first
    }
    assert api.ok("POST", "/subjects/n", {"schema": other}, normalize="true")["version"] == 1
    assert api.ok("GET", "/subjects/n/versions") == [1]


def test_proto_text_schemas(api: Api) -> None:
    money = 'syntax = "proto3";\npackage common;\nmessage Money { int64 cents = 1; }\n'
    order = (
        'syntax = "proto3";\npackage shop;\nimport "common/money.proto";\n'
        "message Order { string id = 1; common.Money total = 2; }\n"
    )
    api.ok("POST", "/subjects/money/versions", {"schema": money, "schemaType": "PROTOBUF"})
    refs = [{"name": "common/money.proto", "subject": "money", "version": 1}]
    body = {"schema": order, "schemaType": "PROTOBUF", "references": refs}
    order_id = api.ok("POST", "/subjects/order/versions", body)["id"]
    served = (  # written from the descriptor, as Confluent serves .proto text
        'syntax = "proto3";\npackage shop;\n\nimport "common/money.proto";\n\n'
        "message Order {\n  string id = 1;\n  .common.Money total = 2;\n}\n"
    )
    assert api.ok("GET", f"/schemas/ids/{order_id}")["schema"] == served
    assert api.call("GET", "/subjects/order/versions/1/schema").text == served
    serialized = api.ok("GET", f"/schemas/ids/{order_id}", format="serialized")["schema"]
    file = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized))
    assert [m.name for m in file.message_type] == ["Order"]
    assert list(file.dependency) == ["common/money.proto"]
    # the descriptor form of the same schema is the same schema: same id, served as text
    as_descriptor = {**body, "schema": serialized}
    assert api.ok("POST", "/subjects/order", as_descriptor)["id"] == order_id
    assert api.ok("POST", "/subjects/order-copy/versions", as_descriptor) == {"id": order_id}
    assert api.ok("GET", "/subjects/order-copy/versions/1")["schema"] == served
    reformatted = {**body, "schema": order.replace("; ", ";\n  // a comment\n  ")}
    assert api.ok("POST", "/subjects/order/versions", reformatted) == {"id": order_id}
    changed = {**body, "schema": order.replace("string id = 1", "int32 id = 1")}
    api.fails(409, 409, "POST", "/subjects/order/versions", changed)
    broken = {**body, "schema": order.replace("common.Money", "common.Nope")}
    api.fails(422, 42201, "POST", "/subjects/order/versions", broken)


def test_avro_defaults_validated_when_asked(bootstrap: str, api: Api) -> None:
    bad = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "int", "default": "x"}]}
    body = {"schema": json.dumps(bad)}
    api.ok("POST", "/subjects/lenient/versions", body)  # Confluent 7.x's default
    with Registry(bootstrap, validate_defaults=True) as strict:
        checked = Api(strict.url)
        message = checked.fails(422, 42201, "POST", "/subjects/strict/versions", body)
        assert 'Invalid default for field r.a: "x" not a "int"' in message
        path = "/compatibility/subjects/strict/versions"
        checked.fails(422, 42201, "POST", path, body)
        assert checked.ok("GET", "/subjects") == []


def test_json_schema_refs_to_references(api: Api) -> None:
    address = {
        "$id": "https://example.com/address.json",
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "additionalProperties": False,
    }
    api.ok(
        "POST", "/subjects/address/versions", {"schema": json.dumps(address), "schemaType": "JSON"}
    )
    person = {
        "$id": "https://example.com/person.json",
        "type": "object",
        "properties": {
            "home": {"$ref": "address.json"},  # a reference's name, resolved from $id's base
            "work": {"$ref": "https://example.com/address.json#/properties/city"},
        },
    }
    refs = [{"name": "address.json", "subject": "address", "version": 1}]
    body = {"schema": json.dumps(person), "schemaType": "JSON", "references": refs}
    api.ok("POST", "/subjects/person/versions", body)
    # a $ref that is neither in the schema nor a reference is an invalid schema
    dangling = {**person, "properties": {"home": {"$ref": "nowhere.json"}}}
    message = api.fails(
        422,
        42201,
        "POST",
        "/subjects/person/versions",
        {"schema": json.dumps(dangling), "schemaType": "JSON", "references": refs},
    )
    assert "nowhere.json" in message
    # reading through the reference: a closed address cannot read an added property's data
    api.ok("PUT", "/config/address", {"compatibility": "NONE"})
    opened = {**address, "additionalProperties": True}
    api.ok(
        "POST", "/subjects/address/versions", {"schema": json.dumps(opened), "schemaType": "JSON"}
    )
    later = [{"name": "address.json", "subject": "address", "version": 2}]
    verdict = api.ok(
        "POST",
        "/compatibility/subjects/person/versions/latest",
        {"schema": json.dumps(person), "schemaType": "JSON", "references": later},
        verbose="true",
    )
    assert verdict["is_compatible"] is True  # the reader opened up: it reads more
    api.ok("POST", "/subjects/person/versions", {**body, "references": later})
    closed_again = api.ok("POST", "/compatibility/subjects/person/versions/latest", body)
    assert closed_again["is_compatible"] is False  # a closed address cannot read open data
    forward = api.ok(
        "POST",
        "/compatibility/subjects/address/versions/1",
        {"schema": json.dumps(opened), "schemaType": "JSON"},
    )
    assert forward["is_compatible"] is True
