"""The JSON bodies of ksqlDB's REST API (its `KsqlEntity` subclasses, `@type` included) and its
error codes, built from the metastore and the queries. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from strom.sql import statements as st
from strom.sql import types as ty
from strom.sql.analyzer import Column, OutputColumn
from strom.sql.formatter import format_type
from strom.sql.functions import FUNCTIONS
from strom.sql.metastore import DataSource

__all__ = [
    "BAD_REQUEST",
    "BAD_STATEMENT",
    "NOT_FOUND",
    "QUERY_ENDPOINT",
    "SERVER_ERROR",
    "current_status",
    "describe_function",
    "function_list",
    "properties",
    "queries",
    "query_description",
    "query_schema",
    "schema",
    "source_description",
    "sources",
    "statement_error",
    "stream_header",
    "topics",
]

# ksqlDB's error codes (its `Errors`): the HTTP status times 100, plus a detail.
BAD_REQUEST = 40000
BAD_STATEMENT = 40001
QUERY_ENDPOINT = 40002
NOT_FOUND = 40400
SERVER_ERROR = 50000

Json = dict[str, Any]


def stream_header(query_id: str, columns: Sequence[OutputColumn]) -> Json:
    """The header of `/query-stream`'s answer."""
    return {
        "queryId": query_id,
        "columnNames": [c.name for c in columns],
        "columnTypes": [format_type(c.type) if c.type else "STRING" for c in columns],
    }


def query_schema(columns: Sequence[OutputColumn]) -> str:
    """The `schema` of `/query`'s header: "`ID` INTEGER KEY, `NAME` STRING"."""
    return ", ".join(
        f"`{c.name}` {format_type(c.type) if c.type else 'STRING'}" + (" KEY" if c.key else "")
        for c in columns
    )


def statement_error(code: int, message: str, text: str, entities: Sequence[Json] = ()) -> Json:
    return {
        "@type": "statement_error",
        "error_code": code,
        "message": message,
        "statementText": text,
        "entities": list(entities),
    }


def current_status(
    text: str, command_id: str, message: str, seq: int, query_id: str | None = None
) -> Json:
    return {
        "@type": "currentStatus",
        "statementText": text,
        "commandId": command_id,
        "commandStatus": {"status": "SUCCESS", "message": message, "queryId": query_id},
        "commandSequenceNumber": seq,
        "warnings": [],
    }


def schema(t: ty.SqlType) -> Json:
    """A type as ksqlDB's `SchemaInfo`: its type name, and struct fields or member type."""
    match t:
        case ty.ArrayType(element):
            return {"type": "ARRAY", "fields": None, "memberSchema": schema(element)}
        case ty.MapType(_, value):
            return {"type": "MAP", "fields": None, "memberSchema": schema(value)}
        case ty.StructType(fields):
            return {
                "type": "STRUCT",
                "fields": [{"name": f.name, "schema": schema(f.type)} for f in fields],
                "memberSchema": None,
            }
        case ty.DecimalType():
            return {
                "type": "DECIMAL",
                "fields": None,
                "memberSchema": None,
                "parameters": {"precision": t.precision, "scale": t.scale},
            }
    return {"type": format_type(t), "fields": None, "memberSchema": None}


def _field(c: Column | OutputColumn) -> Json:
    out: Json = {"name": c.name, "schema": schema(c.type) if c.type is not None else None}
    if c.key:
        out["type"] = "KEY"
    return out


def sources(text: str, kind: st.SourceKind, found: Iterable[DataSource]) -> Json:
    """`SHOW STREAMS` (`streams`) or `SHOW TABLES` (`tables`)."""
    entries = [
        {
            "type": s.kind.value,
            "name": s.name,
            "topic": s.topic,
            "keyFormat": s.key_format,
            "valueFormat": s.value_format,
            "isWindowed": s.windowed,
        }
        for s in found
        if s.kind is kind
    ]
    plural = "streams" if kind is st.SourceKind.STREAM else "tables"
    return {"@type": plural, "statementText": text, plural: entries, "warnings": []}


