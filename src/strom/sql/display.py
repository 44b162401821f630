"""What `strom sql shell` prints, as ksqlDB's CLI prints it: each entity of a `/ksql` answer as
a table (or a few `name : value` lines), and a query's header and rows as they arrive. Pure:
entities (JSON) in, lines of text out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["entity", "query_header", "query_row", "table"]

Json = dict[str, Any]
QUERY_COLUMN_WIDTH = 20
"""The least width of a query column: rows are printed as they come, so the widths are fixed
before any row is seen (a longer value widens its own line only)."""


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A table as ksqlDB's CLI draws one: ` A | B ` lines, a rule under the header and under
    the last row."""
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "|".join(f" {v.ljust(w)} " for v, w in zip(values, widths, strict=True))

    rule = "-" * len(line(headers))
    return [line(headers), rule, *(line(r) for r in cells), rule]


def cell(value: object) -> str:
    """A value in a table or a row: text as is, NULL as `null`, the rest as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _schema(s: Json) -> str:
    kind = str(s.get("type"))
    if kind == "ARRAY":
        return f"ARRAY<{_schema(s['memberSchema'])}>"
    if kind == "MAP":
        return f"MAP<STRING, {_schema(s['memberSchema'])}>"
    if kind == "STRUCT":
        fields = ", ".join(f"`{f['name']}` {_schema(f['schema'])}" for f in s["fields"])
        return f"STRUCT<{fields}>"
    if kind == "DECIMAL" and (p := s.get("parameters")):
        return f"DECIMAL({p['precision']}, {p['scale']})"
    return kind


def _status(e: Json) -> list[str]:
    return table(["Message"], [[e["commandStatus"]["message"]]])


def _sources(e: Json) -> list[str]:
    kind = "Stream" if e["@type"] == "streams" else "Table"
    return table(
        [f"{kind} Name", "Kafka Topic", "Key Format", "Value Format", "Windowed"],
        [
            [s["name"], s["topic"], s["keyFormat"], s["valueFormat"], s["isWindowed"]]
            for s in e[e["@type"]]
        ],
    )


def _queries(e: Json) -> list[str]:
    return table(
        ["Query ID", "Query Type", "Status", "Sink Name", "Sink Kafka Topic", "Query String"],
        [
            [
                q["id"],
                q["queryType"],
                q["state"],
                ",".join(q["sinks"]),
                ",".join(q["sinkKafkaTopics"]),
                " ".join(q["queryString"].split()),
            ]
            for q in e["queries"]
        ],
    )


def _topics(e: Json) -> list[str]:
    return table(
        ["Kafka Topic", "Partitions", "Partition Replicas"],
        [
            [t["name"], len(t["replicaInfo"]), t["replicaInfo"][0] if t["replicaInfo"] else 0]
            for t in e["topics"]
        ],
    )


def _properties(e: Json) -> list[str]:
    return table(
        ["Property", "Scope", "Value"],
        [[p["name"], p["scope"], p["value"]] for p in e["properties"]],
    )


def _functions(e: Json) -> list[str]:
    return table(
        ["Function Name", "Category"], [[f["name"], f["category"]] for f in e["functions"]]
    )


def _description(e: Json) -> list[str]:
    d = e["sourceDescription"]
    fields = [
        [f["name"], _schema(f["schema"]) + ("  (key)" if f.get("type") == "KEY" else "")]
        for f in d["fields"]
    ]
    lines = [
        f"Name                 : {d['name']}",
        f"Type                 : {d['type']}",
        f"Kafka topic          : {d['topic']} (partitions: {d['partitions']}, "
        f"replication: {d['replication']})",
        f"Key format           : {d['keyFormat']}",
        f"Value format         : {d['valueFormat']}",
        "",
        *table(["Field", "Type"], fields),
    ]
    for verb, key in (("read from", "readQueries"), ("write from", "writeQueries")):
        if d[key]:  # ksqlDB's words
            lines += [
                "",
                f"Queries that {verb} this {d['type']}:",
                *(f" {q['id']}" for q in d[key]),
            ]
    return lines


def _function(e: Json) -> list[str]:
    lines = [
        f"Name        : {e['name']}",
        f"Overview    : {e['description']}",
        f"Type        : {e['type']}",
        "Variations  :",
    ]
    for f in e["functions"]:
        arguments = ", ".join(f"{a['name']} {a['type']}" for a in f["arguments"])
        lines += [
            "",
            f"\tVariation   : {e['name']}({arguments})",
            f"\tReturns     : {f['returnType']}",
        ]
    return lines


_RENDER: dict[str, Callable[[Json], list[str]]] = {
    "currentStatus": _status,
    "streams": _sources,
    "tables": _sources,
    "queries": _queries,
    "kafka_topics": _topics,
    "properties": _properties,
    "function_names": _functions,
    "sourceDescription": _description,
    "describe_function": _function,
}


def entity(e: Json) -> list[str]:
    """One entity of a `/ksql` answer (one of another type as its JSON)."""
    render = _RENDER.get(str(e.get("@type")))
    return render(e) if render else json.dumps(e, indent=2).splitlines()


def _widths(names: Sequence[str]) -> list[int]:
    return [max(len(n), QUERY_COLUMN_WIDTH) for n in names]


def _query_line(values: Sequence[str], widths: Sequence[int]) -> str:
    return "|" + "|".join(v.ljust(w) for v, w in zip(values, widths, strict=True)) + "|"


def query_header(names: Sequence[str]) -> list[str]:
    """A query's column names, boxed as ksqlDB's CLI prints them before the first row."""
    widths = _widths(names)
    rule = "+" + "+".join("-" * w for w in widths) + "+"
    return [rule, _query_line(names, widths), rule]


def query_row(names: Sequence[str], row: Sequence[object]) -> str:
    """One row of a query, under `query_header(names)`."""
    return _query_line([cell(v) for v in row], _widths(names))
