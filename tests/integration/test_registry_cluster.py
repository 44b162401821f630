"""A registry is its ``_schemas`` topic: it survives restarts, and several instances share it,
one primary (elected through a consumer group) taking the writes the others forward."""

from __future__ import annotations

import json
import time

import httpx

from strom.testing import unique_topic_name
from strom.testing.registry import Registry

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def schema(*fields: str) -> dict[str, str]:
    fields_json = [{"name": f, "type": "int", "default": 0} for f in fields]
    return {"schema": json.dumps({"type": "record", "name": "r", "fields": fields_json})}


def register(url: str, subject: str, body: dict[str, str]) -> int:
    response = httpx.post(f"{url}/subjects/{subject}/versions", json=body, headers=CT, timeout=30)
    assert response.status_code == 200, response.text
    schema_id: int = response.json()["id"]
    return schema_id


def test_state_survives_a_restart(bootstrap: str) -> None:
    topic = unique_topic_name("_schemas")
    with Registry(bootstrap, topic=topic) as first:
        one = register(first.url, "s", schema("a"))
        two = register(first.url, "s", schema("a", "b"))
        httpx.put(f"{first.url}/config/s", json={"compatibility": "FULL"}, headers=CT)
        httpx.delete(f"{first.url}/subjects/s/versions/1")
    with Registry(bootstrap, topic=topic) as again:
        assert httpx.get(f"{again.url}/subjects/s/versions").json() == [2]
        assert httpx.get(f"{again.url}/subjects/s/versions", params={"deleted": "true"}).json() == [
            1,
            2,
        ]
        assert httpx.get(f"{again.url}/config/s").json() == {"compatibilityLevel": "FULL"}
        assert httpx.get(f"{again.url}/schemas/ids/{one}").status_code == 200
        # Ids continue after the replayed ones.
        assert register(again.url, "t", schema("z")) == two + 1


def test_two_instances_one_primary(bootstrap: str) -> None:
    topic, group = unique_topic_name("_schemas"), unique_topic_name("registry")
    with (
        Registry(bootstrap, topic=topic, group_id=group) as first,
        Registry(bootstrap, topic=topic, group_id=group) as second,
    ):
        deadline = time.monotonic() + 30
        while True:  # the second member's join rebalances the group once
            primaries = [httpx.get(f"{r.url}/health").json()["primary"] for r in (first, second)]
            if sorted(primaries) == [False, True]:
                break
            assert time.monotonic() < deadline, f"no single primary: {primaries}"
            time.sleep(0.2)
        secondary = second if primaries[0] else first
        # A write to the secondary is forwarded; both instances read it.
        schema_id = register(secondary.url, "shared", schema("a"))
        for instance in (first, second):
            got = httpx.get(f"{instance.url}/subjects/shared/versions/1").json()
            assert got["id"] == schema_id
        refused = httpx.post(
            f"{secondary.url}/subjects/shared/versions",
            json={
                "schema": json.dumps(
                    {"type": "record", "name": "r", "fields": [{"name": "a", "type": "string"}]}
                )
            },
            headers=CT,
        )
        assert refused.status_code == 409 and refused.json()["error_code"] == 409
        # The primary stops: the other instance takes over the writes.
        primary = first if primaries[0] else second
        primary.stop()
        deadline = time.monotonic() + 30
        while httpx.get(f"{secondary.url}/health").json().get("primary") is not True:
            assert time.monotonic() < deadline, "no new primary"
            time.sleep(0.2)
        assert register(secondary.url, "after", schema("b")) == schema_id + 1
