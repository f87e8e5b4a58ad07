"""Rebalance planner: a Kafka reassignment JSON that balances replicas and preferred leaders.

    replog-spark plan --export DIR --add-brokers 7,8,9 --racks 7:a,8:b,9:c --out plan.json
    replog reassign execute --reassignment-json-file plan.json

The target broker set is every broker in the export (registered, or named in an
assignment), plus ``--add-brokers``, minus ``--remove-brokers``; with neither
the plan just balances. A broker named by ``--add-brokers`` that is already in
the export keeps its rack unless ``--racks`` gives one.

Why the optimisation runs on the driver: the decision is a sequence of greedy
choices each depending on all earlier ones (every move changes two brokers'
loads), which does not split into independent tasks; the input is at most
about a million (topic, partition, replicas, size) rows, which Arrow collects
in a second or two and plain Python plans in seconds. So the frames go in
(``toArrow``), ``core/rebalance/`` decides (pure, unit-tested, with the lower
bound on moves), and the results come back as DataFrames; reading and writing
happen in ``main()``.

Outputs: the reassignment (only partitions whose replica list changes, also in
order: a reorder moves no data but changes the preferred leader), per-broker
before/after counts, and a one-row summary — replicas and bytes moved, the lower
bound on moves and the gap, preferred-leader changes, replica and
preferred-leader skew (max/mean over the brokers that hold or will hold
replicas) before and after, rack-diversity violations before and after.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field

from pyspark.sql import DataFrame

from replog.spark.core import rebalance

# --- what to plan ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    add: tuple[int, ...] = ()
    remove: tuple[int, ...] = ()
    racks: dict[int, str] = field(default_factory=dict)


class PlanInputError(Exception):
    pass


def parse_ids(text: str) -> tuple[int, ...]:
    try:
        ids = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected broker ids like 7,8,9, got {text!r}") from None
    if any(i < 0 for i in ids):
        raise argparse.ArgumentTypeError(f"broker ids are not negative: {text!r}")
    return ids


def parse_racks(text: str) -> dict[int, str]:
    racks = {}
    for part in (p for p in text.split(",") if p.strip()):
        broker, sep, rack = part.partition(":")
        if not sep or not rack.strip() or not broker.strip().isdigit():
            raise argparse.ArgumentTypeError(f"expected BROKER:RACK pairs like 7:a,8:b, got {part!r}")
        racks[int(broker)] = rack.strip()
    return racks


# --- DataFrame -> DataFrame --------------------------------------------------------------------

def plan_tables(brokers: DataFrame, partitions: DataFrame, change: Change) -> dict[str, DataFrame]:
    """reassignment (topic, partition, replicas), brokers (before/after) and summary (one row)."""
    spark = partitions.sparkSession
    known = {r.broker_id: (r.rack or None) for r in brokers.select("broker_id", "rack").collect()}
    rack_of, targets = target_brokers(known, change)
    table = partitions.select("topic", "partition", "replicas", "size_bytes").toArrow()
    columns = table.to_pydict()
    loads = [rebalance.PartitionLoad(t, p, tuple(r or ()), s if s is not None and s > 0 else 0)
             for t, p, r, s in zip(columns["topic"], columns["partition"], columns["replicas"], columns["size_bytes"])]
    loads = [p for p in loads if p.replicas]
    try:
        result = rebalance.plan(loads, rack_of, targets)
    except rebalance.PlanError as exc:
        raise PlanInputError(str(exc)) from None

    changed = [(p.topic, p.partition, after) for p, after in zip(loads, result.replicas) if list(p.replicas) != after]
    reassignment = spark.createDataFrame(changed, "topic string, partition int, replicas array<int>")

    before = [p.replicas for p in loads]
    per_broker = broker_rows(loads, result, known, rack_of, targets)
    summary = summary_row(loads, before, result, known, rack_of, targets, len(changed))
    broker_schema = ("broker_id int, rack string, in_target boolean, replicas_before bigint, replicas_after bigint, "
                     "replica_target bigint, preferred_leaders_before bigint, preferred_leaders_after bigint, "
                     "leader_target bigint, bytes_before bigint, bytes_after bigint")
    return {
        "reassignment": reassignment,
        "brokers": spark.createDataFrame(per_broker, broker_schema),
        "summary": spark.createDataFrame([tuple(summary[name] for name in SUMMARY_COLUMNS)], SUMMARY_SCHEMA),
    }


def target_brokers(known: dict[int, str | None], change: Change) -> tuple[dict[int, str | None], list[int]]:
    both = sorted(set(change.add) & set(change.remove))
    if both:
        raise PlanInputError(f"broker(s) {', '.join(map(str, both))} both added and removed")
    unknown = sorted(set(change.remove) - set(known))
    if unknown:
        raise PlanInputError(f"cannot remove broker(s) {', '.join(map(str, unknown))}: not in the export")
    stray = sorted(set(change.racks) - set(change.add) - set(known))
    if stray:
        raise PlanInputError(f"--racks names broker(s) {', '.join(map(str, stray))} that are neither added nor known")
    rack_of = dict(known)
    for broker in change.add:
        rack_of[broker] = change.racks.get(broker, known.get(broker))
    rack_of.update(change.racks)
    targets = sorted((set(known) | set(change.add)) - set(change.remove))
    if not targets:
        raise PlanInputError("no broker would be left")
    with_rack = [b for b in targets if rack_of.get(b)]
    if with_rack and len(with_rack) != len(targets):
        missing = sorted(set(targets) - set(with_rack))
        raise PlanInputError(f"broker(s) {', '.join(map(str, missing))} have no rack while others do "
                             f"(give every broker a rack, e.g. --racks {missing[0]}:a)")
    return rack_of, targets


SUMMARY_COLUMNS = (
    "brokers_before", "brokers_after", "partitions", "partitions_changed", "replicas_moved", "bytes_moved",
    "moves_lower_bound", "moves_over_lower_bound", "moves_over_lower_bound_pct", "moves_for_rack_diversity",
    "preferred_leader_changes", "replica_skew_before", "replica_skew_after", "preferred_leader_skew_before",
    "preferred_leader_skew_after", "rack_violations_before", "rack_violations_after", "brokers_still_over_target",
)
SUMMARY_SCHEMA = ", ".join(f"{name} {'double' if 'skew' in name or name.endswith('_pct') else 'bigint'}"
                           for name in SUMMARY_COLUMNS)


def _skew(counts: Counter, brokers) -> float | None:
    values = [counts.get(b, 0) for b in brokers]
    mean = sum(values) / len(values) if values else 0
    return max(values) / mean if mean else None


def broker_rows(loads, result, known, rack_of, targets) -> list[tuple]:
    rb, ra = Counter(), Counter()
    pb, pa = Counter(), Counter()
    bb, ba = Counter(), Counter()
    for p, after in zip(loads, result.replicas):
        for b in p.replicas:
            rb[b] += 1
            bb[b] += p.size_bytes
        for b in after:
            ra[b] += 1
            ba[b] += p.size_bytes
        pb[p.replicas[0]] += 1
        pa[after[0]] += 1
    target_set = set(targets)
    ids = sorted(set(known) | target_set | set(rb))
    return [(b, rack_of.get(b), b in target_set, rb[b], ra[b], result.replica_targets.get(b, 0), pb[b], pa[b],
             result.leader_targets.get(b, 0), bb[b], ba[b]) for b in ids]


def summary_row(loads, before, result, known, rack_of, targets, partitions_changed: int) -> dict:
    after = result.replicas
    replicas_before = Counter(b for r in before for b in r)
    replicas_after = Counter(b for r in after for b in r)
    leaders_before = Counter(r[0] for r in before)
    leaders_after = Counter(r[0] for r in after)
    brokers_before = sorted(set(targets) | set(replicas_before))
    racks_before = len({rack_of.get(b) for b in known} - {None})
    racks_after = len({rack_of.get(b) for b in targets} - {None})
    gap = result.moves - result.moves_lower_bound
    return {
        "brokers_before": len(set(known)), "brokers_after": len(targets), "partitions": len(loads),
        "partitions_changed": partitions_changed,
        "replicas_moved": result.moves, "bytes_moved": result.bytes_moved,
        "moves_lower_bound": result.moves_lower_bound, "moves_over_lower_bound": gap,
        "moves_over_lower_bound_pct": round(100.0 * gap / result.moves_lower_bound, 3)
        if result.moves_lower_bound else 0.0,
        "moves_for_rack_diversity": result.moves_for_rack_diversity,
        "preferred_leader_changes": result.preferred_leader_changes,
        "replica_skew_before": _skew(replicas_before, brokers_before),
        "replica_skew_after": _skew(replicas_after, targets),
        "preferred_leader_skew_before": _skew(leaders_before, brokers_before),
        "preferred_leader_skew_after": _skew(leaders_after, targets),
        "rack_violations_before": rebalance.rack_violations(before, {b: known.get(b) for b in known}, racks_before),
        "rack_violations_after": rebalance.rack_violations(after, rack_of, racks_after),
        "brokers_still_over_target": len(result.stuck_brokers),
    }


def reassignment_json(rows) -> dict:
    """Kafka's reassignment file: {"version":1,"partitions":[{"topic","partition","replicas"}]}."""
    return {"version": 1, "partitions": [
        {"topic": r["topic"], "partition": r["partition"], "replicas": list(r["replicas"])}
        for r in sorted(rows, key=lambda r: (r["topic"], r["partition"]))
    ]}