def source_description(
    text: str,
    source: DataSource,
    *,
    read_queries: Sequence[Json],
    write_queries: Sequence[Json],
    partitions: int,
    replication: int,
    extended: bool,
) -> Json:
    return {
        "@type": "sourceDescription",
        "statementText": text,
        "sourceDescription": {
            "name": source.name,
            "windowType": source.window_type.value if source.window_type else None,
            "readQueries": list(read_queries),
            "writeQueries": list(write_queries),
            "fields": [_field(c) for c in source.columns],
            "type": source.kind.value,
            "timestamp": "",
            "statistics": "",
            "errorStats": "",
            "extended": extended,
            "keyFormat": source.key_format,
            "valueFormat": source.value_format,
            "topic": source.topic,
            "partitions": partitions,
            "replication": replication,
            "statement": source.statement,
            "queryOffsetSummaries": [],
            "sourceConstraints": [],
        },
        "warnings": [],
    }


def queries(text: str, entries: Sequence[Json]) -> Json:
    """`SHOW QUERIES`: each entry as `query_entry` makes it."""
    return {"@type": "queries", "statementText": text, "queries": list(entries), "warnings": []}


def query_entry(
    query_id: str, *, statement: str, sink: str | None, topic: str | None, state: str, kind: str
) -> Json:
    return {
        "queryString": statement,
        "sinks": [sink] if sink else [],
        "sinkKafkaTopics": [topic] if topic else [],
        "id": query_id,
        "statusCount": {state: 1},
        "queryType": kind,
        "state": state,
    }


def query_description(
    text: str,
    query_id: str,
    *,
    statement: str,
    columns: Sequence[Column | OutputColumn],
    sources: Sequence[str],
    sinks: Sequence[str],
    plan: str,
    physical_plan: str,
    state: str | None,
    kind: str,
    overridden: Mapping[str, Any],
    error: str = "",
) -> Json:
    """`EXPLAIN` (ksqlDB's `queryDescription`). Spark's plans stand where ksqlDB shows its
    Kafka Streams topology (`topology`: the physical plan) and its own plan (`executionPlan`:
    every stage, parsed to physical); `state` is None for a statement that is not running;
    `error`: the query's last failure (ksqlDB's `queryErrors`)."""
    return {
        "@type": "queryDescription",
        "statementText": text,
        "queryDescription": {
            "id": query_id,
            "statementText": statement,
            "windowType": None,
            "fields": [_field(c) for c in columns],
            "sources": list(sources),
            "sinks": list(sinks),
            "topology": physical_plan,
            "executionPlan": plan,
            "overriddenProperties": dict(overridden),
            "ksqlHostQueryStatus": {},
            "queryType": kind,
            "queryErrors": [{"errorMessage": error, "type": "UNKNOWN"}] if error else [],
            "tasksMetadata": [],
            "state": state,
        },
        "warnings": [],
    }


def properties(text: str, values: Mapping[str, str], overridden: Iterable[str]) -> Json:
    return {
        "@type": "properties",
        "statementText": text,
        "properties": [
            {"name": name, "scope": "KSQL", "value": value}
            for name, value in sorted(values.items())
        ],
        "overwrittenProperties": sorted(overridden),
        "defaultProperties": [],
        "warnings": [],
    }


def topics(text: str, found: Mapping[str, Sequence[int]]) -> Json:
    """`SHOW TOPICS`: names and the replica count of each partition."""
    return {
        "@type": "kafka_topics",
        "statementText": text,
        "topics": [
            {"name": name, "replicaInfo": list(replicas)}
            for name, replicas in sorted(found.items())
        ],
        "warnings": [],
    }


def function_list(text: str) -> Json:
    return {
        "@type": "function_names",
        "statementText": text,
        "functions": [
            {
                "name": name,
                "category": "AGGREGATE" if signatures[0].aggregate else "SCALAR",
                "type": "AGGREGATE" if signatures[0].aggregate else "SCALAR",
            }
            for name, signatures in sorted(FUNCTIONS.items())
        ],
        "warnings": [],
    }


def _param(p: ty.SqlType | str) -> str:
    if isinstance(p, str):
        return "T" if p == "ANY" else p
    return format_type(p)


def describe_function(text: str, name: str) -> Json:
    signatures = FUNCTIONS[name]
    return {
        "@type": "describe_function",
        "statementText": text,
        "name": name,
        "description": signatures[0].description,
        "author": "strom",
        "version": "",
        "path": "internal",
        "type": "AGGREGATE" if signatures[0].aggregate else "SCALAR",
        "functions": [
            {
                "arguments": [
                    {"name": f"arg{i}", "type": _param(p), "description": "", "isVariadic": False}
                    for i, p in enumerate(s.params)
                ],
                "returnType": format_type(r)
                if isinstance(r := s.returns, ty.PrimitiveType | ty.ArrayType)
                else "T",
                "description": s.description,
            }
            for s in signatures
        ],
        "warnings": [],
    }
