"""The server's engine (ksqlDB's `KsqlEngine` and `CommandRunner`): the metastore, the persistent
queries, and the statements of `/ksql`.

A statement that changes state is first checked against the current state (the same code run
with `run=False`, planning its Spark query without starting it), then written to the command
topic, then run from there, with every other command read since, in the topic's order: the
command topic, not the request, is what the server does. A starting server runs every command
again; the queries resume from their checkpoints (under `ksql.streams.state.dir`, named by
query id, and the query id carries the command's offset, so a replay finds the same one).
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.spark.foreach_batch import guarded, write_stream
from strom.sql import entities
from strom.sql import statements as st
from strom.sql.commands import Command, CommandLog
from strom.sql.errors import SqlError, SqlSemanticError
from strom.sql.formatter import format_type
from strom.sql.functions import FUNCTIONS
from strom.sql.having import having_batches
from strom.sql.joins import JoinQuery, join_sources
from strom.sql.materialized import TableState
from strom.sql.metastore import DataSource, declared_source, derived_source
from strom.sql.owners import QueryOwners
from strom.sql.parser import parse, parse_statement
from strom.sql.planner import HAVING, Plan, plan_query, read_source, sink_frame
from strom.sql.printer import TopicPrint, topic_named
from strom.sql.processing_log import ProcessingLogWriter, stream_statement
from strom.sql.pull import TABLE_SCAN, PullQuery, not_queryable
from strom.sql.push import PushQuery
from strom.sql.registry import SchemaRegistry
from strom.sql.retries import Retried
from strom.sql.settings import OFFSET_RESETS, SqlSettings
from strom.sql.stream_joins import stream_stream_plan
from strom.sql.values import encode_insert

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["Engine", "PersistentQuery", "StatementError"]

log = logging.getLogger(__name__)
Json = dict[str, Any]


class StatementError(Exception):
    """A statement refused: ksqlDB's `statement_error` body, with the entities of the
    statements of the same request that ran before it."""

    def __init__(self, code: int, message: str, text: str, done: list[Json] | None = None):
        super().__init__(message)
        self.body = entities.statement_error(code, message, text, done or [])
        self.status = code // 100


@dataclass
class PersistentQuery:
    """A persistent query of the service; `run` is its Spark query while this server owns it
    (`owners`), None while another server of the service runs it."""

    id: str
    statement: str
    sink: str
    sink_topic: str
    sources: tuple[str, ...]
    start: Callable[[], StreamingQuery]
    run: Retried | None = None

    @property
    def state(self) -> str:
        if self.run is None:
            return "NOT_RUNNING"
        if self.run.failed:
            return "ERROR"
        return "RUNNING" if self.run.query.isActive else "NOT_RUNNING"

    def own(self, owned: bool) -> None:
        """Start the query here (from its checkpoint), or stop it, as its lease says."""
        if owned and self.run is None:
            self.run = Retried(self.id, self.start, self.start())
        elif not owned and self.run is not None:
            self.run.query.stop()
            self.run = None

    def entry(self) -> Json:
        return entities.query_entry(
            self.id,
            statement=self.statement,
            sink=self.sink,
            topic=self.sink_topic,
            state=self.state,
            kind="PERSISTENT",
        )


def _command_id(s: st.Statement) -> str:
    match s:
        case st.CreateSource(kind, name) | st.CreateAsSelect(kind, name):
            return f"{kind.value.lower()}/`{name}`/create"
        case st.DropSource(kind, name):
            return f"{kind.value.lower()}/`{name}`/drop"
        case st.InsertInto(target):
            return f"stream/`{target}`/insert"
        case st.Terminate(query_id):
            return f"terminate/`{query_id or 'ALL'}`/execute"
    raise AssertionError(s)


class Engine:
    """The metastore and queries of one server; `spark` makes the SparkSession (once)."""

    def __init__(self, settings: SqlSettings, *, spark: Callable[[], SparkSession]) -> None:
        self.settings = settings
        self.sources: dict[str, DataSource] = {}
        self.queries: dict[str, PersistentQuery] = {}
        self.statuses: dict[str, Json] = {}
        self.push_queries: dict[str, PushQuery] = {}
        self.tables: dict[str, TableState] = {}
        """The materialized state of the tables pull queries can read, by name."""
        self._client: dict[str, Any] = dict(settings.client_config())
        self._admin = AdminClient(self._client)
        self._spark_factory = spark
        self._spark: SparkSession | None = None
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self.registry = SchemaRegistry(settings.schema_registry_url)
        self.commands = CommandLog(
            topic=settings.command_topic,
            client=self._client,
            replicas=settings.command_topic_replicas,
            timeout=settings.timeout,
        )
        self.owners = QueryOwners(
            topic=settings.owners_topic,
            client=self._client,
            replicas=settings.command_topic_replicas,
            session_timeout_ms=settings.session_timeout_ms,
            timeout=settings.timeout,
            changed=self._owners_changed,
        )
        topic = settings.processing_log_topic
        self._processing_log = (
            None if topic is None else ProcessingLogWriter(topic, self._client, lambda: self._spark)
        )

    @property
    def spark(self) -> SparkSession:
        from strom.spark.session import activate  # noqa: PLC0415

        with self._lock:
            if self._spark is None:
                self._spark = self._spark_factory()
            return activate(self._spark)

    def start(self) -> None:
        """Read the command topic and run every command in it, join the service's query
        owners, then run the commands other servers of the service write, as they come."""
        self.commands.start()
        with self._lock:
            self._processing_log_stream()
            self._run_commands()
        self.owners.start()
        threading.Thread(target=self._follow, name="sql-commands", daemon=True).start()
        threading.Thread(target=self._retry_failed, name="sql-query-retries", daemon=True).start()

    def _processing_log_stream(self) -> None:
        """The processing log's topic (created if missing, as ksqlDB's) and its writer, and the
        stream KSQL_PROCESSING_LOG where asked for: this server's own, not a command."""
        if self._processing_log is None:
            return
        topic = self._processing_log.topic
        if self._partitions(topic) is None:
            values = self.settings.values
            partitions = int(values.get("ksql.logging.processing.topic.partitions", 1))
            replicas = int(values.get("ksql.logging.processing.topic.replication.factor", 0))
            self._create_topic(topic, partitions, replicas or None)
        self._processing_log.start()
        if self.settings.processing_log_stream:
            s = parse_statement(stream_statement(topic))
            assert isinstance(s, st.CreateSource)
            self.sources[s.name] = declared_source(s)

    def _follow(self) -> None:
        """Run the commands read from the topic (another server's statements) until the
        engine stops."""
        while not self._stopping.wait(0.2):
            with self._lock:
                if not self._stopping.is_set():
                    self._run_commands()

    def _owners_changed(self) -> None:
        """Run the queries whose lease this server holds now, and only those."""
        with self._lock:
            if self._stopping.is_set():
                return
            if any(q.run is None for q in self.queries.values()):
                _ = self.spark  # the session this thread starts queries in (`activate`)
            for query in self.queries.values():
                try:
                    query.own(self.owners.owns(query.id))
                except Exception:  # a query that cannot start: the others still move
                    log.exception("query %s could not start", query.id)

    def _retry_failed(self) -> None:
        """Start failed persistent queries again (`retries`), until the engine stops."""
        while not self._stopping.wait(1.0):
            with self._lock:
                for query in self.queries.values():
                    if query.run is not None:
                        query.run.check(time.monotonic(), self.settings.retry_backoff)

    def stop(self) -> None:
        """Stop the queries (their checkpoints stay, for the next start, or for the other
        servers of the service, which are given them) and the topic."""
        self.owners.stop()  # its last revoke stops the queries here first
        if self._processing_log is not None:
            self._processing_log.stop()
        with self._lock:
            for push in list(self.push_queries.values()):
                push.close()
            self._stopping.set()
            for query in self.queries.values():
                query.own(False)
            self.queries.clear()
            for state in self.tables.values():
                state.stop()
            self.tables.clear()
        self.commands.stop()

    # /ksql

    def ksql(self, text: str, properties: Mapping[str, Any]) -> list[Json]:
        """Run the statements of `text`; the entity of each, or `StatementError`."""
        try:
            statements = parse(text)
        except SqlError as error:
            raise StatementError(entities.BAD_STATEMENT, str(error), text) from None
        props = dict(properties)
        done: list[Json] = []
        for s in statements:
            try:
                entity = self._statement(s, props)
            except StatementError as error:
                error.body["entities"] = done
                raise
            except SqlError as error:
                raise StatementError(entities.BAD_STATEMENT, str(error), s.text, done) from None
            if entity is not None:
                done.append(entity)
        return done

    def _statement(self, s: st.Statement, props: dict[str, Any]) -> Json | None:
        match s:
            case st.SetProperty(name, value):
                props[name] = value
                return None
            case st.UnsetProperty(name):
                props.pop(name, None)
                return None
            case st.QueryStatement() | st.PrintTopic():
                raise StatementError(
                    entities.QUERY_ENDPOINT,
                    "The following statement types should be issued to the websocket endpoint "
                    "'/query':\n\t* PRINT\n\t* SELECT",
                    s.text,
                )
            case st.CreateSource() | st.CreateAsSelect() | st.InsertInto():
                return self._distributed(s, props)
            case st.DropSource() | st.Terminate():
                return self._distributed(s, props)
            case st.InsertValues():
                return self._insert_values(s)
        with self._lock:
            return self._describe(s, props)

    def _distributed(self, s: st.Statement, props: Mapping[str, Any]) -> Json:
        with self._lock:
            self.commands.catch_up()  # checked against every command of the service so far
            self._run_commands()
            self._execute(s, props, seq=-1, run=False)
            command_id = _command_id(s)
            self.commands.write(command_id, s.text, props)
            results = self._run_commands()
        mine = [r for c, r in results if c.command_id == command_id and c.statement == s.text]
        if not mine:
            raise StatementError(entities.SERVER_ERROR, "The command was not read back.", s.text)
        result = mine[-1]
        if isinstance(result, SqlError):
            raise result
        return result

    def _run_commands(self) -> list[tuple[Command, Json | SqlError]]:
        """Run every command read and not run yet, in order."""
        out: list[tuple[Command, Json | SqlError]] = []
        for command in self.commands.take():
            result: Json | SqlError
            try:
                s = parse_statement(command.statement)
                entity = self._execute(s, command.properties, seq=command.seq, run=True)
                assert entity is not None
                result = entity
                self.statuses[command.command_id] = {"status": "SUCCESS", "message": ""}
            except SqlError as error:
                log.warning("command %s failed: %s", command.command_id, error)
                result = error
                self.statuses[command.command_id] = {"status": "ERROR", "message": str(error)}
            except Exception as error:  # a Spark or Kafka failure: the next commands still run
                log.exception("command %s failed", command.command_id)
                result = SqlSemanticError(f"{type(error).__name__}: {error}")
                self.statuses[command.command_id] = {"status": "ERROR", "message": str(error)}
            out.append((command, result))
        return out

    def _execute(
        self, s: st.Statement, props: Mapping[str, Any], *, seq: int, run: bool
    ) -> Json | None:
        match s:
            case st.CreateSource():
                return self._create_source(s, seq, run)
            case st.CreateAsSelect():
                return self._create_as_select(s, props, seq, run)
            case st.InsertInto():
                return self._insert_into(s, props, seq, run)
            case st.DropSource():
                return self._drop(s, seq, run)
            case st.Terminate():
                return self._terminate(s, seq, run)
        raise AssertionError(s)

    # topics

    def _partitions(self, topic: str) -> int | None:
        # every topic's metadata: asking for one by name can create it (auto.create.topics)
        metadata = self._admin.list_topics(timeout=self.settings.timeout).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return None
        return len(metadata.partitions)

    def _create_topic(self, topic: str, partitions: int, replicas: int | None) -> None:
        factor = replicas or self.settings.sink_replicas
        if factor < 1:
            brokers = len(self._admin.list_topics(timeout=self.settings.timeout).brokers)
            factor = min(3, max(1, brokers))
        future = self._admin.create_topics([NewTopic(topic, partitions, factor)])[topic]
        try:
            future.result(timeout=self.settings.timeout)
        except KafkaException as error:
            if self._partitions(topic) is None:
                raise SqlSemanticError(f"Could not create topic {topic}: {error}") from None

    # statements that change state

    def _check_new(self, kind: st.SourceKind, name: str, or_replace: bool) -> None:
        if name in self.sources and not or_replace:
            word = kind.value.lower()
            raise SqlSemanticError(
                f"Cannot add {word} '{name}': A {word} with the same name already exists"
            )

    def _create_source(self, s: st.CreateSource, seq: int, run: bool) -> Json | None:
        kind = s.kind.value.capitalize()
        if s.if_not_exists and s.name in self.sources:
            return entities.current_status(s.text, _command_id(s), f"{kind} already exists.", seq)
        self._check_new(s.kind, s.name, s.or_replace)
        source = self.registry.with_schemas(
            declared_source(s, self.registry.infer), generated=False
        )
        partitions = self._partitions(source.topic)
        if partitions is None and source.partitions is None:
            raise SqlSemanticError(
                f"Topic '{source.topic}' does not exist. If you want to create a new topic for "
                f"the {s.kind.value.lower()} please re-run the statement providing the required "
                "'PARTITIONS' configuration in the WITH clause (and optionally 'REPLICAS')."
            )
        if partitions is not None and source.partitions not in (None, partitions):
            raise SqlSemanticError(
                f"A Kafka topic with the name '{source.topic}' already exists, with different "
                f"partition/replica configuration than required. KSQL expects "
                f"{source.partitions} partitions (topic has {partitions})."
            )
        if not run:
            return None
        if partitions is None:
            assert source.partitions is not None
            self._create_topic(source.topic, source.partitions, source.replicas)
        self.sources[s.name] = source
        if s.source:
            self._materialize(source)
        return entities.current_status(s.text, _command_id(s), f"{kind} created", seq)

    def _materialize(self, source: DataSource, window: st.WindowExpression | None = None) -> None:
        """Keep the rows of a table (with a key; `window`: a windowed table's) for pull
        queries."""
        old = self.tables.pop(source.name, None)
        if old is not None:
            old.stop()
        if source.kind is st.SourceKind.TABLE and source.keys:
            state = TableState(source, self._client, self.settings.timeout, window)
            self.tables[source.name] = state
            state.start()

    def _source_of(self, query: st.Query) -> DataSource:
        """The source a query reads (a join's stream)."""
        relation = query.from_.left if isinstance(query.from_, st.Join) else query.from_
        source = self.sources.get(relation.name)
        if source is None:
            raise SqlSemanticError(f"{relation.name} does not exist.")
        return source

    def _plan(
        self, query: st.Query, props: Mapping[str, Any]
    ) -> tuple[Mapping[str, DataSource], Plan, JoinQuery | None]:
        """The query's sources by alias (the one read first), its plan, and for a join what
        runs it (each micro-batch's plan is made again: see `joins`)."""
        reset = str(
            props.get("auto.offset.reset")
            or props.get("ksql.streams.auto.offset.reset")
            or self.settings.offset_reset
        ).lower()
        if reset not in OFFSET_RESETS:
            raise SqlSemanticError(f"auto.offset.reset: earliest or latest, not {reset!r}")
        options = self.settings.spark_options()
        if isinstance(query.from_, st.Join):
            sources, joined = join_sources(query.from_, self.sources)
            if all(s.kind is st.SourceKind.STREAM for s in sources.values()):
                plan = stream_stream_plan(
                    self.spark, query, joined, sources, options=options, offset_reset=reset
                )
                return sources, plan, None
            join = JoinQuery(query, joined, sources, options, reset)
            return sources, join.plan(self.spark, join.stream(self.spark)), join
        source = self._source_of(query)
        sources = {query.from_.alias or query.from_.name: source}
        frame = read_source(self.spark, source, options, reset)
        return sources, plan_query(query, frame, sources), None

    def _create_as_select(
        self, s: st.CreateAsSelect, props: Mapping[str, Any], seq: int, run: bool
    ) -> Json | None:
        if s.if_not_exists and s.name in self.sources:
            return entities.current_status(s.text, _command_id(s), "Already exists.", seq)
        self._check_new(s.kind, s.name, False)
        sources, plan, join = self._plan(s.query, props)
        source = next(iter(sources.values()))
        if plan.aggregate and s.kind is st.SourceKind.STREAM:
            raise SqlSemanticError(
                "Invalid result type. Your SELECT query produces a TABLE. Please use CREATE "
                "TABLE AS SELECT statement instead."
            )
        if not plan.aggregate and s.kind is st.SourceKind.TABLE:
            raise SqlSemanticError(
                "Invalid result type. Your SELECT query produces a STREAM. Please use CREATE "
                "STREAM AS SELECT statement instead."
            )
        sink = self.registry.with_schemas(
            derived_source(
                s, plan.columns, source, s.query.window.kind if s.query.window else None
            ),
            generated=True,
        )
        frame = sink_frame(plan, sink)
        if not run:
            return None
        if self._partitions(sink.topic) is None:
            partitions = sink.partitions or self._partitions(source.topic) or 1
            self._create_topic(sink.topic, partitions, sink.replicas)
        query_id = f"{'CSAS' if s.kind is st.SourceKind.STREAM else 'CTAS'}_{s.name}_{seq}"
        self.sources[s.name] = sink
        self._materialize(sink, s.query.window)
        self._start(
            query_id, text=s.text, plan=plan, frame=frame, sink=sink, sources=sources, join=join
        )
        message = f"Created query with ID {query_id}"
        return entities.current_status(s.text, _command_id(s), message, seq, query_id)

    def _insert_into(
        self, s: st.InsertInto, props: Mapping[str, Any], seq: int, run: bool
    ) -> Json | None:
        target = self.sources.get(s.target)
        if target is None:
            raise SqlSemanticError(f"{s.target} does not exist.")
        if target.kind is not st.SourceKind.STREAM:
            raise SqlSemanticError(
                f"INSERT INTO can only be used to insert into a stream. {s.target} is a table."
            )
        sources, plan, join = self._plan(s.query, props)
        got = [(c.name, c.type, c.key) for c in plan.columns]
        if got != [(c.name, c.type, c.key) for c in target.columns] or plan.aggregate:
            raise SqlSemanticError(
                "Incompatible schema between results and sink. Result schema is "
                f"{_schema_text(plan)}, but the sink schema is {_schema_text(target)}."
            )
        frame = sink_frame(plan, target)
        if not run:
            return None
        query_id = f"INSERTQUERY_{seq}"
        self._start(
            query_id, text=s.text, plan=plan, frame=frame, sink=target, sources=sources, join=join
        )
        message = f"Created query with ID {query_id}"
        return entities.current_status(s.text, _command_id(s), message, seq, query_id)

    def _start(
        self,
        query_id: str,
        *,
        text: str,
        plan: Plan,
        frame: DataFrame,
        sink: DataSource,
        sources: Mapping[str, DataSource],
        join: JoinQuery | None,
    ) -> None:
        # keyed records go to the partition Java's producers (and ksqlDB) would pick: murmur2
        given = {**self.settings.spark_options(), "kafka.partitioner": "murmur2_random"}
        options: dict[str, Any] = {name.replace(".", "_"): value for name, value in given.items()}
        if "timestamp" in frame.columns:  # each record's ROWTIME, as ksqlDB writes it
            options["includeTimestamp"] = "true"
        checkpoint = str(self.settings.checkpoint(query_id))

        def start() -> StreamingQuery:
            if join is not None:
                return self._start_join(join, checkpoint, sink, given)
            if HAVING in frame.columns:
                return self._start_having(frame, checkpoint, sink, options)
            return write_stream(
                frame,
                checkpoint=checkpoint,
                topic=sink.topic,
                output_mode="update" if plan.aggregate and not plan.final else "append",
                exactly_once=True,
                **options,
            )

        query = PersistentQuery(
            query_id, text, sink.name, sink.topic, tuple(s.name for s in sources.values()), start
        )
        self.queries[query_id] = query
        query.own(self.owners.owns(query_id))

    def _start_join(
        self, join: JoinQuery, checkpoint: str, sink: DataSource, options: Mapping[str, str]
    ) -> StreamingQuery:
        """A join's query: each micro-batch joined with the table read then, written exactly
        once (the batch write runs inside the micro-batch, as `write_stream`'s)."""
        spark = self.spark
        written = {**options, "topic": sink.topic, "exactlyOnce": "true"}

        def write_batch(batch: DataFrame, _batch_id: int) -> None:
            out = sink_frame(join.plan(spark, batch), sink)
            out.write.format("strom").options(**written).mode("append").save()

        stream = join.stream(spark).writeStream.option("checkpointLocation", checkpoint)
        return stream.foreachBatch(guarded(write_batch)).start()

    @staticmethod
    def _start_having(
        frame: DataFrame, checkpoint: str, sink: DataSource, options: Mapping[str, str]
    ) -> StreamingQuery:
        """An aggregate with a HAVING: its rows that pass, and tombstones for the keys whose
        rows stop passing (`having`), written exactly once per micro-batch."""
        written = {
            **{name.replace("_", "."): value for name, value in options.items()},
            "topic": sink.topic,
            "exactlyOnce": "true",
        }

        def write(out: DataFrame) -> None:
            out.write.format("strom").options(**written).mode("append").save()

        batches = having_batches(Path(checkpoint) / "having-keys", write)
        stream = frame.writeStream.outputMode("update").option("checkpointLocation", checkpoint)
        return stream.foreachBatch(guarded(batches)).start()

    def _drop(self, s: st.DropSource, seq: int, run: bool) -> Json | None:
        source = self.sources.get(s.name)
        if source is None:
            if s.if_exists:
                return entities.current_status(
                    s.text, _command_id(s), f"Source `{s.name}` does not exist.", seq
                )
            raise SqlSemanticError(f"Source {s.name} does not exist.")
        readers = sorted(q.id for q in self.queries.values() if s.name in q.sources)
        writers = sorted(q.id for q in self.queries.values() if q.sink == s.name)
        if readers or writers:
            raise SqlSemanticError(
                f"Cannot drop {s.name}.\nThe following queries read from this source: "
                f"[{', '.join(readers)}].\nThe following queries write into this source: "
                f"[{', '.join(writers)}].\nYou need to terminate them before dropping "
                f"{s.name}."
            )
        if not run:
            return None
        del self.sources[s.name]
        if (state := self.tables.pop(s.name, None)) is not None:
            state.stop()
        if s.delete_topic:
            self._admin.delete_topics([source.topic])[source.topic].result(self.settings.timeout)
        message = f"Source `{s.name}` (topic: {source.topic}) was dropped."
        return entities.current_status(s.text, _command_id(s), message, seq)

    def _terminate(self, s: st.Terminate, seq: int, run: bool) -> Json | None:
        ids = [s.query_id] if s.query_id is not None else list(self.queries)
        for query_id in ids:
            if query_id not in self.queries:
                raise SqlSemanticError(f"Unknown queryId: {query_id}")
        if not run:
            return None
        for query_id in ids:
            self.queries.pop(query_id).own(False)
            shutil.rmtree(self.settings.checkpoint(query_id), ignore_errors=True)
        return entities.current_status(s.text, _command_id(s), "Query terminated.", seq)

    def _insert_values(self, s: st.InsertValues) -> Json | None:
        with self._lock:
            target = self.sources.get(s.target)
        if target is None:
            raise SqlSemanticError(f"{s.target} does not exist.")
        key, value, timestamp = encode_insert(target, s)
        producer = Producer({**self._client, "enable.idempotence": True})
        failures: list[str] = []
        producer.produce(
            target.topic,
            value,
            key,
            timestamp=timestamp or 0,
            on_delivery=lambda error, _: failures.append(str(error)) if error else None,
        )
        if producer.flush(self.settings.timeout) or failures:
            raise SqlSemanticError(
                f"Failed to insert values into '{s.target}'. "
                + (failures[0] if failures else "timed out")
            )
        return None

    # statements that only read

    def _describe(self, s: st.Statement, props: Mapping[str, Any]) -> Json:
        match s:
            case st.ListStatement(st.ListSubject.STREAMS):
                return entities.sources(s.text, st.SourceKind.STREAM, self.sources.values())
            case st.ListStatement(st.ListSubject.TABLES):
                return entities.sources(s.text, st.SourceKind.TABLE, self.sources.values())
            case st.ListStatement(st.ListSubject.QUERIES):
                return entities.queries(s.text, [q.entry() for q in self.queries.values()])
            case st.ListStatement(st.ListSubject.PROPERTIES):
                values = {**self.settings.values, **{k: str(v) for k, v in props.items()}}
                return entities.properties(s.text, values, props)
            case st.ListStatement(st.ListSubject.FUNCTIONS):
                return entities.function_list(s.text)
            case st.ListStatement(st.ListSubject.TOPICS, _, every):
                topics = self._admin.list_topics(timeout=self.settings.timeout).topics
                found = {
                    name: [len(p.replicas) for _, p in sorted(t.partitions.items())]
                    for name, t in topics.items()
                    if every or not name.startswith("_")
                }
                return entities.topics(s.text, found)
            case st.Describe(name, extended):
                source = self.sources.get(name)
                if source is None:
                    raise SqlSemanticError(f"Could not find STREAM/TABLE '{name}' in the Metastore")
                queries = self.queries.values()
                topic = self._admin.list_topics(timeout=self.settings.timeout).topics.get(
                    source.topic
                )
                partitions = list(topic.partitions.values()) if topic is not None else []
                return entities.source_description(
                    s.text,
                    source,
                    read_queries=[q.entry() for q in queries if name in q.sources],
                    write_queries=[q.entry() for q in queries if q.sink == name],
                    partitions=len(partitions),
                    replication=len(partitions[0].replicas) if partitions else 0,
                    extended=extended,
                )
            case st.Explain(None, query_id) if query_id is not None:
                return self._explain_query(s.text, query_id)
            case st.Explain(statement) if statement is not None:
                return self._explain_statement(s.text, statement, props)
            case st.DescribeFunction(name):
                if name not in FUNCTIONS:
                    raise SqlSemanticError(f"Can't find any functions with the name '{name}'")
                return entities.describe_function(s.text, name)
        raise SqlSemanticError(f"{type(s).__name__} statements are not supported yet.")

    def _explain_query(self, text: str, query_id: str) -> Json:
        query = self.queries.get(query_id)
        if query is None:
            raise SqlSemanticError(
                f"Query with id:{query_id} does not exist, use SHOW QUERIES "
                "to view the full set of running queries."
            )
        sink = self.sources.get(query.sink)
        if query.run is None:
            plan = physical = "Runs on another server of the service: EXPLAIN it there."
        else:
            running = query.run.query._jsq  # its plans: PySpark only prints them
            plan, physical = running.explainInternal(True), running.explainInternal(False)
        return entities.query_description(
            text,
            query_id,
            statement=query.statement,
            columns=sink.columns if sink is not None else (),
            sources=query.sources,
            sinks=[query.sink],
            plan=str(plan),
            physical_plan=str(physical),
            state=query.state,
            kind="PERSISTENT",
            overridden={},
            error=query.run.error if query.run is not None and query.state == "ERROR" else "",
        )

    def _explain_statement(self, text: str, s: st.Statement, props: Mapping[str, Any]) -> Json:
        """What a query statement would run, planned and not started."""
        match s:
            case (
                st.QueryStatement(query)
                | st.CreateAsSelect(query=query)
                | st.InsertInto(query=query)
            ):
                pass
            case _:
                raise SqlSemanticError(
                    "EXPLAIN takes a query: SELECT, CREATE ... AS SELECT or "
                    "INSERT INTO ... SELECT, or a query id."
                )
        sources, plan, _join = self._plan(query, props)
        execution = plan.frame._jdf.queryExecution()  # PySpark only prints its plans
        jvm = self.spark._jvm
        assert jvm is not None  # a classic (not Connect) session, as the engine's
        explain = jvm.PythonSQLUtils.explainString
        sinks = [s.name] if isinstance(s, st.CreateAsSelect) else []
        if isinstance(s, st.InsertInto):
            sinks = [s.target]
        return entities.query_description(
            text,
            "",
            statement=re.sub(r"^\s*EXPLAIN\s+", "", text, count=1, flags=re.IGNORECASE),
            columns=plan.columns,
            sources=[source.name for source in sources.values()],
            sinks=sinks,
            plan=str(explain(execution, "extended")),
            physical_plan=str(explain(execution, "simple")),
            state=None,
            kind="PERSISTENT" if sinks else "PUSH" if query.emit is st.Emit.CHANGES else "PULL",
            overridden=dict(props),
        )

    # push queries

    def start_query(
        self, text: str, properties: Mapping[str, Any]
    ) -> PushQuery | PullQuery | TopicPrint:
        """Start the query of `text`: a push query (`SELECT ... EMIT CHANGES`, a transient
        Spark query), a pull query (a table's current rows) or a PRINT (a topic's records)."""
        try:
            s = parse_statement(text)
        except SqlError as error:
            raise StatementError(entities.BAD_STATEMENT, str(error), text) from None
        if isinstance(s, st.PrintTopic):
            return self._print(s)
        if not isinstance(s, st.QueryStatement):
            raise StatementError(
                entities.BAD_STATEMENT,
                "The query endpoints take SELECT statements only; use /ksql for others.",
                text,
            )
        try:
            with self._lock:
                if s.query.emit is not st.Emit.CHANGES:
                    return self._pull(s.query, properties)
                sources, plan, join = self._plan(s.query, properties)
                source = next(iter(sources.values()))
                checkpoint = tempfile.mkdtemp(prefix="strom-sql-push-")
                joined = (self.spark, join) if join is not None else None
                push = PushQuery(source.name, plan, s.query.limit, checkpoint, joined)
                self.push_queries[push.id] = push
        except SqlError as error:
            raise StatementError(entities.BAD_STATEMENT, str(error), text) from None
        return push

    def _print(self, s: st.PrintTopic) -> TopicPrint:
        topics = self._admin.list_topics(timeout=self.settings.timeout).topics
        topic = topic_named(s.topic, set(topics))
        if topic is None:
            raise StatementError(
                entities.BAD_STATEMENT,
                f"Could not find topic '{s.topic}', or the KSQL user does not have permissions to "
                "list the topic. Topic names are case-sensitive.",
                s.text,
            )
        return TopicPrint(s, topic, len(topics[topic].partitions), self._client)

    def _pull(self, query: st.Query, properties: Mapping[str, Any]) -> PullQuery:
        if isinstance(query.from_, st.Join):
            raise SqlSemanticError("Pull queries don't support JOIN clauses.")
        source = self._source_of(query)
        if source.kind is not st.SourceKind.TABLE:
            raise SqlSemanticError(
                f"Pull queries read tables; {source.name} is a stream: add EMIT CHANGES for a "
                "push query."
            )
        state = self.tables.get(source.name)
        if state is None:
            raise not_queryable(source.name)
        scan = properties.get(TABLE_SCAN, self.settings.values.get(TABLE_SCAN, "true"))
        return PullQuery(state, query, table_scan=str(scan).strip().lower() == "true")

    def close_push_query(self, query_id: str) -> bool:
        with self._lock:
            push = self.push_queries.pop(query_id, None)
        if push is not None:
            push.close()
        return push is not None


def _schema_text(source: DataSource | Plan) -> str:
    return ", ".join(
        f"`{c.name}` {format_type(c.type) if c.type else 'NULL'}" + (" KEY" if c.key else "")
        for c in source.columns
    )
