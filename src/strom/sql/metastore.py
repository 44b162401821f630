"""What the server knows of each stream and table (ksqlDB's `MetaStore` and `DataSource`): its
topic, formats and columns, read from a `CREATE` statement's columns and `WITH` properties, or
from the query of a `CREATE ... AS SELECT`. Pure: the planner and the REST answers read it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from strom.sql import expressions as ex
from strom.sql import statements as st
from strom.sql import types as ty
from strom.sql.analyzer import Column, OutputColumn, SourceSchema
from strom.sql.errors import SqlSemanticError
from strom.sql.registry_schemas import REGISTRY_FORMATS

__all__ = ["FORMATS", "DataSource", "Infer", "declared_source", "derived_source", "properties"]

FORMATS = frozenset({"JSON", "DELIMITED", "KAFKA", "NONE"}) | REGISTRY_FORMATS
"""The key and value formats the planner reads and writes."""

Infer = Callable[[str, str, int | None, str | None], tuple[tuple[Column, ...], int]]
"""The columns (and schema id) of a registry format's subject, or of a given schema id:
`infer(format, subject, schema_id, full_name)`; the engine's registry look-up."""


@dataclass(frozen=True)
class DataSource:
    """A declared or derived stream or table."""

    name: str
    kind: st.SourceKind
    topic: str
    key_format: str
    value_format: str
    columns: tuple[Column, ...]
    partitions: int | None = None
    replicas: int | None = None
    window_type: st.WindowKind | None = None
    """The window of a windowed table's (or stream's) keys, else None."""
    statement: str = ""
    key_schema_id: int | None = None
    value_schema_id: int | None = None
    """The registry's id of the schema records are written with (registry formats only)."""
    value_schema: str | None = None
    """That schema's text, where its records are binary (AVRO, PROTOBUF)."""
    key_schema: str | None = None
    """The key's, likewise."""
    value_schema_name: str | None = None
    """`VALUE_SCHEMA_FULL_NAME`: the AVRO record's or PROTOBUF message's full name."""
    key_schema_name: str | None = None
    """`KEY_SCHEMA_FULL_NAME`, likewise."""
    registry: str | None = None
    """The schema registry's URL, where the AVRO records of other schema ids find theirs."""

    @property
    def windowed(self) -> bool:
        return self.window_type is not None

    @property
    def schema(self) -> SourceSchema:
        return SourceSchema(self.name, self.kind, self.columns, self.windowed)

    @property
    def keys(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.key)

    @property
    def values(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if not c.key)


def properties(props: tuple[st.Property, ...]) -> dict[str, object]:
    """`WITH (...)` as names to Python values (strings, numbers, booleans)."""
    out: dict[str, object] = {}
    for p in props:
        match p.value:
            case ex.StringLiteral(v) | ex.IntegerLiteral(v) | ex.BooleanLiteral(v):
                out[p.name] = v
            case ex.DoubleLiteral(v):
                out[p.name] = v
            case ex.DecimalLiteral(v):
                out[p.name] = float(v)
            case _:
                out[p.name] = None
    return out


def _int(props: Mapping[str, object], name: str) -> int | None:
    value = props.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SqlSemanticError(f"Invalid value for '{name}': {value!r} (a positive integer).")
    return value


def _formats(props: Mapping[str, object], default_key: str = "KAFKA") -> tuple[str, str]:
    both = props.get("FORMAT")
    key = props.get("KEY_FORMAT", both or default_key)
    value = props.get("VALUE_FORMAT", both)
    if value is None:
        raise SqlSemanticError(
            "Statement is missing the 'VALUE_FORMAT' property from the WITH clause. Either "
            "provide one or set a default via the 'ksql.persistence.default.format.value' config."
        )
    out = []
    for which, fmt in (("KEY_FORMAT", key), ("VALUE_FORMAT", value)):
        name = str(fmt).upper()
        if name not in FORMATS:
            raise SqlSemanticError(
                f"Unsupported {which}: {name} (strom's SQL reads and writes "
                f"{', '.join(sorted(FORMATS))})."
            )
        out.append(name)
    return out[0], out[1]


_NAMED_FORMATS = ("AVRO", "PROTOBUF")
"""The formats whose schema has a full name (`*_SCHEMA_FULL_NAME`)."""


def _schema_names(
    props: Mapping[str, object], key_format: str, value_format: str
) -> tuple[str | None, str | None]:
    """`KEY_SCHEMA_FULL_NAME` and `VALUE_SCHEMA_FULL_NAME`."""
    out: list[str | None] = []
    for which, fmt in (("KEY", key_format), ("VALUE", value_format)):
        name = props.get(f"{which}_SCHEMA_FULL_NAME")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise SqlSemanticError(f"Invalid value for '{which}_SCHEMA_FULL_NAME': {name!r}.")
        if name is not None and fmt not in _NAMED_FORMATS:
            raise SqlSemanticError(
                f"{which}_SCHEMA_FULL_NAME is only supported for the AVRO and PROTOBUF "
                f"formats; the {which.lower()} format is {fmt}."
            )
        out.append(name.strip() if isinstance(name, str) else None)
    return out[0], out[1]


