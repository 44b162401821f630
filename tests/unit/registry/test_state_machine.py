"""The subject/version state machine against a simple model (hypothesis stateful): random
registrations and soft and hard deletes; after each step the state matches the model, ids
are stable, and replaying the records written so far, or only what compaction keeps of them
(the last record of each key, tombstones dropped), rebuilds the same state."""

from __future__ import annotations

import json

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from strom.registry.commands import SchemaRequest, Writes
from strom.registry.compatibility import CompatibilityLevel
from strom.registry.errors import RegistryError
from strom.registry.records import Record
from strom.registry.state import RegistryState

SUBJECTS = st.sampled_from(["a", "b", "c"])
SCHEMAS = st.integers(0, 4)


def schema_text(n: int) -> str:
    return json.dumps({"type": "record", "name": "r", "fields": [{"name": f"f{n}", "type": "int"}]})


def snapshot(state: RegistryState) -> dict[str, list[tuple[int, int, bool]]]:
    return {
        subject: [(v.version, v.schema.id, v.deleted) for _, v in sorted(versions.items())]
        for subject, versions in state.subjects.items()
    }


class RegistryMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.state = RegistryState(default_compatibility=CompatibilityLevel.NONE)
        self.log: list[Record] = []
        self.model: dict[str, dict[int, tuple[int, bool]]] = {}
        """subject -> version -> (schema number, soft-deleted)"""
        self.ids: dict[int, int] = {}
        """schema number -> the id it got first"""

    def _apply(self, records: tuple[Record, ...] | list[Record]) -> None:
        for record in records:
            key, value = record.encode()
            decoded = Record.decode(key, value)
            assert decoded is not None
            self.state.apply(decoded)
            self.log.append(decoded)

    @rule(subject=SUBJECTS, n=SCHEMAS)
    def register(self, subject: str, n: int) -> None:
        registration = Writes(self.state).register(
            subject, SchemaRequest.from_json({"schema": schema_text(n)}), normalize=False
        )
        self._apply(registration.records)
        assert self.ids.setdefault(n, registration.id) == registration.id
        versions = self.model.setdefault(subject, {})
        live = [v for v, (m, deleted) in versions.items() if m == n and not deleted]
        assert bool(live) == (not registration.records)
        if registration.records:
            versions[max(versions, default=0) + 1] = (n, False)

    @rule(subject=SUBJECTS, permanent=st.booleans())
    def delete_subject(self, subject: str, permanent: bool) -> None:
        versions = self.model.get(subject, {})
        try:
            deleted, records = Writes(self.state).delete_subject(subject, permanent=permanent)
        except RegistryError as error:
            expected = 40401 if not versions else 40405 if permanent else 40404
            assert error.error_code == expected
            return
        self._apply(records)
        if permanent:
            assert all(d for _, d in versions.values())
            self.model.pop(subject)
        else:
            assert deleted == sorted(v for v, (_, d) in versions.items() if not d)
            for version in deleted:
                versions[version] = (versions[version][0], True)

    @rule(subject=SUBJECTS, version=st.integers(1, 4), permanent=st.booleans())
    def delete_version(self, subject: str, version: int, permanent: bool) -> None:
        versions = self.model.get(subject, {})
        try:
            number, records = Writes(self.state).delete_version(
                subject, str(version), permanent=permanent
            )
        except RegistryError as error:
            assert error.error_code in (40401, 40402, 40406, 40407)
            return
        self._apply(records)
        assert number == version
        if permanent:
            del versions[version]
            if not versions:
                self.model.pop(subject)
        else:
            versions[version] = (versions[version][0], True)

    @invariant()
    def matches_the_model(self) -> None:
        expected = {
            subject: [(v, self.ids[n], d) for v, (n, d) in sorted(versions.items())]
            for subject, versions in self.model.items()
        }
        assert snapshot(self.state) == expected

    @invariant()
    def replay_and_compaction_rebuild_it(self) -> None:
        replayed = RegistryState()
        for record in self.log:
            replayed.apply(record)
        assert snapshot(replayed) == snapshot(self.state)
        last: dict[str, Record] = {}
        for record in self.log:
            key = record.encode()[0].decode()
            last.pop(key, None)
            last[key] = record
        compacted = RegistryState()
        for record in last.values():
            if record.value is not None:
                compacted.apply(record)
        assert snapshot(compacted) == snapshot(self.state)


TestRegistryMachine = RegistryMachine.TestCase
TestRegistryMachine.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
