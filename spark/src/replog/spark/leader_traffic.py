"""Records joined with topology: what each partition leader serves, per broker.

    replog-spark traffic --bootstrap 127.0.0.1:9092 --subscribe orders,payments --gateway 127.0.0.1:9090 [--out DIR]
                         [--tls-ca-file FILE --tls-cert-file FILE --tls-key-file FILE | --insecure]

Reads the subscribed topics' records with the ``replog`` records source (batch, earliest to the
high watermark) and the live partitions table through the gateway, and joins them on
(topic, partition): per partition, its leader, its records and bytes (key + value + header
bytes, what a consumer reading from that leader is served); per broker, the sum over the
partitions it leads and its share of all bytes. A broker leading more than its share is the one
consumers load. ``leader_traffic`` and ``broker_traffic`` are DataFrame -> DataFrame; only
``run`` reads and writes.
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def record_bytes(records: DataFrame) -> DataFrame:
    """Per topic partition: records and bytes (keys, values, header keys and values)."""
    header_bytes = F.aggregate(F.col("headers"), F.lit(0).cast("long"),
                               lambda acc, h: acc + F.coalesce(F.length(h["key"]), F.lit(0))
                               + F.coalesce(F.length(h["value"]), F.lit(0)))
    size = F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0)) + header_bytes
    return records.groupBy("topic", "partition").agg(F.count("*").alias("records"),
                                                     F.sum(size).cast("long").alias("bytes"))


def leader_traffic(records: DataFrame, partitions: DataFrame) -> DataFrame:
    """Per topic partition read: its leader, records and bytes (a partition without records: 0)."""
    counted = record_bytes(records)
    led = partitions.select("topic", "partition", "leader")
    return (led.join(counted, ["topic", "partition"], "inner")
            .select("topic", "partition", "leader", "records", "bytes"))


def broker_traffic(per_partition: DataFrame) -> DataFrame:
    total = per_partition.agg(F.sum("bytes").alias("all_bytes"))
    return (per_partition.groupBy(F.col("leader").alias("broker_id"))
            .agg(F.count("*").alias("partitions_led"), F.sum("records").alias("records"),
                 F.sum("bytes").alias("bytes"))
            .crossJoin(total)
            .withColumn("bytes_share", F.when(F.col("all_bytes") > 0, F.col("bytes") / F.col("all_bytes")))
            .drop("all_bytes")
            .orderBy(F.desc("bytes"), "broker_id"))


# --- entry point -----------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", required=True, metavar="HOST:PORT[,...]", help="broker addresses")
    parser.add_argument("--subscribe", required=True, metavar="TOPIC[,...]", help="topics whose records to read")
    parser.add_argument("--gateway", required=True, metavar="HOST:PORT", help="the gateway, for the partitions table")
    parser.add_argument("--out", metavar="DIR", help="write per_partition and per_broker tables here "
                                                    "(a local path or a Hadoop URI)")
    parser.add_argument("--show", type=int, default=20, metavar="N", help="rows to print (default 20)")
    from replog.spark import inputs

    inputs.add_tls_arguments(parser)  # for the brokers and the gateway alike


def check_inputs(args) -> None:
    from replog.spark import inputs

    inputs.check_tls_arguments(args)


def run(spark, args) -> int:
    from replog.spark import inputs, outputs, printing
    from replog.spark.report import write_table

    tls = inputs.tls_options(args)
    records = (spark.read.format("replog").option("bootstrap.servers", args.bootstrap)
               .option("subscribe", args.subscribe).options(**tls).load())
    topology = inputs.read_gateway(spark, args.gateway, tls=tls)
    per_partition = leader_traffic(records, topology.partitions).cache()
    per_broker = broker_traffic(per_partition).cache()
    print(printing.table("Bytes served per broker (as partition leader)",
                         [r.asDict() for r in per_broker.limit(args.show).collect()]))
    print()
    print(printing.table("Partitions (most bytes first)",
                         [r.asDict() for r in per_partition.orderBy(F.desc("bytes")).limit(args.show).collect()]))
    if args.out:
        outputs.make_dirs(spark, args.out)
        write_table(per_partition, args.out, "per_partition", "both")
        write_table(per_broker, args.out, "per_broker", "both")
        print(f"\nWrote per_partition and per_broker to {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from replog.spark.main import run_job

    return run_job("traffic", argv)


if __name__ == "__main__":
    sys.exit(main())
