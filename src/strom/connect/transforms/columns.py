"""Transforms and predicates as Spark column expressions on a connector's record DataFrame:
columns ``key`` and ``value`` (the connector's data, any Spark type, before a source's
converter or after a sink's), ``topic``, ``headers`` (array<struct<key string, value
binary>>), ``timestamp`` and, in sinks, ``partition`` and ``offset``. A column has one type, so
a transform under a predicate must keep the types of the columns it changes (Kafka's records
may each have a schema of their own; a Spark column cannot)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from strom.connect.transforms.specs import Chain, Predicate, Transform, chain
from strom.spark.schema import HEADERS_TYPE

if TYPE_CHECKING:
    from strom.connect.converters import Converter
    from strom.connect.plugins import RunContext

__all__ = ["Names", "apply", "record_columns", "serialized", "sink_records"]

CAST: dict[str, DataType] = {
    "int8": ByteType(),
    "int16": ShortType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "float32": FloatType(),
    "float64": DoubleType(),
    "boolean": BooleanType(),
    "string": StringType(),
}


@dataclass
class Names:
    """What a converter writes into the key's and the value's Connect schemas beyond their
    Spark types: names and versions (set by the connector, changed by SetSchemaMetadata,
    dropped by the transforms that make a new schema: ExtractField, HoistField, ValueToKey's
    key), and the connector's declared types, whose fields' optionality outlives transforms
    (Spark's expressions make most fields nullable)."""

    names: dict[str, str | None] = field(default_factory=dict)
    versions: dict[str, int | None] = field(default_factory=dict)
    types: dict[str, DataType] = field(default_factory=dict)
    topic: str | None = None
    """The topic every record goes to, while no transform routes them (registry subjects)."""

    def drop(self, part: str) -> None:
        self.names.pop(part, None)
        self.versions.pop(part, None)


Columns = dict[str, Column]
ERROR = "__error"
"""A step's failure, in its ``Columns``: the message where a record fails (null where it does
not); in a frame: a record's first failure, ``struct<message, stage, class>``."""
_TRANSFORMS = "org.apache.kafka.connect.transforms."
_RECORD = "__record"


def _struct(frame: DataFrame, transform: Transform, purpose: str) -> StructType:
    data_type = frame.schema[_part(transform)].dataType
    if not isinstance(data_type, StructType):
        raise ValueError(
            f"transform {transform.alias}: Only Struct objects supported for [{purpose}], "
            f"found: {data_type.simpleString()}"
        )
    return data_type


def _part(transform: Transform) -> str:
    return transform.part or "value"


def _keep_null(data: Column, new: Column) -> Column:
    """``new``, or null where ``data`` is (Kafka passes tombstones through)."""
    return F.when(data.isNull(), F.lit(None)).otherwise(new)


def _header_bytes(data: Column, data_type: DataType) -> Column:
    """A header's bytes as Kafka's SimpleHeaderConverter writes a value: text as itself,
    bytes as they are, structs as JSON, other values as their string form."""
    if isinstance(data_type, BinaryType):
        return data
    if isinstance(data_type, StructType):
        return F.encode(F.to_json(data), "UTF-8")
    return F.encode(data.cast("string"), "UTF-8")


def _headers(frame: DataFrame) -> Column:
    return F.coalesce(F.col("headers"), F.array().cast(HEADERS_TYPE))


def _in_utc(timestamp: Column) -> Column:
    """A timestamp whose session wall clock is ``timestamp``'s UTC one (Kafka formats in UTC)."""
    return F.to_utc_timestamp(timestamp, F.current_timezone())


def _from_utc(timestamp: Column) -> Column:
    """The instant whose UTC wall clock is ``timestamp``'s session one."""
    return F.from_utc_timestamp(timestamp, F.current_timezone())


def _insert_field(frame: DataFrame, t: Transform, names: Names) -> Columns:
    _struct(frame, t, "field insertion")
    part = _part(t)
    data = F.col(part)
    present = set(frame.columns)
    sources = {
        "topic.field": F.col("topic"),
        "partition.field": F.col("partition")
        if "partition" in present
        else F.lit(None).cast("int"),
        "offset.field": F.col("offset") if "offset" in present else F.lit(None).cast("long"),
        "timestamp.field": F.col("timestamp"),
        "static.field": F.lit(t.get("static.value")).cast("string"),
    }
    new = data
    for setting, column in sources.items():
        name = t.get(setting).rstrip("!?")
        if name:
            new = new.withField(name, column)
    return {part: _keep_null(data, new)}


def _replace_field(frame: DataFrame, t: Transform, names: Names) -> Columns:
    data_type = _struct(frame, t, "field replacement")
    data = F.col(_part(t))
    include = set(t.names("include") or t.names("whitelist"))
    exclude = set(t.names("exclude") or t.names("blacklist"))
    renames = dict(pair.split(":", 1) for pair in t.names("renames"))
    kept = [
        data[f.name].alias(renames.get(f.name, f.name))
        for f in data_type.fields
        if (not include or f.name in include) and f.name not in exclude
    ]
    return {_part(t): _keep_null(data, F.struct(*kept))}


def _masked(data: Column, data_type: DataType, replacement: str) -> Column:
    if replacement:
        if not isinstance(data_type, (StringType, DecimalType, *[type(c) for c in CAST.values()])):
            raise ValueError(
                f"Cannot mask value of type {data_type.simpleString()} with custom replacement"
            )
        value = F.lit(replacement).cast(data_type)
    elif isinstance(data_type, StringType):
        value = F.lit("")
    elif isinstance(data_type, BooleanType):
        value = F.lit(False)
    elif isinstance(data_type, (DateType, TimestampType)):
        value = F.lit(0).cast("timestamp").cast(data_type)
    elif isinstance(data_type, BinaryType):
        value = F.lit(b"")
    else:
        value = F.lit(0).cast(data_type)
    return F.when(data.isNull(), F.lit(None)).otherwise(value)


def _mask_field(frame: DataFrame, t: Transform, names: Names) -> Columns:
    data_type = _struct(frame, t, "masking")
    data = F.col(_part(t))
    masked = set(t.names("fields"))
    replacement = t.get("replacement")
    kept = [
        (
            _masked(data[f.name], f.dataType, replacement) if f.name in masked else data[f.name]
        ).alias(f.name)
        for f in data_type.fields
    ]
    return {_part(t): _keep_null(data, F.struct(*kept))}


def _cast_one(data: Column, kind: str) -> tuple[Column, Column]:
    """``data`` cast to Connect's ``kind``, and the failure where it cannot be (null)."""
    cast = data.try_cast(CAST[kind])
    shown = F.concat(F.lit("Cast: unable to convert "), data.cast("string"), F.lit(f" to {kind}"))
    return cast, F.when(data.isNotNull() & cast.isNull(), shown)


def _cast(frame: DataFrame, t: Transform, names: Names) -> Columns:
    part = _part(t)
    data = F.col(part)
    specs = t.names("spec")
    if len(specs) == 1 and ":" not in specs[0]:
        cast, failure = _cast_one(data, specs[0])
        return {part: cast, ERROR: failure}
    data_type = _struct(frame, t, "cast")
    targets = {name.strip(): kind.strip() for name, kind in (s.split(":") for s in specs)}
    kept, failures = [], []
    for f in data_type.fields:
        if f.name in targets:
            cast, failure = _cast_one(data[f.name], targets[f.name])
            kept.append(cast.alias(f.name))
            failures.append(failure)
        else:
            kept.append(data[f.name].alias(f.name))
    failed = F.coalesce(*failures) if failures else F.lit(None).cast("string")
    return {part: _keep_null(data, F.struct(*kept)), ERROR: failed}


def _to_timestamp(data: Column, data_type: DataType, t: Transform) -> Column:
    if isinstance(data_type, StringType):
        return _from_utc(F.to_timestamp(data, t.get("format")))
    if isinstance(data_type, DateType):
        return _from_utc(F.to_timestamp(data))
    if isinstance(data_type, (IntegerType, LongType)):
        unit = t.get("unix.precision", "milliseconds")
        if unit == "seconds":
            return F.timestamp_seconds(data)
        if unit == "microseconds":
            return F.timestamp_micros(data)
        if unit == "nanoseconds":
            return F.timestamp_micros(F.floor(data / 1000))
        return F.timestamp_millis(data)
    if isinstance(data_type, TimestampType):
        return data
    raise ValueError(f"transform {t.alias}: a {data_type.simpleString()} is no timestamp")


def _from_timestamp(stamp: Column, t: Transform) -> Column:
    target = t.get("target.type")
    if target == "string":
        return F.date_format(_in_utc(stamp), t.get("format"))
    if target == "Date":
        return F.to_date(_in_utc(stamp))
    if target == "unix":
        unit = t.get("unix.precision", "milliseconds")
        if unit == "seconds":
            return F.unix_seconds(stamp)
        if unit in ("microseconds", "nanoseconds"):
            micros = F.unix_micros(stamp)
            return micros * 1000 if unit == "nanoseconds" else micros
        return F.unix_millis(stamp)
    return stamp


def _timestamp_converter(frame: DataFrame, t: Transform, names: Names) -> Columns:
    part = _part(t)
    data = F.col(part)
    name = t.get("field")
    if not name:
        data_type = frame.schema[part].dataType
        return {part: _from_timestamp(_to_timestamp(data, data_type, t), t)}
    data_type = _struct(frame, t, "converting timestamp formats")
    if name not in data_type.fieldNames():
        raise ValueError(f"transform {t.alias}: no field {name} in {data_type.simpleString()}")
    converted = _from_timestamp(_to_timestamp(data[name], data_type[name].dataType, t), t)
    return {part: _keep_null(data, data.withField(name, converted))}


def _extract_field(frame: DataFrame, t: Transform, names: Names) -> Columns:
    data_type = _struct(frame, t, "field extraction")
    if t.get("field") not in data_type.fieldNames():
        raise ValueError(f"transform {t.alias}: Unknown field: {t.get('field')}")
    names.drop(_part(t))
    return {_part(t): F.col(_part(t))[t.get("field")]}


def _value_to_key(frame: DataFrame, t: Transform, names: Names) -> Columns:
    data_type = _struct(frame, t, "copying fields from value to key")
    value = F.col("value")
    for name in t.names("fields"):
        if name not in data_type.fieldNames():
            raise ValueError(f"transform {t.alias}: Unknown field: {name}")
    names.drop("key")
    key = F.struct(*[value[name].alias(name) for name in t.names("fields")])
    return {"key": _keep_null(value, key)}


def _hoist_field(frame: DataFrame, t: Transform, names: Names) -> Columns:
    names.drop(_part(t))
    return {_part(t): F.struct(F.col(_part(t)).alias(t.get("field")))}


def _flat(data: Column, data_type: StructType, prefix: str, delimiter: str) -> list[Column]:
    found = []
    for f in data_type.fields:
        name = f"{prefix}{f.name}"
        if isinstance(f.dataType, StructType):
            found += _flat(data[f.name], f.dataType, name + delimiter, delimiter)
        else:
            found.append(data[f.name].alias(name))
    return found


def _flatten(frame: DataFrame, t: Transform, names: Names) -> Columns:
    data_type = _struct(frame, t, "flattening")
    data = F.col(_part(t))
    flat = _flat(data, data_type, "", t.get("delimiter", "."))
    return {_part(t): _keep_null(data, F.struct(*flat))}


def _regex_router(frame: DataFrame, t: Transform, names: Names) -> Columns:
    whole = f"^(?:{t.settings['regex']})$"
    topic = F.col("topic")
    renamed = F.regexp_replace(topic, whole, t.settings["replacement"])
    return {"topic": F.when(topic.rlike(whole), renamed).otherwise(topic)}


def _timestamp_router(frame: DataFrame, t: Transform, names: Names) -> Columns:
    stamp = F.date_format(_in_utc(F.col("timestamp")), t.get("timestamp.format", "yyyyMMdd"))
    parts: list[Column] = []
    for i, piece in enumerate(t.get("topic.format", "${topic}-${timestamp}").split("${topic}")):
        if i:
            parts.append(F.col("topic"))
        for j, text in enumerate(piece.split("${timestamp}")):
            if j:
                parts.append(stamp)
            parts.append(F.lit(text))
    missing = F.when(F.col("timestamp").isNull(), F.lit(f"Timestamp missing on record: {t.alias}"))
    return {"topic": F.concat(*parts), ERROR: missing}


def _header_from(frame: DataFrame, t: Transform, names: Names) -> Columns:
    data_type = _struct(frame, t, "header from")
    part = _part(t)
    data = F.col(part)
    fields = t.names("fields")
    for name in fields:
        if name not in data_type.fieldNames():
            raise ValueError(f"transform {t.alias}: Unknown field: {name}")
    added = [
        F.struct(
            F.lit(header).alias("key"),
            _header_bytes(data[name], data_type[name].dataType).alias("value"),
        )
        for name, header in zip(fields, t.names("headers"), strict=True)
    ]
    changed: Columns = {"headers": F.concat(_headers(frame), F.array(*added))}
    if t.get("operation") == "move":
        kept = [data[f.name].alias(f.name) for f in data_type.fields if f.name not in fields]
        changed[part] = _keep_null(data, F.struct(*kept))
    return changed


def _insert_header(frame: DataFrame, t: Transform, names: Names) -> Columns:
    header = F.struct(
        F.lit(t.get("header")).alias("key"),
        F.encode(F.lit(t.settings["value.literal"]), "UTF-8").alias("value"),
    )
    return {"headers": F.concat(_headers(frame), F.array(header))}


def _drop_headers(frame: DataFrame, t: Transform, names: Names) -> Columns:
    dropped = F.array(*[F.lit(h) for h in t.names("headers")])
    return {"headers": F.filter(_headers(frame), lambda h: ~F.array_contains(dropped, h["key"]))}


def _set_schema_metadata(frame: DataFrame, t: Transform, names: Names) -> Columns:
    part = _part(t)
    if t.get("schema.name"):
        names.names[part] = t.get("schema.name")
    if t.get("schema.version"):
        names.versions[part] = int(t.get("schema.version"))
    return {}


STEPS: dict[str, Callable[[DataFrame, Transform, Names], Columns]] = {
    "InsertField": _insert_field,
    "ReplaceField": _replace_field,
    "MaskField": _mask_field,
    "Cast": _cast,
    "TimestampConverter": _timestamp_converter,
    "ExtractField": _extract_field,
    "ValueToKey": _value_to_key,
    "HoistField": _hoist_field,
    "Flatten": _flatten,
    "RegexRouter": _regex_router,
    "TimestampRouter": _timestamp_router,
    "HeaderFrom": _header_from,
    "InsertHeader": _insert_header,
    "DropHeaders": _drop_headers,
    "SetSchemaMetadata": _set_schema_metadata,
}


def predicate(frame: DataFrame, p: Predicate) -> Column:
    """Where ``p`` holds (never null)."""
    if p.kind == "TopicNameMatches":
        found = F.col("topic").rlike(f"^(?:{p.settings['pattern']})$")
    elif p.kind == "HasHeaderKey":
        name = p.settings["name"].strip()
        found = F.exists(_headers(frame), lambda h: h["key"] == F.lit(name))
    else:
        found = F.col("value").isNull()
    return F.coalesce(found, F.lit(False))


def _applies(frame: DataFrame, t: Transform) -> Column | None:
    """Where ``t`` applies, or None for everywhere."""
    if t.predicate is None:
        return None
    holds = predicate(frame, t.predicate)
    return ~holds if t.negate else holds


def _step(frame: DataFrame, t: Transform, names: Names) -> DataFrame:
    where = _applies(frame, t)
    if t.kind == "Filter":
        return frame.where(~where) if where is not None else frame.where(F.lit(False))
    if where is not None and t.kind == "SetSchemaMetadata":
        raise ValueError(f"transform {t.alias}: strom names a schema for all records, not some")
    changed = STEPS[t.kind](frame, t, names) or {}
    failure = changed.pop(ERROR, None)
    if failure is not None:
        if where is not None:
            failure = F.when(where, failure)
        named = f"{t.kind}${t.part.capitalize()}" if t.part else t.kind
        changed[ERROR] = noted(frame, failure, "TRANSFORMATION", _TRANSFORMS + named)
    if where is None or not changed:
        return frame.withColumns(changed)
    after = frame.withColumns(changed).schema
    for name in changed.keys() - {ERROR}:
        if after[name].dataType != frame.schema[name].dataType:
            raise ValueError(
                f"transform {t.alias}: under a predicate, a transform must keep the {name}'s "
                f"type ({frame.schema[name].dataType.simpleString()}), as a Spark column has one"
            )
    return frame.withColumns(
        {
            name: column if name == ERROR else F.when(where, column).otherwise(F.col(name))
            for name, column in changed.items()
        }
    )


def noted(frame: DataFrame, failure: Column, stage: str, class_name: str) -> Column:
    """``frame``'s ``ERROR`` column with ``failure`` (a message, or null) of ``stage`` in
    ``class_name`` added: a record keeps its first failure."""
    new = F.when(
        failure.isNotNull(),
        F.struct(
            failure.alias("message"), F.lit(stage).alias("stage"), F.lit(class_name).alias("class")
        ),
    )
    return F.coalesce(F.col(ERROR), new) if ERROR in frame.columns else new


def apply(chain: Chain, frame: DataFrame, names: Names, *, tolerate: bool = False) -> DataFrame:
    """``frame`` through ``chain``'s transforms in order (``names`` follows the schemas'). A
    record a transform fails on fails the query, as with ``errors.tolerance=none``; with
    ``tolerate`` it keeps its failure in an ``ERROR`` column instead (when one can fail)."""
    for transform in chain.transforms:
        frame = _step(frame, transform, names)
        if transform.kind in ("RegexRouter", "TimestampRouter"):
            names.topic = None
    if tolerate or ERROR not in frame.columns:
        return frame
    error = F.col(ERROR)
    fail = F.raise_error(F.concat(F.lit("Tolerance exceeded in error handler: "), error.message))
    return frame.where(F.when(error.isNull(), F.lit(True)).otherwise(fail.cast("boolean"))).drop(
        ERROR
    )


def record_columns(key: Column, value: Column, topic: Column) -> list[Column]:
    """A source's record columns: no headers yet, and the time the record is made as its
    timestamp (what the producer would give it)."""
    return [
        key.alias("key"),
        value.alias("value"),
        topic.alias("topic"),
        F.lit(None).cast(HEADERS_TYPE).alias("headers"),
        F.current_timestamp().alias("timestamp"),
    ]


def _declared(actual: DataType, declared: DataType | None) -> DataType:
    """``actual`` with ``declared``'s optionality for the fields both have alike."""
    if not isinstance(actual, StructType) or not isinstance(declared, StructType):
        return actual
    known = {f.name: f for f in declared.fields}
    fields = []
    for f in actual.fields:
        same = known.get(f.name)
        if same is not None and same.dataType.simpleString() == f.dataType.simpleString():
            fields.append(StructField(f.name, _declared(f.dataType, same.dataType), same.nullable))
        else:
            fields.append(f)
    return StructType(fields)


def _serialize(frame: DataFrame, part: str, converter: Converter, names: Names) -> Column:
    data_type = _declared(frame.schema[part].dataType, names.types.get(part))
    if isinstance(data_type, NullType):
        return F.lit(None).cast("binary").alias(part)
    name, version = names.names.get(part), names.versions.get(part)
    if converter.registry is not None:
        from strom.connect import registry_converters  # noqa: PLC0415 - needs strom[registry]

        data = registry_converters.serialize(
            converter, F.col(part), data_type, name, part, names.topic
        )
        return data.alias(part)
    return converter.serialize(F.col(part), data_type, name, version).alias(part)


def serialized(
    frame: DataFrame, context: RunContext, names: Names | None = None, keep: Sequence[str] = ()
) -> DataFrame:
    """A source's records (``record_columns``) through its transforms, then its converters:
    ``key``, ``value`` (bytes), ``topic`` and ``headers``, as the ``strom`` sink takes them,
    and the columns named in ``keep`` (a ``partition``). With ``errors.tolerance=all`` and a
    transform that can fail on a record, an ``error`` column too: the failure (message, stage,
    class and, with ``errors.log.include.messages``, the ``record`` as the connector made it,
    as JSON), where the key and value are null (``source_writes.write_source`` skips it)."""
    names = names or Names()
    config = context.config
    tolerate = config.get("errors.tolerance", "none").strip() == "all"
    messages = tolerate and config.get("errors.log.include.messages", "").strip() == "true"
    if messages:
        frame = frame.withColumn(_RECORD, F.struct("key", "value", "topic"))
    frame = apply(chain(config), frame, names, tolerate=tolerate)
    extra: list[Column | str] = []
    if ERROR in frame.columns:
        error = F.col(ERROR)
        if messages:
            shown = F.when(error.isNotNull(), F.to_json(F.col(_RECORD)))
            error = error.withField("record", shown)
        fine = F.col(ERROR).isNull()
        frame = frame.withColumns(
            {"key": F.when(fine, F.col("key")), "value": F.when(fine, F.col("value"))}
        )
        extra.append(error.alias("error"))
    return frame.select(
        _serialize(frame, "key", context.key_converter, names),
        _serialize(frame, "value", context.value_converter, names),
        "topic",
        "headers",
        *keep,
        *extra,
    )


def sink_records(raw: DataFrame, context: RunContext) -> DataFrame:
    """A sink's records (the ``strom`` source's, with headers) through its transforms, the key
    and value as their converters' text (null stays null): what a text sink writes."""

    def text(part: str, converter: Converter) -> Column:
        data = F.col(part)
        return F.when(data.isNull(), F.lit(None)).otherwise(converter.to_text(data)).alias(part)

    key, value = context.key_converter, context.value_converter
    if key.registry is not None or value.registry is not None:
        from strom.connect.registry_converters import decoded, plain  # noqa: PLC0415

        raw = decoded(decoded(raw, "key", key), "value", value)
        key, value = plain(key), plain(value)
    frame = raw.select(
        text("key", key),
        text("value", value),
        "topic",
        "headers",
        "timestamp",
        "partition",
        "offset",
    )
    return apply(chain(context.config), frame, Names())