# --- entry point -----------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--export", metavar="DIR", help="a topology export directory (replog export --out DIR)")
    source.add_argument("--gateway", metavar="HOST:PORT", help="read the live cluster through the gateway instead")
    parser.add_argument("--add-brokers", type=parse_ids, default=(), metavar="7,8,9",
                        help="brokers to add (not yet in the export, or registered and empty)")
    parser.add_argument("--racks", type=parse_racks, default={}, metavar="7:a,8:b",
                        help="racks of the added brokers (required when the cluster uses racks)")
    parser.add_argument("--remove-brokers", type=parse_ids, default=(), metavar="3,4",
                        help="brokers to empty and leave out")
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="reassignment JSON to write (for replog reassign execute --reassignment-json-file)")
    parser.add_argument("--summary-out", metavar="FILE", help="also write the summary and per-broker table as JSON")
    parser.add_argument("--chart", metavar="PNG", help="also draw replicas and preferred leaders before/after")
    parser.add_argument("--show", type=int, default=30, metavar="N", help="broker rows to print (default 30)")
    from replog.spark import inputs

    inputs.add_tls_arguments(parser)  # for --gateway


def change_of(args) -> Change:
    return Change(tuple(args.add_brokers), tuple(args.remove_brokers), dict(args.racks))


def check_inputs(args) -> None:
    from replog.spark import inputs

    from replog.spark.main import JobError

    inputs.check_tls_arguments(args, calls_cluster=args.gateway is not None)
    if args.export:
        fmt, paths = inputs.export_files(args.export)
        # The brokers the plan would leave are known from the export's small brokers table: a change that
        # cannot be planned (a broker without a rack among racked ones, say) fails before Spark starts.
        known = inputs.export_broker_racks(fmt, paths["brokers"])
        if known is not None:
            try:
                target_brokers(known, change_of(args))
            except PlanInputError as exc:
                raise JobError(str(exc)) from None


