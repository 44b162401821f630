"""The subject/version state machine: commands plan records, applying them changes the state,
and refused requests raise Confluent's error codes and plan nothing."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest

from strom.registry.commands import SchemaRequest, Writes
from strom.registry.errors import RegistryError
from strom.registry.records import Record
from strom.registry.state import Mode, RegistryState


def record_schema(*fields: str) -> str:
    return json.dumps(
        {"type": "record", "name": "r", "fields": [{"name": f, "type": "int"} for f in fields]}
    )


def request(*fields: str, **extra: object) -> SchemaRequest:
    return SchemaRequest.from_json({"schema": record_schema(*fields), **extra})


def apply(state: RegistryState, records: Iterable[Record]) -> None:
    for record in records:
        key, value = record.encode()
        decoded = Record.decode(key, value)
        assert decoded is not None
        state.apply(decoded)


def register(state: RegistryState, subject: str, req: SchemaRequest) -> int:
    registration = Writes(state).register(subject, req, normalize=False)
    apply(state, registration.records)
    return registration.id


def code(error: pytest.ExceptionInfo[RegistryError]) -> int:
    return error.value.error_code


def test_register_reuses_ids_and_numbers_versions() -> None:
    state = RegistryState()
    first = register(state, "a", request("x"))
    assert register(state, "a", request("x")) == first  # already there: no record
    assert Writes(state).register("a", request("x"), normalize=False).records == ()
    assert register(state, "b", request("x")) == first  # same schema, other subject
    second = register(state, "a", SchemaRequest.from_json({"schema": record_schema()}))
    assert second == first + 1
    assert [v.version for v in state.versions("a")] == [1, 2]
    assert state.version("a", "latest").schema.id == second
    assert sorted(v.subject for v in state.uses(first)) == ["a", "b"]


def test_incompatible_schema_is_refused() -> None:
    state = RegistryState()
    register(state, "a", request("x"))
    with pytest.raises(RegistryError) as error:
        Writes(state).register("a", request("x", "y"), normalize=False)
    assert code(error) == 409 and error.value.status == 409
    assert [v.version for v in state.versions("a")] == [1]


def test_soft_then_hard_delete() -> None:
    state = RegistryState()
    schema_id = register(state, "a", request("x"))
    writes = Writes(state)
    with pytest.raises(RegistryError) as error:
        writes.delete_subject("a", permanent=True)
    assert code(error) == 40405
    versions, records = writes.delete_subject("a", permanent=False)
    apply(state, records)
    assert versions == [1] and state.subject_names() == []
    assert state.subject_names(deleted=True) == ["a"]
    with pytest.raises(RegistryError) as error:
        writes.delete_subject("a", permanent=False)
    assert code(error) == 40404
    assert state.schema(schema_id).id == schema_id  # soft-deleted versions keep ids found
    apply(state, writes.delete_subject("a", permanent=True)[1])
    with pytest.raises(RegistryError) as error:
        state.schema(schema_id)
    assert code(error) == 40403
    assert register(state, "a", request("y")) == schema_id + 1  # ids are never reused


def test_version_errors() -> None:
    state = RegistryState()
    register(state, "a", request("x"))
    for version, expected in (("0", 42202), ("x", 42202), ("2", 40402)):
        with pytest.raises(RegistryError) as error:
            state.version("a", version)
        assert code(error) == expected
    with pytest.raises(RegistryError) as error:
        state.version("missing", "1")
    assert code(error) == 40401


def test_references_must_exist_and_block_deletes() -> None:
    state = RegistryState()
    address = json.dumps({"type": "record", "name": "Address", "fields": []})
    register(state, "address", SchemaRequest.from_json({"schema": address}))
    user = json.dumps(
        {"type": "record", "name": "User", "fields": [{"name": "a", "type": "Address"}]}
    )
    refs = [{"name": "Address", "subject": "address", "version": 1}]
    missing = [{"name": "Address", "subject": "nope", "version": 1}]
    with pytest.raises(RegistryError) as error:
        register(state, "user", SchemaRequest.from_json({"schema": user, "references": missing}))
    assert code(error) == 42201
    user_id = register(state, "user", SchemaRequest.from_json({"schema": user, "references": refs}))
    assert state.referenced_by("address", 1) == [user_id]
    with pytest.raises(RegistryError) as error:
        Writes(state).delete_version("address", "1", permanent=False)
    assert code(error) == 42206


def test_config_and_modes() -> None:
    state = RegistryState()
    writes = Writes(state)
    with pytest.raises(RegistryError) as error:
        writes.set_compatibility(None, {"compatibility": "SIDEWAYS"})
    assert code(error) == 42203
    apply(state, [writes.set_compatibility("a", {"compatibility": "none"})[1]])
    register(state, "a", request("x"))
    register(state, "a", request("x", "y"))  # NONE: anything goes
    with pytest.raises(RegistryError) as error:
        writes.set_mode(None, {"mode": "IMPORT"}, force=False)
    assert code(error) == 42205
    apply(state, [writes.set_mode("a", {"mode": "READONLY"}, force=False)[1]])
    with pytest.raises(RegistryError) as error:
        writes.register("a", request("z"), normalize=False)
    assert code(error) == 42205
    apply(state, [writes.set_mode("b", {"mode": "IMPORT"}, force=False)[1]])
    assert register(state, "b", request("q", id=100, version=5)) == 100
    assert state.version("b", "5").schema.id == 100
    assert state.next_id == 101


def test_bad_bodies() -> None:
    for body, expected in (
        ({}, 42201),
        ({"schema": "{}", "schemaType": "XML"}, 42201),
        ({"schema": "x", "references": [{"name": 1}]}, 422),
        ([], 422),
    ):
        with pytest.raises(RegistryError) as error:
            SchemaRequest.from_json(body)
        assert code(error) == expected


def test_unknown_records_are_skipped() -> None:
    state = RegistryState()
    assert Record.decode(b"not json", b"{}") is None
    assert Record.decode(b'{"keytype": "OTHER"}', b"{}") is None
    bad = Record.decode(b'{"keytype": "SCHEMA", "subject": "a", "version": 1}', b'{"id": "x"}')
    assert bad is not None
    state.apply(bad)
    assert state.subjects == {}


def test_avro_defaults_are_checked_only_when_asked_and_only_for_new_schemas() -> None:
    bad = json.dumps(
        {"type": "record", "name": "r", "fields": [{"name": "a", "type": "int", "default": None}]}
    )
    lenient = (
        RegistryState()
    )  # Confluent 7.x's default: schema.providers.avro.validate.defaults=false
    assert register(lenient, "s", SchemaRequest.from_json({"schema": bad})) == 1
    strict = RegistryState(validate_defaults=True)
    with pytest.raises(RegistryError) as refused:
        Writes(strict).register("s", SchemaRequest.from_json({"schema": bad}), normalize=False)
    assert code(refused) == 42201 and "Invalid default for field r.a" in refused.value.message
    with pytest.raises(RegistryError) as refused:
        Writes(strict).check("s", None, SchemaRequest.from_json({"schema": bad}), normalize=False)
    assert code(refused) == 42201
    # not new: an import with its id (a schema that exists elsewhere), and a lookup
    strict.modes[None] = Mode.IMPORT
    assert register(strict, "s", SchemaRequest.from_json({"schema": bad, "id": 7})) == 7
    strict.modes[None] = Mode.READWRITE
    found = Writes(strict).lookup(
        "s", SchemaRequest.from_json({"schema": bad}), normalize=False, deleted=False
    )
    assert found.version == 1
