"""Topology report: load per broker and per topic, skew and rack diversity for the cluster.

Definitions (every figure is computed from the export's brokers and partitions):

* A broker's **leaders** are the partitions whose ``leader`` is it; its **replicas**
  the partitions whose ``replicas`` list it; its **bytes** the sum of
  ``size_bytes`` over those replicas (each replica holds about what its leader
  holds; null when the export has no sizes, i.e. was taken without --log-stats).
* **Preferred-leader share** of a broker: of the partitions whose preferred
  (first) replica it is, the fraction it actually leads (null when none).
* The brokers counted are those in the brokers table: every registered broker
  and every broker an assignment names, so an empty new broker and a dead one
  still holding replicas both count.
* **Leader skew** = max / mean leaders per broker; **replica skew** likewise
  (1.0 is perfect balance; null when there is nothing to share).
* **Rack-diversity violation**: a partition whose replicas span fewer distinct
  racks than min(replication factor, racks in the cluster). A replica on a
  broker without a rack spans no rack. With no racks at all nothing violates.
* **Non-preferred leader**: a partition with a leader (not -1) that is not its
  preferred replica.
* **Group lag** (when the export has group offsets, ``replog export --groups``): per
  consumer group, the sum and the largest of ``lag`` over its committed partitions,
  as ``replog groups describe`` shows them; partitions whose log end is unknown are
  counted in ``lag_unknown`` only.

The rack of each replica comes from a broker -> rack map built from the brokers
table (collected: thousands of rows at most) and applied with ``transform``, so
rack diversity needs no join and no shuffle of the exploded replicas.

Reading and writing happen in ``main()``; everything above it is
``DataFrame -> DataFrame`` and runs on tiny frames in the tests.
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

# --- pure DataFrame -> DataFrame functions -------------------------------------------


def rack_map(brokers: DataFrame) -> tuple[object, int]:
    """(a map<int,string> column broker id -> rack, the number of distinct racks), from one
    small collect of the brokers table."""
    rows = brokers.where(F.col("rack").isNotNull() & (F.col("rack") != "")).select("broker_id", "rack").collect()
    if not rows:
        return F.create_map().cast("map<int,string>"), 0
    column = F.map_from_arrays(F.array([F.lit(r.broker_id) for r in rows]).cast("array<int>"),
                               F.array([F.lit(r.rack) for r in rows]))
    return column, len({r.rack for r in rows})


FLAGGED_COLUMNS = ("topic", "partition", "leader", "replicas", "preferred_leader", "under_replicated",
                   "unavailable", "under_min_isr")


def partition_flags(brokers: DataFrame, partitions: DataFrame) -> DataFrame:
    """The partitions (only the columns the report reads) with replication_factor, racks_spanned,
    rack_violation, non_preferred_leader and known_bytes (size_bytes, null when unknown)."""
    racks, racks_in_cluster = rack_map(brokers)
    replica_racks = F.array_distinct(F.filter(F.transform("replicas", lambda r: F.element_at(racks, r)),
                                              lambda rack: rack.isNotNull()))
    rf = F.size("replicas")
    spanned = F.size(replica_racks)
    return partitions.select(
        *FLAGGED_COLUMNS,
        rf.alias("replication_factor"),
        spanned.alias("racks_spanned"),
        (spanned < F.least(rf, F.lit(racks_in_cluster))).alias("rack_violation"),
        ((F.col("leader") != -1) & (F.col("leader") != F.col("preferred_leader"))).alias("non_preferred_leader"),
        F.when(F.col("size_bytes") >= 0, F.col("size_bytes")).alias("known_bytes"),
    )


def broker_report(brokers: DataFrame, flagged: DataFrame) -> DataFrame:
    """One row per broker: rack, alive, leaders, replicas, preferred leaders, share, bytes."""
    replicas = flagged.select("leader", "known_bytes", F.posexplode("replicas").alias("position", "broker_id"))
    load = replicas.groupBy("broker_id").agg(
        F.count("*").alias("replicas"),
        F.count(F.when(F.col("broker_id") == F.col("leader"), 1)).alias("leaders"),
        F.count(F.when(F.col("position") == 0, 1)).alias("preferred_leaders"),
        F.count(F.when((F.col("position") == 0) & (F.col("broker_id") == F.col("leader")), 1))
        .alias("preferred_leading"),
        F.sum("known_bytes").alias("bytes"),
    )
    known = brokers.select("broker_id", "rack", "alive")
    joined = known.join(load, "broker_id", "full_outer")
    zero = F.lit(0).cast("bigint")
    return (joined.select(
        "broker_id", "rack", F.coalesce("alive", F.lit(False)).alias("alive"),
        F.coalesce("leaders", zero).alias("leaders"),
        F.coalesce("replicas", zero).alias("replicas"),
        F.coalesce("preferred_leaders", zero).alias("preferred_leaders"),
        F.when(F.col("preferred_leaders") > 0, F.col("preferred_leading") / F.col("preferred_leaders"))
        .alias("preferred_leader_share"),
        "bytes",
    ).orderBy("broker_id"))


def topic_report(flagged: DataFrame) -> DataFrame:
    """One row per topic: partitions, replication factor, health counts, bytes."""
    def count_of(flag: str):
        return F.count(F.when(F.col(flag), 1)).alias(flag)

    return (flagged.groupBy("topic").agg(
        F.count("*").alias("partitions"),
        F.max("replication_factor").alias("replication_factor"),
        F.min("replication_factor").alias("replication_factor_min"),
        F.sum("replication_factor").alias("replicas"),
        count_of("under_replicated"),
        F.count(F.when(F.col("unavailable"), 1)).alias("offline"),
        count_of("under_min_isr"),
        F.count(F.when(F.col("rack_violation"), 1)).alias("rack_violations"),
        F.count(F.when(F.col("non_preferred_leader"), 1)).alias("non_preferred_leaders"),
        F.sum("known_bytes").alias("bytes"),
    ).orderBy("topic"))


def cluster_report(broker_table: DataFrame, topic_table: DataFrame) -> DataFrame:
    """One row: counts, skews, violations, from broker_report's and topic_report's small tables
    (per-topic counts add up to the cluster's, so the partitions are not read again)."""
    per_broker = broker_table.agg(
        F.count("*").alias("brokers"),
        F.count(F.when(F.col("alive"), 1)).alias("alive_brokers"),
        F.countDistinct("rack").alias("racks"),
        F.max("leaders").alias("leaders_max"), F.avg("leaders").alias("leaders_mean"),
        F.max("replicas").alias("replicas_max"), F.avg("replicas").alias("replicas_mean"),
        F.max("bytes").alias("bytes_max"), F.avg(F.coalesce("bytes", F.lit(0))).alias("bytes_mean"),
    )
    zero = F.lit(0).cast("bigint")
    per_topic = topic_table.agg(
        F.count("*").alias("topics"),
        *[F.coalesce(F.sum(c), zero).alias(c) for c in (
            "partitions", "replicas", "under_replicated", "offline", "under_min_isr", "rack_violations",
            "non_preferred_leaders")],
        F.sum("bytes").alias("bytes"),
    )

    def skew(max_col: str, mean_col: str):
        return F.when(F.col(mean_col) > 0, F.col(max_col) / F.col(mean_col))

    return per_broker.crossJoin(per_topic).select(
        "brokers", "alive_brokers", "racks", "topics", "partitions", "replicas",
        skew("leaders_max", "leaders_mean").alias("leader_skew"),
        skew("replicas_max", "replicas_mean").alias("replica_skew"),
        skew("bytes_max", "bytes_mean").alias("bytes_skew"),
        "leaders_max", "leaders_mean", "replicas_max", "replicas_mean",
        "rack_violations", "non_preferred_leaders", "under_replicated", "offline", "under_min_isr", "bytes",
    )


def violations(flagged: DataFrame) -> DataFrame:
    """The partitions that break rack diversity, for the operator to look at."""
    return (flagged.where("rack_violation")
            .select("topic", "partition", "replicas", "racks_spanned", "replication_factor")
            .orderBy("topic", "partition"))


def group_lag(group_offsets: DataFrame) -> DataFrame:
    """One row per group: partitions committed, total lag and the largest lag of one partition (a partition
    whose log end is unknown, lag -1, counts toward neither), most lag first."""
    known = F.when(F.col("lag") >= 0, F.col("lag"))
    return (group_offsets.groupBy("group")
            .agg(F.count("*").alias("partitions"), F.coalesce(F.sum(known), F.lit(0)).alias("lag"),
                 F.coalesce(F.max(known), F.lit(0)).alias("lag_max"),
                 F.sum(F.when(F.col("lag") < 0, 1).otherwise(0)).alias("lag_unknown"))
            .orderBy(F.desc("lag"), "group"))


def report(brokers: DataFrame, partitions: DataFrame) -> dict[str, DataFrame]:
    """Every table of the report. Cached: the flagged partitions (three tables read them) and
    each result (printed, then written as Parquet and CSV)."""
    flagged = partition_flags(brokers, partitions).cache()
    per_broker = broker_report(brokers, flagged).cache()
    per_topic = topic_report(flagged).cache()
    return {
        "cluster": cluster_report(per_broker, per_topic).cache(),
        "brokers": per_broker,
        "topics": per_topic,
        "rack_violations": violations(flagged).cache(),
    }


# --- entry point: reading, writing, printing --------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--export", metavar="DIR", help="a topology export directory (replog export --out DIR)")
    source.add_argument("--gateway", metavar="HOST:PORT", help="read the live cluster through the gateway instead")
    parser.add_argument("--out", metavar="DIR", help="write the tables and PNG charts here (a local path or a "
                                                    "Hadoop URI: s3a://, hdfs://, file://)")
    parser.add_argument("--format", choices=["parquet", "csv", "both"], default="both",
                        help="table format under --out (default: both)")
    parser.add_argument("--show", type=int, default=20, metavar="N", help="rows of each table to print (default 20)")
    from replog.spark import inputs

    inputs.add_tls_arguments(parser)  # for --gateway


def check_inputs(args) -> None:
    from replog.spark import inputs

    inputs.check_tls_arguments(args, calls_cluster=args.gateway is not None)
    if args.export:
        inputs.export_files(args.export)


def run(spark, args) -> int:
    from replog.spark import charts, inputs, outputs, printing

    topology = inputs.load(spark, export_dir=args.export, gateway=args.gateway, tls=inputs.tls_options(args))
    tables = report(topology.brokers, topology.partitions)
    if topology.group_offsets is not None:
        tables["group_lag"] = group_lag(topology.group_offsets).cache()
    cluster = tables["cluster"].first().asDict()
    brokers = [r.asDict() for r in tables["brokers"].collect()]
    print(printing.key_values(f"Cluster ({topology.origin})", cluster))
    print()
    print(printing.table("Brokers (most leaders first)",
                         sorted(brokers, key=lambda b: (-b["leaders"], b["broker_id"]))[:args.show]))
    topics = tables["topics"]
    print()
    print(printing.table("Topics (most problems first)", [r.asDict() for r in topics.orderBy(
        F.desc(F.col("offline") + F.col("under_replicated") + F.col("rack_violations")), "topic").limit(args.show)
        .collect()]))
    if "group_lag" in tables:
        print()
        print(printing.table("Consumer groups (most lag first)",
                             [r.asDict() for r in tables["group_lag"].limit(args.show).collect()]))
    if args.out:
        out = args.out
        outputs.make_dirs(spark, out)
        for name, frame in tables.items():
            write_table(frame, out, name, args.format)
        with outputs.LocalFile(spark, outputs.join(out, "leaders_replicas_per_broker.png")) as png:
            charts.broker_load(brokers, png)
        with outputs.LocalFile(spark, outputs.join(out, "bytes_per_broker.png")) as png:
            charts.broker_bytes(brokers, png)
        print(f"\nWrote {', '.join(tables)} ({args.format}) and 2 PNG charts to {out}")
    return 0


def write_table(frame: DataFrame, out: str, name: str, fmt: str) -> None:
    """Small tables (one row per broker, topic or violation) as one file each, under a local path or any
    Hadoop URI (outputs.py)."""
    from replog.spark.outputs import join

    single = frame.coalesce(1)
    if fmt in ("parquet", "both"):
        single.write.mode("overwrite").parquet(join(out, f"{name}.parquet"))
    if fmt in ("csv", "both"):
        # CSV has no lists: a replica list becomes "1 2 3".
        flat = single.select([F.concat_ws(" ", F.col(f.name).cast("array<string>")).alias(f.name)
                              if f.dataType.simpleString().startswith("array") else F.col(f.name)
                              for f in frame.schema.fields])
        flat.write.mode("overwrite").option("header", True).csv(join(out, f"{name}.csv"))


def main(argv: list[str] | None = None) -> int:
    from replog.spark.main import run_job

    return run_job("report", argv)


if __name__ == "__main__":
    sys.exit(main())
