"""Streaming word count: lines of text from a topic, a running count per word.

Prints the counts after each micro-batch, or with ``--output`` writes them to a topic (key the
word, value its count as text; each micro-batch writes the words whose count changed, so the
last record of a word is its count).

    .venv/bin/python examples/word_count.py --seed --once
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from strom_example import ensure_topics, parser, produce, run, session, source_options

from strom.spark import decode_value

DEMO_LINES = (
    "a log is an append only sequence of records",
    "a topic is a log cut into partitions",
    "a consumer reads a partition from an offset",
    "records keep their order within a partition",
)


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__.splitlines()[0], input_topic="lines", output_topic=None)
    args = cli.parse_args(argv)
    ensure_topics(args.bootstrap, [args.input] + ([args.output] if args.output else []))
    if args.seed:
        produce(args.bootstrap, args.input, ((None, line.encode()) for line in DEMO_LINES))

    spark = session("word-count", args.master, args.conf)
    lines = spark.readStream.format("strom").options(**source_options(args)).load()
    words = lines.select(
        F.explode(F.split(F.lower(decode_value(lines.value, "string")), r"[^a-z0-9']+")).alias(
            "word"
        )
    ).where(F.col("word") != "")
    counts = words.groupBy("word").count()

    if args.output:
        # Spark refuses update mode for Python sinks (append and complete only), so the
        # changed counts of each micro-batch go to the topic through a batch write.
        output: str = args.output

        def write_counts(batch: DataFrame, batch_id: int) -> None:
            (
                batch.select(
                    F.col("word").alias("key"), F.col("count").cast("string").alias("value")
                )
                .write.format("strom")
                .option("kafka.bootstrap.servers", args.bootstrap)
                .option("topic", output)
                .mode("append")
                .save()
            )

        writer = counts.writeStream.outputMode("update").foreachBatch(write_counts)
    else:
        writer = (
            counts.orderBy(F.desc("count"), "word")
            .writeStream.format("console")
            .option("numRows", 1000)
            .option("truncate", "false")
            .outputMode("complete")
        )
    run(writer, args)


if __name__ == "__main__":
    main()