def run(spark, args) -> int:
    from replog.spark import charts, inputs, outputs, printing
    from replog.spark.main import JobError

    topology = inputs.load(spark, export_dir=args.export, gateway=args.gateway, tls=inputs.tls_options(args))
    change = change_of(args)
    try:
        tables = plan_tables(topology.brokers, topology.partitions, change)
    except PlanInputError as exc:
        raise JobError(str(exc)) from None
    summary = tables["summary"].first().asDict()
    brokers = [r.asDict() for r in tables["brokers"].collect()]
    plan = reassignment_json([r.asDict() for r in tables["reassignment"].collect()])
    try:
        outputs.write_text(spark, args.out, json.dumps(plan) + "\n")
        if args.summary_out:
            outputs.write_text(spark, args.summary_out,
                               json.dumps({"summary": summary, "brokers": brokers}, indent=2) + "\n")
        if args.chart:
            with outputs.LocalFile(spark, args.chart) as png:
                charts.plan_balance(
                    [{"broker_id": b["broker_id"], "replicas": b["replicas_before"],
                      "preferred_leaders": b["preferred_leaders_before"]} for b in brokers],
                    [{"broker_id": b["broker_id"], "replicas": b["replicas_after"],
                      "preferred_leaders": b["preferred_leaders_after"]} for b in brokers if b["in_target"]],
                    png)
    except OSError as exc:
        raise JobError(f"cannot write {exc.filename}: {exc.strerror}" if exc.filename else str(exc)) from None
    print(printing.key_values(f"Rebalance plan ({topology.origin})", summary))
    print()
    print(printing.table("Brokers", brokers[:args.show]))
    print(f"\nWrote {len(plan['partitions'])} partition reassignment(s) to {args.out}; run it with\n"
          f"  replog reassign execute --reassignment-json-file {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from replog.spark.main import run_job

    return run_job("plan", argv)


if __name__ == "__main__":
    sys.exit(main())
