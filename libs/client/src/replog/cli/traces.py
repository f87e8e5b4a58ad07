"""`replog trace failovers|show`: read the JSON-lines span files of a cluster.

Every service writes its finished spans to `<trace_dir>/<service>-<instance>.jsonl`
(replog.common.telemetry). A failover is one trace whose root is a controller
event span (`controller.broker_change`, `controller.controlled_shutdown`,
`controller.failover`, ...); the brokers' spans join it across processes
through the W3C trace context carried in gRPC metadata.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.text import Text

from replog.cli.output import CliError, emit

FAILOVER_ROOTS = {
    "controller.broker_change": "broker change",
    "controller.controlled_shutdown": "controlled shutdown",
    "controller.failover": "controller failover",
    "controller.reassignment": "reassignment",
    "controller.preferred_election": "preferred election",
    "controller.unclean_election": "unclean election",
}


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    service: str
    instance: str
    start_ns: int
    end_ns: int
    attributes: dict
    status: str = "UNSET"  # ERROR when the span's work failed (its `error.type` attribute says how)
    children: list["Span"] = field(default_factory=list)

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


def default_trace_dir() -> Path:
    if os.environ.get("REPLOG_TRACE_DIR"):
        return Path(os.environ["REPLOG_TRACE_DIR"])
    return Path(os.environ.get("REPLOG_STATE_DIR", ".state")) / "traces"


def read_spans(trace_dir: Path) -> list[Span]:
    if not trace_dir.is_dir():
        raise CliError(f"no trace directory at {trace_dir} (use --trace-dir, or start the local cluster)")
    spans: list[Span] = []
    for path in sorted(trace_dir.glob("*.jsonl")):
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    raw = json.loads(line)
                    resource = raw.get("resource", {})
                    spans.append(Span(
                        raw["trace_id"], raw["span_id"], raw.get("parent_span_id"), raw["name"],
                        resource.get("service.name", "?"), str(resource.get("service.instance.id", "?")),
                        int(raw["start_ns"]), int(raw["end_ns"]), raw.get("attributes", {}),
                        str(raw.get("status", "UNSET")),
                    ))
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line of a running process
    return spans


def build_trees(spans: list[Span]) -> dict[str, list[Span]]:
    """Root spans per trace id, children linked and ordered by start."""
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    for span in spans:
        span.children = []
    roots: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        parent = by_id.get((span.trace_id, span.parent_span_id)) if span.parent_span_id else None
        if parent is None:
            roots[span.trace_id].append(span)
        else:
            parent.children.append(span)
    for span in spans:
        span.children.sort(key=lambda s: s.start_ns)
    return roots


def _walk(span: Span, depth: int = 0):
    yield span, depth
    for child in span.children:
        yield from _walk(child, depth + 1)


def failovers(spans: list[Span]) -> list[dict]:
    rows = []
    for trace_id, roots in build_trees(spans).items():
        root = next((r for r in roots if r.name in FAILOVER_ROOTS), None)
        if root is None:
            continue
        members = [s for r in roots for s, _ in _walk(r)]
        end_ns = max(s.end_ns for s in members)
        brokers = root.attributes.get("brokers.dead") or root.attributes.get("broker.id")
        if isinstance(brokers, int):
            brokers = [brokers]
        became_leader = [s for s in members if s.name == "broker.become_leader"]
        rows.append({
            "trace_id": trace_id,
            "kind": FAILOVER_ROOTS[root.name],
            "started_at_ms": root.start_ns // 1_000_000,
            "brokers": list(brokers or []),
            "partitions_moved": root.attributes.get("leader_elections", root.attributes.get("partitions.affected", 0)),
            "controller_epoch": root.attributes.get("controller.epoch"),
            "duration_ms": round((end_ns - root.start_ns) / 1e6, 1),
            "brokers_reporting": sorted({s.instance for s in became_leader}),
            "spans": len(members),
        })
    rows.sort(key=lambda r: r["started_at_ms"], reverse=True)
    return rows


def add_parser(sub) -> None:
    trace = sub.add_parser("trace", help="failovers and span waterfalls from the trace files")
    trace.add_argument("--trace-dir", type=Path, help="span files (default: $REPLOG_TRACE_DIR or .state/traces)")
    verbs = trace.add_subparsers(dest="verb", required=True)
    listing = verbs.add_parser("failovers", help="recent failovers: when, which broker, partitions moved, duration")
    listing.add_argument("--limit", type=int, default=20)
    show = verbs.add_parser("show", help="draw one trace as a waterfall")
    show.add_argument("trace_id")
    trace.set_defaults(run=run, needs_gateway=False)


def run(args, channel=None) -> int:
    spans = read_spans(args.trace_dir or default_trace_dir())
    if args.verb == "failovers":
        rows = failovers(spans)[: args.limit]
        import time

        table_rows = [[time.strftime("%H:%M:%S", time.localtime(r["started_at_ms"] / 1000)), r["kind"],
                       ",".join(map(str, r["brokers"])) or "-", r["partitions_moved"], f"{r['duration_ms']:.1f}",
                       ",".join(r["brokers_reporting"]) or "-", r["trace_id"]] for r in rows]
        emit(args.output, rows, ("", ["WHEN", "KIND", "BROKERS", "MOVED", "MS", "BROKERS REPORTING", "TRACE"],
                                 table_rows), lines=[] if rows else ["no failovers in the trace files"])
        return 0
    roots = build_trees(spans).get(args.trace_id)
    if not roots:
        matches = {t for t in build_trees(spans) if t.startswith(args.trace_id)}
        if len(matches) == 1:
            roots = build_trees(spans)[matches.pop()]
        else:
            raise CliError(f"no trace {args.trace_id} in the trace files" if not matches
                           else f"trace id prefix {args.trace_id} is ambiguous")
    ordered = [(s, d) for r in sorted(roots, key=lambda s: s.start_ns) for s, d in _walk(r)]
    if args.output == "json":
        print(json.dumps([{"name": s.name, "service": s.service, "instance": s.instance, "depth": d,
                           "start_ns": s.start_ns, "end_ns": s.end_ns, "duration_ms": round(s.duration_ms, 3),
                           "status": s.status, "attributes": s.attributes} for s, d in ordered],
                         indent=2, default=str))
        return 0
    draw_waterfall(ordered)
    return 0


def draw_waterfall(ordered: list[tuple[Span, int]], width: int = 50) -> None:
    console = Console(highlight=False)
    start = min(s.start_ns for s, _ in ordered)
    end = max(s.end_ns for s, _ in ordered)
    total = max(end - start, 1)
    console.print(f"trace {ordered[0][0].trace_id}: {len(ordered)} spans, {total / 1e6:.1f} ms")
    label_width = min(60, max(len("  " * d + s.name) + len(s.service) + len(s.instance) + 3 for s, d in ordered))
    for span, depth in ordered:
        label = f"{'  ' * depth}{span.name} [{span.service.removeprefix('replog-')}-{span.instance}]"
        left = int((span.start_ns - start) / total * width)
        length = max(1, int((span.end_ns - span.start_ns) / total * width))
        failed = span.status == "ERROR"
        bar = Text(" " * left)
        bar.append("█" * min(length, width - left),
                   style="red" if failed else "cyan" if span.service.endswith("controller") else "green")
        line = Text(label.ljust(label_width)[:label_width] + " ")
        line.append(bar)
        line.append(f" {span.duration_ms:8.2f} ms")
        if failed:
            line.append(f"  failed: {span.attributes.get('error.type', 'error')}", style="red")
        console.print(line)