def _check_key_format(name: str, key_format: str, keys: tuple[Column, ...]) -> None:
    if key_format == "NONE" and keys:
        raise SqlSemanticError(f"Key format NONE cannot hold the key columns of {name}.")
    if key_format == "KAFKA" and len(keys) > 1:
        raise SqlSemanticError(
            "The 'KAFKA' format only supports a single field. Got: "
            + ", ".join(f"`{c.name}` {c.type}" for c in keys)
        )


def declared_source(s: st.CreateSource, infer: Infer | None = None) -> DataSource:
    """The source a `CREATE STREAM|TABLE (columns) WITH (...)` declares; without value
    columns, a registry format's are inferred from the registry (`infer`): the latest schema
    of `<topic>-value`, or `VALUE_SCHEMA_ID`'s."""
    props = properties(s.properties)
    topic = props.get("KAFKA_TOPIC")
    if not isinstance(topic, str):
        raise SqlSemanticError(
            'Missing required property "KAFKA_TOPIC" which has no default value.'
        )
    key_format, value_format = _formats(props)
    key_name, value_name = _schema_names(props, key_format, value_format)
    schema_id = _int(props, "VALUE_SCHEMA_ID")
    inferred: tuple[Column, ...] = ()
    if value_format in REGISTRY_FORMATS and infer is not None:
        if not any(e.constraint is None for e in s.elements):
            inferred, schema_id = infer(value_format, f"{topic}-value", schema_id, value_name)
    elif not s.elements:
        raise SqlSemanticError(
            f"The statement does not define any columns. Schema inference needs a registry "
            f"VALUE_FORMAT ({', '.join(sorted(REGISTRY_FORMATS))}): {s.name}"
        )
    key_constraint = (
        st.ColumnConstraint.KEY
        if s.kind is st.SourceKind.STREAM
        else st.ColumnConstraint.PRIMARY_KEY
    )
    columns = []
    for e in s.elements:
        if e.constraint in (st.ColumnConstraint.HEADERS, st.ColumnConstraint.HEADER):
            raise SqlSemanticError(f"Header columns are not supported yet: {e.name}")
        if e.constraint is not None and e.constraint is not key_constraint:
            word = "PRIMARY KEY" if s.kind is st.SourceKind.TABLE else "KEY"
            raise SqlSemanticError(
                f"Column `{e.name}` is a '{e.constraint.value}' column: please use "
                f"'{word}' for a {s.kind.value.lower()}."
            )
        columns.append(Column(e.name, e.type, key=e.constraint is key_constraint))
    if s.kind is st.SourceKind.TABLE and not any(c.key for c in columns):
        raise SqlSemanticError(
            f"Tables require a PRIMARY KEY. Please define the PRIMARY KEY. Table: {s.name}"
        )
    columns += inferred
    source = DataSource(
        s.name,
        s.kind,
        topic,
        key_format,
        value_format,
        tuple(columns),
        partitions=_int(props, "PARTITIONS"),
        replicas=_int(props, "REPLICAS"),
        statement=s.text,
        key_schema_id=_int(props, "KEY_SCHEMA_ID"),
        value_schema_id=schema_id,
        key_schema_name=key_name,
        value_schema_name=value_name,
    )
    _check_key_format(s.name, key_format, source.keys)
    return source


def derived_source(
    s: st.CreateAsSelect,
    output: tuple[OutputColumn, ...],
    source: DataSource,
    window_type: st.WindowKind | None,
) -> DataSource:
    """The sink of a `CREATE STREAM|TABLE ... AS SELECT`: its topic (default: the name), formats
    (default: those of the source it reads), the query's columns and its window, if any."""
    props = properties(s.properties)
    topic = props.get("KAFKA_TOPIC", s.name)
    key_format, value_format = _formats(
        {"KEY_FORMAT": source.key_format, "VALUE_FORMAT": source.value_format, **props}
    )
    key_name, value_name = _schema_names(props, key_format, value_format)
    columns = tuple(Column(c.name, c.type or ty.STRING, c.key) for c in output)
    sink = DataSource(
        s.name,
        s.kind,
        str(topic),
        key_format,
        value_format,
        columns,
        partitions=_int(props, "PARTITIONS"),
        replicas=_int(props, "REPLICAS"),
        window_type=window_type,
        statement=s.text,
        key_schema_name=key_name,
        value_schema_name=value_name,
    )
    _check_key_format(s.name, key_format, sink.keys)
    return sink
